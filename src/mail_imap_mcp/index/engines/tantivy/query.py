"""The Tantivy side's compiler (engine ``sqlite+tantivy``): the text of a query tree as a Tantivy query,
the rest left to SQLite.

The query is split as the SQLite compiler splits it (:func:`~..sqlite.query.compile_fts5`): the parts of a
top-level conjunction that are text alone (words and phrases under AND and OR) are what is ranked; every
other part (a flag, a date, a negation, text beside a flag in an OR) is a condition SQLite checks on the
best-ranked rows (:mod:`.store`). A text test is split into the SQLite index's own words
(:class:`~..sqlite.tokens.Tokenizer`, as the documents were: accents and case folded alike), so both
sides match the same messages: one word is a term, several a phrase, in each column the field searches,
each weighed by its column's weight (:data:`~.store.COLUMN_WEIGHTS`) as a boost. A value is never parsed
by Tantivy's query parser, so nothing of the user's text is syntax there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tantivy

from mail_imap_mcp.index.engines.sqlite.query import phrase
from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.index.store import COLUMN_WEIGHTS, HEADER_FIELDS, TEXT_COLUMNS, TEXT_FIELDS
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, Header, Query

#: The Tantivy field of the SQLite row id of each document (and the key its writes name).
ID_FIELD = "id"
#: The Tantivy field of the SQLite folder id of each document (a search of some folders).
FOLDER_FIELD = "folder"
_WEIGHTS = dict(zip(TEXT_COLUMNS, COLUMN_WEIGHTS, strict=True))


@dataclass(frozen=True)
class RankedText:
    """``text``: the Tantivy query of the ranked text (None: the query has no text to rank);
    ``filtered``: other parts remain that SQLite must check on each ranked row."""

    text: Any
    filtered: bool


def compile_tantivy(query: Query, schema: Any, tokenizer: Tokenizer) -> RankedText:
    """The ranked text of ``query`` against ``schema`` (:class:`~.store.Unsupported` as SQLite's
    compiler raises it)."""
    parts = query.parts if isinstance(query, AllOf) else (query,)
    texts: list[Any] = []
    filtered = False
    for part in parts:
        compiled = _text_only(part, schema, tokenizer)
        if compiled is None:
            filtered = True
        else:
            texts.append(compiled)
    if not texts:
        return RankedText(None, filtered)
    text = texts[0] if len(texts) == 1 else _all(texts)
    return RankedText(text, filtered)


def in_folders(text: Any, schema: Any, folder_ids: list[int]) -> Any:
    """``text`` limited to documents of the folders ``folder_ids``."""
    folders = tantivy.Query.const_score_query(
        tantivy.Query.term_set_query(schema, FOLDER_FIELD, folder_ids), 0.0
    )  # adds nothing to a score: a filter
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, text), (tantivy.Occur.Must, folders)])


def _all(queries: list[Any]) -> Any:
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, query) for query in queries])


def _text_only(node: Query, schema: Any, tokenizer: Tokenizer) -> Any | None:
    """The Tantivy query of a tree of text tests under AND and OR, None for any other tree."""
    if isinstance(node, Contains):
        if node.field not in TEXT_FIELDS:
            return None  # Bcc: the SQLite compiler (checked first) says Unsupported
        return _words(node.value, TEXT_FIELDS[node.field] or TEXT_COLUMNS, schema, tokenizer)
    if isinstance(node, Header) and node.name.lower() in HEADER_FIELDS and node.value:
        return _words(node.value, (HEADER_FIELDS[node.name.lower()],), schema, tokenizer)
    if isinstance(node, AllOf | AnyOf) and node.parts:
        inner = [_text_only(part, schema, tokenizer) for part in node.parts]
        if any(query is None for query in inner):
            return None
        if isinstance(node, AllOf):
            return _all(inner)
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, query) for query in inner if query is not None]
        )
    return None


def _words(value: str, columns: tuple[str, ...], schema: Any, tokenizer: Tokenizer) -> Any:
    """``value`` found in any of ``columns``: a term (one word) or a phrase (several), each column's
    weight its boost."""
    phrase(value)  # Unsupported where it has no word, as in SQLite
    words: list[str | tuple[int, str]] = list(tokenizer.words(value))
    if not words:  # characters of words to Python, separators to SQLite: FTS5 matches nothing
        return tantivy.Query.empty_query()
    per_column = []
    for column in columns:
        if len(words) == 1:
            found = tantivy.Query.term_query(schema, column, str(words[0]), index_option="freq")
        else:
            found = tantivy.Query.phrase_query(schema, column, words)
        per_column.append((tantivy.Occur.Should, tantivy.Query.boost_query(found, _WEIGHTS[column])))
    return per_column[0][1] if len(per_column) == 1 else tantivy.Query.boolean_query(per_column)
