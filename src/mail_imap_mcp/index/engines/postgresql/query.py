"""The PostgreSQL engine's compiler: a query tree as a condition on the message row ``m`` and a
``tsquery`` to rank by (an index engine owns its compiler: nothing of it crosses
:class:`~.store.IndexStore`).

Each message's words are the SQLite index's (:mod:`..sqlite.tokens`), stored as lexemes named by their
column (:data:`PREFIXES`: ``s/budget`` is "budget" in the subject), so ``from:`` finds the sender alone
and ``text`` every column. A text test becomes the same words split the same way, a phrase their
``<->`` chain in each column it searches: written as ``tsquery`` input, every lexeme quoted (``'`` and
``\\`` escaped), never parsed by PostgreSQL's text search parser, so no operator of the user's text
(``&``, ``|``, ``!``, ``:*``) reaches it. Every other value is a parameter. The tests of a top-level
conjunction that are text alone make the ``tsquery`` the ranking runs on.
"""

from __future__ import annotations

from dataclasses import dataclass

from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.index.flag_filter import FLAG_VALUES, flag_values
from mail_imap_mcp.index.store import (
    FLAG_BITS,
    HEADER_FIELDS,
    TEXT_COLUMNS,
    TEXT_FIELDS,
    Unsupported,
    label_key,
)
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

#: The prefix of each text column's lexemes.
PREFIXES = dict(zip(TEXT_COLUMNS, ("s", "f", "t", "c", "l", "m", "b", "q", "a", "x"), strict=True))
#: The weight of each column's lexemes: subject A, sender B, what the sender wrote C, the rest D
#: (``ts_rank``'s default weights 1.0, 0.4, 0.2, 0.1).
WEIGHTS = dict.fromkeys(TEXT_COLUMNS, "D") | {"subject": "A", "sender": "B", "body": "C"}
#: The SQL of a text test, its ``tsquery`` the parameter.
TEXT_TEST = "m.terms @@ %s::tsquery"
#: The most words and phrases a ranking weighs each by its rarity (:attr:`PgQuery.terms`); a query of more
#: is ranked by ``ts_rank`` of them all, as one.
RARE_TERMS = 16


@dataclass(frozen=True)
class PgQuery:
    """``rank``: the ``tsquery`` the ranking runs on (None: no text to rank); ``where``: an SQL condition
    on the message row ``m`` with ``%s`` placeholders for ``params``."""

    rank: str | None
    where: str
    params: tuple[object, ...]
    #: ``rank`` is words and phrases under AND alone (no OR of the user's): each of its words matches at
    #: least every message the whole does (as :class:`~..sqlite.query.Fts5Query`'s).
    conjunctive: bool = True
    #: The values of ``flag_bits`` the query passes where it tests flags alone (None: it tests more): its
    #: matches' count is then the kept counts of them (:func:`.flag_counts.flag_total`).
    flag_values: frozenset[int] | None = None
    #: The ``tsquery`` of each word or phrase of ``rank``, once, where the ranking weighs each by how few
    #: messages hold it (BM25's idea, :mod:`.rarity`): two to :data:`RARE_TERMS` of them; else none.
    terms: tuple[str, ...] = ()


def lexeme(column: str, word: str) -> str:
    """``word`` of ``column`` as a quoted lexeme of ``tsvector`` and ``tsquery`` input."""
    text = f"{PREFIXES[column]}/{word}".replace("\\", "\\\\").replace("'", "''")
    return f"'{text}'"


def flag_test(flag: str, present: bool) -> str:
    """That ``flag`` is set (``present``) or not, as the values of ``flag_bits`` that say so: an index of
    the column (schema version 4) answers it, and PostgreSQL's statistics of its few values tell a rare
    flag (``seen`` where nothing is read, ``flagged``) from a common one, where a test of its bits reads
    every message's row."""
    bit = FLAG_BITS[flag]
    values = ", ".join(str(value) for value in FLAG_VALUES if bool(value & bit) is present)
    return f"m.flag_bits IN ({values})"


