"""Which backend answers a search, chosen in one place for every search the tools run.

A backend is a query dialect and the engine that answers it: ``imap``, the server's own ``UID SEARCH``
with the query compiled by :func:`mail_imap_mcp.query.search_keys`. The server's personality says which
dialects its search understands, best first; the first one this server can compile a query to wins.
Gmail's own search is a further dialect that joins here (and its compiler in ``query/``), so no tool
and no IMAP module chooses.

Before them, the local index (:func:`choose_index`): a search with a query is answered from it when the
account keeps one (``index = true``), its first build is done, and the index engine can answer the
query (:meth:`mail_imap_mcp.index.engine.IndexEngine.check`: each engine compiles the tree itself). Otherwise the server answers, and the reason is a
warning of the page where the user would expect the index (a build still running, the index unavailable,
a test it cannot answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from mail_imap_mcp.call import Call
from mail_imap_mcp.index.store import Unsupported
from mail_imap_mcp.index.sync import Indexer
from mail_imap_mcp.query import Dialect, HasFlag, HasKeyword, Query, best_dialect
from mail_imap_mcp.query.tree import nodes


@dataclass
class IndexChoice:
    """The index answers: its indexer, the query it answers, the order, and what to say."""

    indexer: Indexer
    query: Query
    order: Literal["relevance", "date", "arrival"]
    #: The query's tests of flags and keywords (a server without CONDSTORE is asked for them first).
    flag_tests: tuple[HasFlag | HasKeyword, ...]
    warnings: list[str] = field(default_factory=list)

    @property
    def flags_tested(self) -> bool:
        return bool(self.flag_tests)


@dataclass(frozen=True)
class ServerAnswers:
    """The index does not answer: why (a clause, None: no index was looked for) and the warning of the
    page the server answers instead (None: nothing to say). A search only the index answers (by meaning)
    fails with ``why``, in its own words."""

    why: str | None = None
    warning: str | None = None

    @property
    def warnings(self) -> list[str]:
        return [] if self.warning is None else [self.warning]


def server_answers(why: str, how: str = "the server answered this search, unranked") -> ServerAnswers:
    """``why`` the index did not answer, and the page's warning that says so and ``how`` it is answered."""
    return ServerAnswers(why, f"{why[0].upper()}{why[1:]}: {how}.")


def choose_index(
    app: Call, account_id: str, search: Query, order: Literal["relevance", "date", "arrival"] | None
) -> IndexChoice | ServerAnswers:
    """The index's answer plan, or (the server answers) why not; ``order`` None: no query was given, the
    server answers without a word."""
    runtime = app.index_of(account_id)
    if runtime is None and order == "relevance":
        return ServerAnswers("no local index ranks this account's mail", UNRANKED)
    if runtime is None or order is None:
        return ServerAnswers()
    if not runtime.ready_for_search():
        return server_answers(
            f"the local index of this account is not ready ({runtime.status.words()})",
            "the server answered this search, unranked and newest first",
        )
    try:
        app.index_engine.check(search)
    except Unsupported as exc:
        return server_answers(
            f"the local index cannot answer this search ({exc})", "the server answered it, unranked"
        )
    indexer = runtime.search_indexer()
    if indexer is None:
        state = (
            runtime.status.words() if runtime.open_failure is None else f"not open ({runtime.open_failure})"
        )
        return server_answers(f"the local index is {state}")
    warnings = [runtime.warning] if runtime.warning else []
    runtime.warning = None
    flags = tuple(node for node in nodes(search) if isinstance(node, HasFlag | HasKeyword))
    return IndexChoice(indexer, search, order, flags, warnings)


#: Why a page asked for in relevance order is in arrival order: no index ranks this account's mail.
UNRANKED = (
    'No local index ranks this account\'s mail (`index = true` keeps one): `sort: "relevance"` was '
    "answered by the server in arrival order, newest first."
)


class Searching(Protocol):
    """What a server's search understands (IMAP's personality): its dialects, best first, and its name."""

    @property
    def name(self) -> str: ...

    @property
    def search_dialects(self) -> Sequence[Dialect]: ...


def choose_backend(personality: Searching) -> Dialect:
    """The dialect a search of this server is answered in: its personality's best one with a compiler."""
    return best_dialect(personality.search_dialects, personality.name)
