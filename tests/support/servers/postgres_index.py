"""A shared index's faults for the tests (issue 50): a mailbox of many small folders whose build a
FaultProxy's latency makes last long enough to be cut, and one index schema's rows read straight from
PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

from tests.support.mail import mailgen
from tests.support.patience import eventually, patient
from tests.support.servers.dovecot import Dovecot

WORD = "ledger"
FOLDERS = [f"Box{i:02d}" for i in range(12)]
PER_FOLDER = 25
#: Seconds the proxy adds to each chunk either way: a folder's sync takes several round trips.
LATENCY_S = 0.06


def seed(dovecot: Dovecot, user: str) -> int:
    """Each of :data:`FOLDERS` with :data:`PER_FOLDER` messages holding :data:`WORD`; how many in all."""
    for folder in FOLDERS:
        mail = [
            mailgen.plain_message(f"{folder} {WORD} {i}", f"the {WORD} line {i}\r\n")
            for i in range(PER_FOLDER)
        ]
        dovecot.seed(user, folder, mail)
    return len(FOLDERS) * PER_FOLDER


def until(condition: Callable[[], Any], within: float, what: str) -> float:
    """Seconds until ``condition`` held (failing after ``within`` seconds, with the run's patience)."""
    started = time.monotonic()
    eventually(condition, within=within, what=what)
    return time.monotonic() - started


class Schema:
    """The rows of one index schema, read straight from PostgreSQL."""

    def __init__(self, url: str, password: str, schema: str) -> None:
        self.url, self.password, self.schema = url, password, schema

    def _one(self, sql: str) -> tuple[Any, ...]:
        try:
            with psycopg.connect(self.url, password=self.password, connect_timeout=round(patient(3))) as conn:
                row = conn.execute(sql.format(s=self.schema)).fetchone()
        except psycopg.Error:
            return ()
        assert row is not None
        return tuple(row)

    def complete(self) -> int:
        """Folders Box* built (0 while the schema is not made, or PostgreSQL is down)."""
        row = self._one("SELECT count(*) FILTER (WHERE complete AND name LIKE 'Box%') FROM {s}.folders")
        return int(row[0]) if row else 0

    def folders(self) -> str:
        """Each folder's state and rows (said by a failed assertion)."""
        with psycopg.connect(self.url, password=self.password) as conn:
            found = conn.execute(
                "SELECT f.name, f.uidnext, f.highestmodseq, f.messages, f.complete, count(m.id) FROM "
                f"{self.schema}.folders f LEFT JOIN {self.schema}.messages m ON m.folder = f.id GROUP BY f.id ORDER BY f.name"
            ).fetchall()
        return "\n".join(map(str, found))

    def rows(self) -> tuple[int, int]:
        """The messages' rows, and how many distinct (folder, uid) they hold."""
        row = self._one("SELECT count(*), count(DISTINCT (folder, uid)) FROM {s}.messages")
        return (int(row[0]), int(row[1])) if row else (-1, -1)