class PgCompiler:
    """Compiles trees with the SQLite index's words (``tokenizer``)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer

    def compile(self, query: Query) -> PgQuery:
        """The search of ``query`` (:class:`Unsupported` when the index cannot answer it)."""
        parts = query.parts if isinstance(query, AllOf) else (query,)
        ranked: list[str] = []
        terms: dict[str, None] = {}
        conditions: list[str] = []
        params: list[object] = []
        conjunctive = True
        for part in parts:
            text = self._text_only(part)
            if text is not None:
                ranked.append(text)
                conjunctive = conjunctive and not any(isinstance(node, AnyOf) for node in nodes(part))
                terms.update((self._text_only(leaf) or "", None) for leaf in self._leaves(part))
            conditions.append(self._condition(part, params))
        rank = " & ".join(f"({r})" for r in ranked) if ranked else None
        where = " AND ".join(f"({c})" for c in conditions) or "TRUE"
        weighed = tuple(terms) if 2 <= len(terms) <= RARE_TERMS else ()
        return PgQuery(rank, where, tuple(params), conjunctive, flag_values(query), weighed)

    @staticmethod
    def _leaves(part: Query) -> list[Query]:
        """The text tests of a tree of them under AND and OR."""
        return [node for node in nodes(part) if not isinstance(node, AllOf | AnyOf)]

    def _phrase(self, columns: tuple[str, ...], value: str) -> str:
        words = self.tokenizer.words(value)
        if not words:
            raise Unsupported(f"{value!r} has no word to look up in the index")
        return " | ".join(
            "(" + " <-> ".join(lexeme(column, word) for word in words) + ")" for column in columns
        )

    def _text_only(self, node: Query) -> str | None:
        """The ``tsquery`` of a tree of text tests under AND and OR, None for any other tree."""
        if isinstance(node, Contains):
            if node.field not in TEXT_FIELDS:
                raise Unsupported(f"the index keeps no {node.field} field")
            return self._phrase(TEXT_FIELDS[node.field] or TEXT_COLUMNS, node.value)
        if isinstance(node, Header) and node.name.lower() in HEADER_FIELDS and node.value:
            return self._phrase((HEADER_FIELDS[node.name.lower()],), node.value)
        if isinstance(node, AllOf | AnyOf) and node.parts:
            inner = [self._text_only(part) for part in node.parts]
            if any(expression is None for expression in inner):
                return None
            joiner = " & " if isinstance(node, AllOf) else " | "
            return joiner.join(f"({expression})" for expression in inner)
        return None

    def _condition(self, node: Query, params: list[object]) -> str:
        """``node`` as an SQL condition on ``m``, its values appended to ``params``."""
        text = self._text_only(node)
        if text is not None:
            params.append(text)
            return TEXT_TEST
        if isinstance(node, Header):
            raise Unsupported(f"the index keeps no {node.name} header test")
        if isinstance(node, HasFlag):
            return flag_test(node.flag, node.present)
        if isinstance(node, HasKeyword):
            params.append(f" {node.keyword.lower()} ")
            return f"strpos(' ' || lower(m.keywords) || ' ', %s) {'>' if node.present else '='} 0"
        if isinstance(node, DateBound):
            params.append(node.day.year * 10000 + node.day.month * 100 + node.day.day)
            return "m.arrival_day >= %s" if node.bound == "since" else "m.arrival_day < %s"
        if isinstance(node, SizeBound):
            params.append(node.octets)
            return "m.size > %s" if node.bound == "larger" else "m.size < %s"
        if isinstance(node, HasAttachment):
            return "m.has_attachment"
        if isinstance(node, Filename):
            params.append(node.value.lower())
            return "strpos(m.filenames, %s) > 0"
        if isinstance(node, Label):
            params.append("\n" + label_key(node.name) + "\n")
            return "strpos(m.label_keys, %s) > 0"
        if isinstance(node, Not):
            if isinstance(node.part, HasFlag):  # the other values, as an index answers them
                return flag_test(node.part.flag, not node.part.present)
            return f"NOT ({self._condition(node.part, params)})"
        if isinstance(node, AllOf):
            return "(" + (" AND ".join(f"({self._condition(p, params)})" for p in node.parts) or "TRUE") + ")"
        if isinstance(node, AnyOf):
            return "(" + (" OR ".join(f"({self._condition(p, params)})" for p in node.parts) or "FALSE") + ")"
        if isinstance(node, NeedsReply):
            raise Unsupported("needs_reply is answered by the server")
        raise Unsupported(f"the index cannot answer {type(node).__name__}")
