"""The tests IMAP SEARCH cannot send (``has:attachment``, ``filename:``) split from those it can, and
answered from a message's attachments.

Without an index, a query is answered by the server's SEARCH for what it can say, and the candidates'
structures (BODYSTRUCTURE) are judged here for the rest. That is exact when the query is a conjunction of
a part for the server and a part of structure tests only: each top-level conjunct is one or the other. A
conjunct that mixes them (``has:attachment OR from:bob``, ``-(filename:pdf subject:x)``) cannot be split
without reading every message, and :func:`split` refuses it (:class:`MixedStructure`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from mail_imap_mcp.query.tree import (
    STRUCTURE_TESTS,
    AllOf,
    AnyOf,
    Filename,
    HasAttachment,
    Not,
    Query,
    all_of,
    nodes,
)


class MixedStructure(ValueError):
    """A conjunct of the query mixes structure tests with tests the server answers."""

    def __init__(self, conjunct: Query) -> None:
        self.conjunct = conjunct
        super().__init__(
            "has:attachment and filename: can be combined with other terms only by AND (not under the same "
            "OR or - as a term the server searches)"
        )


def _is_structure(node: Query) -> bool:
    return isinstance(node, STRUCTURE_TESTS)


def _leaves(query: Query) -> list[Query]:
    return [node for node in nodes(query) if not isinstance(node, AllOf | AnyOf | Not)]


def split(query: Query) -> tuple[Query, Query | None]:
    """(for the server, for the structure): ``query`` is their conjunction; the second is None when the
    query has no structure test. Raises :class:`MixedStructure`."""
    server: list[Query] = []
    structure: list[Query] = []
    parts = query.parts if isinstance(query, AllOf) else (query,)
    for part in parts:
        kinds = {_is_structure(leaf) for leaf in _leaves(part)}
        if kinds == {True, False}:
            raise MixedStructure(part)
        (structure if kinds == {True} else server).append(part)
    return all_of(*server), (all_of(*structure) if structure else None)


def structure_holds(query: Query, filenames: Sequence[str | None]) -> bool:
    """Whether a message whose attachments have ``filenames`` (None: an attachment without a name) matches
    ``query``, a query of structure tests only (the second part of :func:`split`)."""
    if isinstance(query, AllOf):
        return all(structure_holds(part, filenames) for part in query.parts)
    if isinstance(query, AnyOf):
        return any(structure_holds(part, filenames) for part in query.parts)
    if isinstance(query, Not):
        return not structure_holds(query.part, filenames)
    if isinstance(query, HasAttachment):
        return bool(filenames)
    if isinstance(query, Filename):
        wanted = query.value.casefold()
        return any(
            name is not None and wanted in unicodedata.normalize("NFC", name).casefold() for name in filenames
        )
    raise TypeError(f"not a structure test: {query!r}")
