"""What the index engines' word tests share: words that are query syntax or SQL in some engine, and the
check that another engine finds what the SQLite index finds for each word asked."""

from __future__ import annotations

from collections.abc import Sequence

from mail_imap_mcp.index.store import IndexedMessage, IndexStore, Unsupported
from mail_imap_mcp.query.tree import Contains

#: Words that are syntax to tsquery, Tantivy's query parser or SQL: each must be a plain word everywhere.
HOSTILE = ("o'brien", "kiwi:*", "apple&pear", "plum|fig", "'); DROP SCHEMA public CASCADE; --", "!quince")


def assert_same_words(
    both_stores: tuple[IndexStore, IndexStore], corpus: list[IndexedMessage], asked: Sequence[str]
) -> None:
    """Put ``corpus`` in folder ``Words`` of both stores; each word of ``asked`` finds the same messages
    in both (or is refused by both as unsupported)."""
    for store in both_stores:
        store.put(store.start_folder("Words", 1), corpus)
    for value in asked:
        answers: list[list[int] | None] = []
        for store in both_stores:
            try:
                page = store.search(
                    Contains("text", value), folders=["Words"], order="relevance", limit=9, offset=0
                )
                answers.append(sorted(hit.uid for hit in page.hits))
            except Unsupported:
                answers.append(None)
        assert answers[0] == answers[1], (value, answers)
