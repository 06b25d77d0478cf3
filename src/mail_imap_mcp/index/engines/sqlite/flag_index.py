"""The index of the messages' flags in an index file (issue 80): an index of ``messages.flag_bits`` and
``flag_counts``, the messages of each value of it, kept by triggers in the transaction of each change
(whichever release writes the file). SQLite keeps no statistics of a column unless ANALYZE ran (and
this build of it none of a value's share even then): the counts tell the compiler a flag few messages
have or lack, asked of the index (``m.flag_bits IN (...)``), from a common one, tested on each row read
(its bits, which no index answers: a look-up of each of a million rows took ten times the table read).

Added when a file without them is opened (:func:`prepare_flags`), not a change of the file's format: the
file of the release before gains them, in one write transaction that holds back other writers (searches
read on) for about a second a million messages (docs/benchmarks.md, "Rare flags on the SQLite engines").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager

#: The messages of each value of ``flag_bits``, as the triggers keep them.
FlagCounts = Mapping[int, int]

_COUNT = (
    "INSERT INTO flag_counts(flag_bits, messages) VALUES({bits}, {step}) "
    "ON CONFLICT(flag_bits) DO UPDATE SET messages = messages + {step}"
)
_SCHEMA = (
    "CREATE INDEX IF NOT EXISTS messages_flag_bits ON messages(flag_bits)",
    "CREATE TABLE IF NOT EXISTS flag_counts(flag_bits INTEGER PRIMARY KEY, messages INTEGER NOT NULL)",
    "INSERT INTO flag_counts(flag_bits, messages) SELECT flag_bits, count(*) FROM messages GROUP BY flag_bits",
    "CREATE TRIGGER IF NOT EXISTS flag_counts_added AFTER INSERT ON messages BEGIN "
    + _COUNT.format(bits="new.flag_bits", step=1)
    + "; END",
    "CREATE TRIGGER IF NOT EXISTS flag_counts_removed AFTER DELETE ON messages BEGIN "
    + _COUNT.format(bits="old.flag_bits", step=-1)
    + "; END",
    "CREATE TRIGGER IF NOT EXISTS flag_counts_changed AFTER UPDATE OF flag_bits ON messages "
    "WHEN new.flag_bits != old.flag_bits BEGIN "
    + _COUNT.format(bits="old.flag_bits", step=-1)
    + "; "
    + _COUNT.format(bits="new.flag_bits", step=1)
    + "; END",
)

Transaction = Callable[[], AbstractContextManager[None]]


def prepare_flags(db: sqlite3.Connection, transaction: Transaction) -> None:
    """Add the flags' index, counts and triggers to a file that lacks them (written only then: opening a
    file that has them waits for nobody)."""
    if _prepared(db):
        return
    with transaction():
        if _prepared(db):  # made meanwhile by another connection
            return
        db.execute("DROP TABLE IF EXISTS flag_counts")
        for statement in _SCHEMA:
            db.execute(statement)


def _prepared(db: sqlite3.Connection) -> bool:
    found = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE name IN "
        "('messages_flag_bits', 'flag_counts', 'flag_counts_added', 'flag_counts_removed', 'flag_counts_changed')"
    ).fetchone()[0]
    return int(found) == 5


def flag_counts(db: sqlite3.Connection) -> dict[int, int]:
    """The messages of each value of ``flag_bits`` the file holds."""
    rows = db.execute("SELECT flag_bits, messages FROM flag_counts WHERE messages > 0").fetchall()
    return {int(bits): int(count) for bits, count in rows}
