"""Where a test or a benchmark finds an account's index files."""

from __future__ import annotations

from pathlib import Path

from mail_imap_mcp.index.engines.sqlite.location import SUFFIX, default_index_dir


def identity_index_paths(index_dir: Path | None, account_id: str) -> list[Path]:
    """The index files of ``account_id`` of every identity found in the directory (team users' aside)."""
    folder = (index_dir or default_index_dir()).expanduser()
    return sorted(folder.glob(f"{account_id}.*{SUFFIX}"))
