"""The SQLite engine's compiler: a query tree as an FTS5 search of the index, a MATCH expression and an
SQL condition (an index engine owns its compiler: nothing of it crosses :class:`~.store.IndexStore`).

The index keeps each message's text in the FTS5 columns of :data:`TEXT_FIELDS` and its facts (flags,
arrival day, size, attachment names) in columns of the message row ``m``. A text test becomes an FTS5
phrase, quoted whole (``"`` doubled), so no operator, column filter or wildcard of the user's text reaches
FTS5; every other value is an SQL parameter, so nothing of the query reaches SQL unparsed. The
tests of a top-level conjunction that are text alone (words and phrases under AND and OR) make the
MATCH expression the ranking runs on; anything else (a negation, a flag, a text test under NOT or beside a
flag in an OR) is a condition on ``m``, text as a sub-select of the FTS5 table.

A test the index cannot answer (a header it does not keep, Bcc, text without a word to match)
raises :class:`Unsupported`: the caller asks the server instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mail_imap_mcp.index.flag_filter import FLAG_VALUES, flag_values
from mail_imap_mcp.index.store import FLAG_BITS, HEADER_FIELDS, TEXT_FIELDS, Unsupported, label_key
from mail_imap_mcp.query.tree import (
    AllOf,
    AnyOf,
    Contains,
    DateBound,
    Filename,
    HasAttachment,
    HasFlag,
    HasKeyword,
    Header,
    Label,
    NeedsReply,
    Not,
    Query,
    SizeBound,
    nodes,
)

#: The FTS5 column that holds a message's folder as one word (:func:`place_token`): no text test
#: searches it, so a word of the user's never matches a folder.
PLACE_COLUMN = "place"
#: A character the index's tokenizer (unicode61) keeps in a word: "_" separates words there.
_WORD = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class Fts5Query:
    """``match``: the FTS5 expression the ranking runs on (None: no text to rank); ``where``: an SQL
    condition on the message row ``m`` with ``?`` placeholders for ``params``."""

    match: str | None
    where: str
    params: tuple[object, ...]
    #: ``match`` is words and phrases under AND alone (no OR): each of its words matches at least every
    #: message the whole does.
    conjunctive: bool = True
    #: The messages a flag test of the top-level conjunction asked of the flags' index passes at most
    #: (None: no such test): fewer than the folders asked hold, that index finds them, not the folders'.
    flagged: int | None = None
    #: The values of ``flag_bits`` the query passes where it tests flags alone (None: it tests more): its
    #: matches' count is then the file's counts of them (:func:`.flag_index.counted`).
    flag_values: frozenset[int] | None = None
    #: Each phrase of ``match`` as a MATCH expression of its own (its columns with it): BM25 weighs each by
    #: the messages it matches alone (:func:`.ranking.weighs_nothing`).
    phrases: tuple[str, ...] = ()


def place_token(folder_id: int) -> str:
    """The word of :data:`PLACE_COLUMN` that says a message is in the folder ``folder_id`` of the index."""
    return f"f{folder_id}"


def in_places(match: str, folder_ids: Iterable[int], *, excluded: bool = False) -> str:
    """``match`` limited to messages of the folders ``folder_ids`` (``excluded``: of none of them; at
    least one folder)."""
    places = " OR ".join(place_token(folder) for folder in folder_ids)
    return f"({match}) {'NOT' if excluded else 'AND'} {PLACE_COLUMN} : ({places})"


def label_keys(names: Iterable[str]) -> str:
    """Labels as the index stores them for ``label:``: each :func:`label_key` on a line of its own, the
    whole wrapped in newlines (so one is found whole with ``instr``)."""
    keys = [label_key(name) for name in names]
    return "\n" + "\n".join(keys) + "\n" if keys else ""


#: A test of some folders is answered by the folders' index where they hold fewer than one message in
#: this many, else by reading the table: SQLite, keeping no statistics, took the index for any folders,
#: and a look-up of each row made that ten times slower than the table read (docs/benchmarks.md, "Flags
#: answered by an index").
INDEXED_SHARE = 10


def folder_column(asked: int, held: int, flagged: int | None = None) -> str:
    """The message's folder as a test of folders that hold ``asked`` of the ``held`` messages names it:
    ``+m.folder`` (no index: the table read, or the flags' index where a flag test asked of it passes
    ``flagged``, fewer messages) where they hold a tenth of them or more, or more than ``flagged``."""
    fewer_flagged = flagged is not None and flagged < asked
    return "+m.folder" if asked * INDEXED_SHARE >= held or fewer_flagged else "m.folder"


def flag_test(flag: str, present: bool, counts: Mapping[int, int] | None) -> str:
    """That ``flag`` is set (``present``) or not: as the values of ``flag_bits`` that say so where
    ``counts`` (the messages of each value, :func:`.flag_index.flag_counts`) say fewer than one message
    in :data:`INDEXED_SHARE` passes (the flags' index answers it), else as a test of its bits on each row
    read (no index answers it: SQLite, keeping no statistics, would take the index for any values)."""
    bit = FLAG_BITS[flag]
    if _flagged(flag, present, counts) is not None:
        values = [value for value in FLAG_VALUES if bool(value & bit) is present]
        return f"m.flag_bits IN ({', '.join(str(value) for value in values)})"
    return f"(m.flag_bits & {bit}) {'!=' if present else '='} 0"


def _flagged(flag: str, present: bool, counts: Mapping[int, int] | None) -> int | None:
    """The messages that pass a test of ``flag`` (:func:`flag_test`) where it is asked of the flags'
    index (fewer than one in :data:`INDEXED_SHARE`), else None."""
    if not counts:
        return None
    bit = FLAG_BITS[flag]
    passing = sum(count for value, count in counts.items() if bool(value & bit) is present)
    return passing if passing * INDEXED_SHARE < sum(counts.values()) else None


def _top_flagged(part: Query, counts: Mapping[int, int] | None) -> int | None:
    """:func:`_flagged` of a part of the top-level conjunction that is a flag test, or its NOT."""
    if isinstance(part, Not) and isinstance(part.part, HasFlag):
        return _flagged(part.part.flag, not part.part.present, counts)
    return _flagged(part.flag, part.present, counts) if isinstance(part, HasFlag) else None


def compile_fts5(query: Query, counts: Mapping[int, int] | None = None) -> Fts5Query:
    """The FTS5 search of ``query`` (:class:`Unsupported` when the index cannot answer it); ``counts``:
    the messages of each value of ``flag_bits`` (:func:`flag_test`; None: a flag is tested on each row)."""
    parts = query.parts if isinstance(query, AllOf) else (query,)
    matches: list[str] = []
    conditions: list[str] = []
    params: list[object] = []
    conjunctive = True
    flagged: list[int] = []
    phrases: list[str] = []
    for part in parts:
        expression = _text_only(part, phrases)
        if expression is not None:
            matches.append(expression)
            conjunctive = conjunctive and not any(isinstance(node, AnyOf) for node in nodes(part))
        else:
            conditions.append(_condition(part, params, counts))
            passing = _top_flagged(part, counts)
            flagged += [] if passing is None else [passing]
    match = " AND ".join(f"({m})" for m in matches) if matches else None
    where = " AND ".join(f"({c})" for c in conditions) or "1"
    return Fts5Query(
        match,
        where,
        tuple(params),
        conjunctive,
        min(flagged, default=None),
        flag_values(query),
        tuple(dict.fromkeys(phrases)) if matches else (),
    )


def phrase(value: str) -> str:
    """``value`` as one FTS5 phrase: quoted, its quotes doubled (FTS5's only escape inside a string)."""
    if not _WORD.search(value):
        raise Unsupported(f"{value!r} has no word to look up in the index")
    return '"' + value.replace('"', '""') + '"'


def _contains(node: Contains) -> str:
    if node.field not in TEXT_FIELDS:
        raise Unsupported(f"the index keeps no {node.field} field")
    columns = TEXT_FIELDS[node.field]
    quoted = phrase(node.value)
    return f"{{{' '.join(columns)}}} : {quoted}" if columns else f"- {PLACE_COLUMN} : {quoted}"


def _header(node: Header) -> str:
    column = HEADER_FIELDS.get(node.name.lower())
    if column is None or not node.value:
        raise Unsupported(f"the index keeps no {node.name} header test")
    return f"{column} : {phrase(node.value)}"


def _text_only(node: Query, phrases: list[str] | None = None) -> str | None:
    """The MATCH expression of a tree of text tests under AND and OR, None for any other tree; each of
    its phrases appended to ``phrases`` (given)."""
    found: str | None = None
    if isinstance(node, Contains):
        found = _contains(node)
    elif isinstance(node, Header) and node.name.lower() in HEADER_FIELDS and node.value:
        found = _header(node)
    if found is not None:
        if phrases is not None:
            phrases.append(found)
        return found
    if isinstance(node, AllOf | AnyOf) and node.parts:
        mark = len(phrases) if phrases is not None else 0
        inner = [_text_only(part, phrases) for part in node.parts]
        if any(expression is None for expression in inner):
            if phrases is not None:
                del phrases[mark:]
            return None
        joiner = " AND " if isinstance(node, AllOf) else " OR "
        return joiner.join(f"({expression})" for expression in inner)
    return None


def _condition(node: Query, params: list[object], counts: Mapping[int, int] | None) -> str:
    """``node`` as an SQL condition on ``m``, its values appended to ``params``."""
    text = _text_only(node)
    if text is not None:
        params.append(text)
        return "m.id IN (SELECT rowid FROM fts WHERE fts MATCH ?)"
    if isinstance(node, HasFlag):
        return flag_test(node.flag, node.present, counts)
    if isinstance(node, HasKeyword):
        params.append(f" {node.keyword.lower()} ")
        return f"instr(' ' || lower(m.keywords) || ' ', ?) {'>' if node.present else '='} 0"
    if isinstance(node, DateBound):
        params.append(node.day.year * 10000 + node.day.month * 100 + node.day.day)
        return "m.arrival_day >= ?" if node.bound == "since" else "m.arrival_day < ?"
    if isinstance(node, SizeBound):
        params.append(node.octets)
        return "m.size > ?" if node.bound == "larger" else "m.size < ?"
    if isinstance(node, HasAttachment):
        return "m.has_attachment != 0"
    if isinstance(node, Filename):  # a substring of a name, as Gmail's filename: matches "pdf"
        params.append(node.value.lower())
        return "instr(m.filenames, ?) > 0"
    if isinstance(node, Label):  # the labels stored with the message (Gmail's X-GM-LABELS)
        params.append("\n" + label_key(node.name) + "\n")
        return "instr(m.label_keys, ?) > 0"
    if isinstance(node, Not):
        if isinstance(node.part, HasFlag):  # the other values, as the flags' index answers them
            return flag_test(node.part.flag, not node.part.present, counts)
        return f"NOT ({_condition(node.part, params, counts)})"
    if isinstance(node, AllOf):
        inner = [_condition(part, params, counts) for part in node.parts]
        return "(" + (" AND ".join(f"({condition})" for condition in inner) or "1") + ")"
    if isinstance(node, AnyOf):
        return "(" + " OR ".join(f"({_condition(part, params, counts)})" for part in node.parts) + ")"
    if isinstance(node, NeedsReply):
        raise Unsupported("needs_reply is answered by the server")
    raise Unsupported(f"the index cannot answer {type(node).__name__}")
