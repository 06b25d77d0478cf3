"""An index file's schema: made where the file is new, checked where it is not, and the account it
belongs to recorded and checked."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from mail_imap_mcp.index.engines.sqlite.query import PLACE_COLUMN
from mail_imap_mcp.index.store import TEXT_COLUMNS, WRITER_WAIT_S, IndexUnusable
from mail_imap_mcp.state.sqlite_wal import use_wal

#: "MIMX": marks a database as this index (``PRAGMA application_id``).
APPLICATION_ID = 0x4D494D58
SCHEMA_VERSION = 7
#: The FTS5 table's columns: the text columns, then the folder of the message as one word
#: (:func:`~mail_imap_mcp.index.engines.sqlite.query.place_token`), so that a search of some folders is one MATCH.
FTS_COLUMNS = (*TEXT_COLUMNS, PLACE_COLUMN)

#: The one-row table of the account the file indexes (added beside schema 7: a file without it, or with
#: it empty, records the first account that opens it).
_OWNER = "CREATE TABLE IF NOT EXISTS owner(identity TEXT NOT NULL)"

_SCHEMA = f"""
CREATE TABLE folders(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, uidvalidity INTEGER NOT NULL,
    uidnext INTEGER NOT NULL, highestmodseq INTEGER NOT NULL, messages INTEGER NOT NULL,
    complete INTEGER NOT NULL);
CREATE TABLE messages(
    id INTEGER PRIMARY KEY, folder INTEGER NOT NULL REFERENCES folders(id), uid INTEGER NOT NULL,
    sent INTEGER NOT NULL, arrival_day INTEGER NOT NULL, size INTEGER NOT NULL,
    flag_bits INTEGER NOT NULL, keywords TEXT NOT NULL, has_attachment INTEGER NOT NULL,
    filenames TEXT NOT NULL, doc BLOB NOT NULL,
    global_id INTEGER, -- X-GM-MSGID: Gmail's id of a message in every folder (one row per message)
    labels TEXT NOT NULL DEFAULT '', -- X-GM-LABELS, one a line
    label_keys TEXT NOT NULL DEFAULT '', -- the labels as label: compares them (index.store.label_key)
    attachments_read INTEGER NOT NULL DEFAULT 0, -- with index_attachments (schema 6)
    arrival INTEGER NOT NULL, -- INTERNALDATE, seconds since the epoch (schema 7)
    UNIQUE(folder, uid));
CREATE INDEX messages_sent ON messages(sent);
CREATE INDEX messages_arrival ON messages(arrival);
CREATE INDEX messages_global_id ON messages(global_id) WHERE global_id IS NOT NULL;
CREATE VIRTUAL TABLE fts USING fts5({", ".join(FTS_COLUMNS)}, content='',
    tokenize='unicode61 remove_diacritics 2');
{_OWNER};
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {SCHEMA_VERSION};
"""

Transaction = Callable[[], AbstractContextManager[None]]


def prepare(db: sqlite3.Connection, path: Path, transaction: Transaction, identity: str | None) -> None:
    """Make the schema of a new file, and check that the file is the index of
    ``identity`` (None: not checked): :class:`IndexUnusable` for a file that is no index of this schema
    or another account's; a file that records no account records ``identity`` (adopted)."""
    use_wal(db, WRITER_WAIT_S)
    db.execute("PRAGMA synchronous = NORMAL")
    application_id, version = _marks(db)
    if application_id == 0 and version == 0:
        with transaction():
            # Read again under the write lock: another connection may have made the schema since, and
            # its tables were then seen without its marks, a database of something else.
            application_id, version = _marks(db)
            if application_id == 0 and version == 0:
                if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise IndexUnusable(f"{path} is a database of something else")
                for statement in _SCHEMA.split(";\n"):
                    if statement.strip():
                        db.execute(statement)
        application_id, version = _marks(db)
    if application_id != APPLICATION_ID:
        raise IndexUnusable(f"{path} is a database of something else")
    if version != SCHEMA_VERSION:
        raise IndexUnusable(f"{path} is an index of schema {version}, not {SCHEMA_VERSION}")
    db.execute("SELECT count(*) FROM folders").fetchone()
    if identity is not None:
        _claim(db, path, transaction, identity)


def _marks(db: sqlite3.Connection) -> tuple[int, int]:
    # One statement, one snapshot: read apart, a schema another connection made in between was seen
    # with its version but not its application id (0, 7), a database of something else.
    row = db.execute("SELECT application_id, user_version FROM pragma_application_id, pragma_user_version")
    application_id, version = row.fetchone()
    return int(application_id), int(version)


def _claim(db: sqlite3.Connection, path: Path, transaction: Transaction, identity: str) -> None:
    """Record ``identity`` in a file that records none; refuse a file that records another one."""
    recorded = owner(db)
    if recorded is None:
        with transaction():
            db.execute(_OWNER)
            if owner(db) is None:  # not recorded meanwhile by another connection
                db.execute("INSERT INTO owner(identity) VALUES(?)", (identity,))
        recorded = owner(db)
    if recorded != identity:
        raise IndexUnusable(
            f"{path} is the index of another account of that name (another server, port or user name)"
        )


def owner(db: sqlite3.Connection) -> str | None:
    """The identity the file records (:func:`~.location.account_identity`), None where it records none."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'owner'").fetchone():
        return None
    row = db.execute("SELECT identity FROM owner").fetchone()
    return None if row is None else str(row[0])


def recorded_identity(path: Path) -> str | None:
    """The identity the index file at ``path`` records (None: none, or the file cannot be read as an
    index); its WAL is folded into it when this is its last connection."""
    try:
        db = sqlite3.connect(path)
        try:
            return owner(db)
        finally:
            db.close()
    except sqlite3.Error:
        return None
