"""The commands that read messages of the selected mailbox, for
:class:`~mail_imap_mcp.imap.session.ImapSession` (which inherits them): ``UID FETCH`` of metadata and
PEEK items only (a read never sets ``\\Seen``), several requests sent before the first answer is read,
or one long list as a compact UID set. Sent on the session's connection as it is, possibly pipelined
behind the view's revalidation, whose answer is read after theirs (``_selected_mailbox_errors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from mail_imap_mcp.imap import parsing, wire
from mail_imap_mcp.imap.errors import SelectionStale
from mail_imap_mcp.imap.fetch_response import parse_fetch_response
from mail_imap_mcp.imap.uidplus import format_uid_set
from mail_imap_mcp.imap.wire import BudgetedIMAPClient


class FetchSession(Protocol):
    """What the fetch commands use of the session."""

    @property
    def client(self) -> BudgetedIMAPClient: ...
    @property
    def _client(self) -> BudgetedIMAPClient: ...
    @property
    def _pipeline(self) -> bool: ...
    @property
    def _pending(self) -> object: ...
    def _selected_mailbox_errors(self) -> AbstractContextManager[None]: ...
    def fetch_each(self, requests: Sequence[tuple[list[int], list[str]]]) -> dict[int, dict[bytes, Any]]: ...
    def _uid_fetch(
        self,
        client: BudgetedIMAPClient,
        commands: list[tuple[str, list[str]]],
        wanted: list[int],
        *,
        one_answer_each: bool,
    ) -> dict[int, dict[bytes, Any]]: ...


class FetchCommands:
    """``UID FETCH`` on the selected mailbox (see the module)."""

    def fetch(self: FetchSession, uids: list[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        """``UID FETCH`` of ``items`` for ``uids`` (items must be PEEK/metadata: never sets \\Seen)."""
        return self.fetch_each([(uids, items)])

    def fetch_each(
        self: FetchSession, requests: Sequence[tuple[list[int], list[str]]]
    ) -> dict[int, dict[bytes, Any]]:
        """One ``UID FETCH`` per ``(uids, items)`` request (PEEK/metadata items only), all sent before the
        first answer is read: one round trip for all. The UIDs of two requests must not overlap.

        Pipelined behind a pending revalidation: an unsolicited FETCH that the revalidation's NOOP
        brings (a flag change elsewhere) would mix with the answer, so the answer counts only when it
        holds exactly one response per message returned; otherwise :class:`SelectionStale` makes the
        call run again on the updated view, unpipelined.
        """
        requests = [(uids, items) for uids, items in requests if uids]
        if not requests:
            return {}
        behind_revalidation = self._pending is not None and self._pipeline
        commands = [(wire.uid_list(uids), items) for uids, items in requests]
        wanted = [uid for uids, _ in requests for uid in uids]
        client = self._client if behind_revalidation else self.client
        return self._uid_fetch(client, commands, wanted, one_answer_each=behind_revalidation)

    def fetch_range(self: FetchSession, uids: Sequence[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        """``UID FETCH`` of ``items`` for ``uids`` sent as one compact UID set (``1:500,502``), for long
        lists (metadata or PEEK items only); answers for other UIDs are dropped."""
        wanted = sorted(set(uids))
        if not wanted:
            return {}
        return self._uid_fetch(self.client, [(format_uid_set(wanted), items)], wanted, one_answer_each=False)

    def fetch_ranges(
        self: FetchSession, uids: Sequence[int], items: list[str], per: int
    ) -> dict[int, dict[bytes, Any]]:
        """:meth:`fetch_range` of ``per`` UIDs a command, every command sent before the first answer is
        read: one round trip however long the list (reads only), with a pending revalidation or EXAMINE
        sent ahead (as :meth:`fetch_each`)."""
        wanted = sorted(set(uids))
        pieces = [(format_uid_set(wanted[at : at + per]), items) for at in range(0, len(wanted), per)]
        if not pieces:
            return {}
        behind = self._pending is not None and self._pipeline
        client = self._client if behind else self.client
        return self._uid_fetch(client, pieces, wanted, one_answer_each=behind)

    def _uid_fetch(
        self: FetchSession,
        client: BudgetedIMAPClient,
        commands: list[tuple[str, list[str]]],
        wanted: list[int],
        *,
        one_answer_each: bool,
    ) -> dict[int, dict[bytes, Any]]:
        """Send every ``(uid set, items)`` UID FETCH, then read the answers: the responses for ``wanted``.

        ``one_answer_each`` (pipelined behind a revalidation): :class:`SelectionStale` unless the answer
        holds exactly one response per message returned (an unsolicited FETCH came with it otherwise).
        """
        client.untagged.pop("FETCH", None)
        with self._selected_mailbox_errors():
            tags = [
                client.send("UID", "FETCH", uid_set, wire.fetch_items(items)) for uid_set, items in commands
            ]
            answers = [client.complete("FETCH", tag) for tag in tags]
            for typ, data in answers:
                client.check_ok("fetch", typ, data)
            data = client.take_untagged(*answers[-1], "FETCH")
        parsed = parse_fetch_response(data, client.normalise_times, True)
        answer = {uid: parsed[uid] for uid in wanted if uid in parsed}
        if one_answer_each and sum(1 for item in data if parsing.opens_fetch_response(item)) != len(answer):
            raise SelectionStale()
        return answer
