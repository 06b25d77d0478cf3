"""Bringing an index file of an earlier schema to the current one, where its rows can be kept."""

from __future__ import annotations

import sqlite3

from mail_imap_mcp.index.store import TEXT_COLUMNS, unpack_texts

_ATTACHMENT_TEXT = TEXT_COLUMNS.index("attachment_text")
#: Rows marked per statement.
_BATCH = 500


def migrate_5_to_6(db: sqlite3.Connection) -> None:
    """Schema 6 records which messages' attachments were read (``attachments_read``). A schema 5 row
    holding attachment text was indexed with ``index_attachments`` on: it is marked read. One without
    is not known (the setting off, or on and the attachments held no text): it counts as not read, and
    is read again once with the setting on. Runs inside the caller's transaction."""
    db.execute("ALTER TABLE messages ADD COLUMN attachments_read INTEGER NOT NULL DEFAULT 0")
    read: list[tuple[int]] = []
    # Row by row (the cursor, not fetchall): every document's text at once was the whole index in memory.
    for row_id, doc in db.execute("SELECT id, doc FROM messages WHERE has_attachment"):
        if unpack_texts(doc)[_ATTACHMENT_TEXT]:
            read.append((row_id,))
    for first in range(0, len(read), _BATCH):
        db.executemany("UPDATE messages SET attachments_read = 1 WHERE id = ?", read[first : first + _BATCH])
