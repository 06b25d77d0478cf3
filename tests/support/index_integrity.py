"""Whether an index file is whole: what a test asserts after writers raced or a build was killed.

``PRAGMA integrity_check`` sees the b-trees only, and FTS5's own ``'integrity-check'`` on a contentless
table checks the inverted index against itself (there is no content to compare it with): terms left
behind by a delete told the wrong text, or a row deleted without its terms, pass both. So the terms are
also compared with the text the ``messages`` rows keep: every message's text is indexed again into a
scratch FTS5 table of the same schema (the folder as its place word), and both tables' term instances (``fts5vocab``) must be equal, as
must the row counts of ``fts`` and ``messages``.
"""

from __future__ import annotations

import sqlite3

from mail_imap_mcp.index.engines.sqlite.query import PLACE_COLUMN, place_token
from mail_imap_mcp.index.store import TEXT_COLUMNS, unpack_texts


def index_problems(db: sqlite3.Connection) -> list[str]:
    """What is wrong with the index in ``db`` (empty: it is whole)."""
    problems = [row[0] for row in db.execute("PRAGMA integrity_check") if row[0] != "ok"]
    try:
        # rank 0: the FTS5 index's own structure (a contentless table has no content to check it with).
        db.execute("INSERT INTO fts(fts, rank) VALUES('integrity-check', 0)")
    except sqlite3.DatabaseError as exc:
        problems.append(f"fts integrity-check: {exc}")
        return problems
    indexed = db.execute("SELECT count(*) FROM fts").fetchone()[0]
    kept = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    if indexed != kept:
        problems.append(f"fts holds {indexed} rows, messages {kept}")
    scratch = sqlite3.connect(":memory:")
    try:
        tokenizer = db.execute("SELECT sql FROM sqlite_master WHERE name = 'fts'").fetchone()[0]
        scratch.execute(tokenizer)
        columns = (*TEXT_COLUMNS, PLACE_COLUMN)
        for row_id, folder, doc in db.execute("SELECT id, folder, doc FROM messages"):
            texts = unpack_texts(doc)
            scratch.execute(
                f"INSERT INTO fts(rowid, {', '.join(columns)}) VALUES(?, {', '.join('?' for _ in columns)})",
                (row_id, *texts, place_token(folder)),
            )
        expected = _instances(scratch)
    finally:
        scratch.close()
    found = _instances(db)
    if found != expected:
        extra, missing = found - expected, expected - found
        problems.append(
            f"fts terms differ from the messages' text: {len(extra)} extra (e.g. {sorted(extra)[:3]}), "
            f"{len(missing)} missing (e.g. {sorted(missing)[:3]})"
        )
    return problems


def _instances(db: sqlite3.Connection) -> set[tuple[str, int, str, int]]:
    db.execute("CREATE VIRTUAL TABLE temp.fts_terms USING fts5vocab(main, fts, 'instance')")
    try:
        return set(db.execute("SELECT term, doc, col, offset FROM temp.fts_terms"))
    finally:
        db.execute("DROP TABLE temp.fts_terms")
