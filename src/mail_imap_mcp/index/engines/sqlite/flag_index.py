"""The index of the messages' flags in an index file (issue 80): an index of ``messages.flag_bits`` and
``folder_flag_counts``, the messages of each folder and value of it, kept by triggers in the transaction
of each change (whichever release writes the file). SQLite keeps no statistics of a column unless ANALYZE
ran (and this build of it none of a value's share even then): the counts tell the compiler a flag few
messages have or lack, asked of the index (``m.flag_bits IN (...)``), from a common one, tested on each
row read (its bits, which no index answers: a look-up of each of a million rows took ten times the table
read); they are the ``total`` of a page whose filter is flags alone (:func:`counted`), no count of rows; and
each change's folder count (:func:`recount`), where counting a folder's rows took 34 ms at a million.

Added when a file without them is opened (:func:`prepare_flags`), not a change of the file's format: the
file of the releases before gains them (that of the first flags' index, which counted each value alone,
has those counts replaced), in one write transaction that holds back other writers (searches read on) for
about three seconds a million messages (docs/benchmarks.md, "A flag filter's total from kept counts").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager

#: The messages of each value of ``flag_bits``, as the triggers keep them.
FlagCounts = Mapping[int, int]

_COUNT = (
    "INSERT INTO folder_flag_counts(folder, flag_bits, messages) VALUES({row}.folder, {row}.flag_bits, {step}) "
    "ON CONFLICT(folder, flag_bits) DO UPDATE SET messages = messages + {step}"
)
#: The triggers that keep the counts, and what each does.
_TRIGGERS = {
    "folder_flag_counts_added": "AFTER INSERT ON messages BEGIN "
    + _COUNT.format(row="new", step=1)
    + "; END",
    "folder_flag_counts_removed": "AFTER DELETE ON messages BEGIN "
    + _COUNT.format(row="old", step=-1)
    + "; END",
    "folder_flag_counts_changed": "AFTER UPDATE OF flag_bits, folder ON messages "
    "WHEN new.flag_bits != old.flag_bits OR new.folder != old.folder BEGIN "
    + _COUNT.format(row="old", step=-1)
    + "; "
    + _COUNT.format(row="new", step=1)
    + "; END",
}
_SCHEMA = (
    "CREATE INDEX IF NOT EXISTS messages_flag_bits ON messages(flag_bits)",
    "CREATE TABLE IF NOT EXISTS folder_flag_counts(folder INTEGER NOT NULL, flag_bits INTEGER NOT NULL, "
    "messages INTEGER NOT NULL, PRIMARY KEY(folder, flag_bits)) WITHOUT ROWID",
    "INSERT INTO folder_flag_counts(folder, flag_bits, messages) "
    "SELECT folder, flag_bits, count(*) FROM messages GROUP BY folder, flag_bits",
    *(f"CREATE TRIGGER IF NOT EXISTS {name} {body}" for name, body in _TRIGGERS.items()),
)
#: The counts of each value alone the first flags' index kept (issue 80): replaced by those of each folder.
_REPLACED = (
    "DROP TRIGGER IF EXISTS flag_counts_added",
    "DROP TRIGGER IF EXISTS flag_counts_removed",
    "DROP TRIGGER IF EXISTS flag_counts_changed",
    "DROP TABLE IF EXISTS flag_counts",
)
_ADDED = ("messages_flag_bits", "folder_flag_counts", *_TRIGGERS)

Transaction = Callable[[], AbstractContextManager[None]]


def prepare_flags(db: sqlite3.Connection, transaction: Transaction) -> None:
    """Add the flags' index, counts and triggers to a file that lacks them (written only then: opening a
    file that has them waits for nobody)."""
    if _prepared(db):
        return
    with transaction():
        if _prepared(db):  # made meanwhile by another connection
            return
        db.execute("DROP TABLE IF EXISTS folder_flag_counts")
        for statement in (*_REPLACED, *_SCHEMA):
            db.execute(statement)


def _prepared(db: sqlite3.Connection) -> bool:
    found = db.execute(
        f"SELECT count(*) FROM sqlite_master WHERE name IN ({', '.join('?' for _ in _ADDED)})", _ADDED
    ).fetchone()[0]
    return int(found) == len(_ADDED)


def flag_counts(db: sqlite3.Connection) -> dict[int, int]:
    """The messages of each value of ``flag_bits`` the file holds."""
    rows = db.execute(
        "SELECT flag_bits, sum(messages) FROM folder_flag_counts GROUP BY flag_bits HAVING sum(messages) > 0"
    ).fetchall()
    return {int(bits): int(count) for bits, count in rows}


def counted(db: sqlite3.Connection, folders: Collection[int], values: Collection[int]) -> int:
    """The messages of the folders ``folders`` whose ``flag_bits`` is one of ``values``, as the counts say
    (what counting them finds, in the same snapshot: the triggers write in each change's transaction)."""
    if not folders or not values:
        return 0
    row = db.execute(
        f"SELECT coalesce(sum(messages), 0) FROM folder_flag_counts WHERE folder IN ({', '.join('?' for _ in folders)}) "
        f"AND flag_bits IN ({', '.join(str(int(value)) for value in values)})",
        list(folders),
    ).fetchone()
    return int(row[0])


def recount(db: sqlite3.Connection, folder: int) -> None:
    """Set the folder's ``messages`` to what it holds, from its kept counts (a few rows, in the change's
    own transaction: the triggers have counted the change)."""
    db.execute(
        "UPDATE folders SET messages = "
        "(SELECT coalesce(sum(messages), 0) FROM folder_flag_counts WHERE folder = ?) WHERE id = ?",
        (folder, folder),
    )
