"""The choice of the index engine, made once by the application root (``app.py``, ``index_cli.py``)."""

from __future__ import annotations

from mail_imap_mcp.config import Config
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.sqlite_engine import SqliteEngine


def open_engine(config: Config) -> IndexEngine:
    """The engine of ``config``'s indexes."""
    return SqliteEngine(config.server.index_dir)
