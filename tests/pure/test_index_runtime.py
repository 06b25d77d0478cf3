"""An account's index in a running server: one lock per index file in a process (issue 35)."""

from __future__ import annotations

from pathlib import Path

from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.index.engines.sqlite.engine import SqliteLocation
from mail_imap_mcp.index.runtime import AccountIndex


def never() -> AccountConnection:
    raise AssertionError("not started: no connection")


def test_indexes_of_one_file_share_one_lock_and_other_files_have_their_own(tmp_path: Path) -> None:
    """An index closed while its sync went on and the one made again on the same file take turns."""
    first = AccountIndex("default", SqliteLocation(tmp_path / "default.sqlite3"), 1000, never)
    again = AccountIndex("default", SqliteLocation(tmp_path / "." / "default.sqlite3"), 1000, never)
    other = AccountIndex("other", SqliteLocation(tmp_path / "other.sqlite3"), 1000, never)
    assert first.lock is again.lock
    assert first.lock is not other.lock
