"""The choice of the index engine, made once by the application root (``app.py``, ``index_cli.py``)."""

from __future__ import annotations

from mail_imap_mcp.config import Config, ConfigError
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.sqlite_engine import SqliteEngine


def open_engine(config: Config) -> IndexEngine:
    """The engine of ``config``'s indexes (``[index] index_engine``): SQLite files in ``[server]
    index_dir`` (with a Tantivy index of their text beside each for ``sqlite+tantivy``), or the PostgreSQL database of ``[index] index_url``; :class:`ConfigError` naming the
    setting when its driver is missing or its password cannot be read."""
    settings = config.index
    if settings.index_engine == "sqlite":
        return SqliteEngine(config.server.index_dir)
    if settings.index_engine == "sqlite+tantivy":
        try:
            from mail_imap_mcp.index.tantivy_engine import TantivyEngine
        except ImportError as exc:
            raise ConfigError(
                '[index] index_engine = "sqlite+tantivy" needs the tantivy extra: '
                f"pip install 'mail-imap-mcp[tantivy]' ({exc})"
            ) from None
        return TantivyEngine(config.server.index_dir)
    password = settings.password()
    try:
        from mail_imap_mcp.index.postgres_engine import PostgresEngine
    except ImportError as exc:
        raise ConfigError(
            '[index] index_engine = "postgresql" needs the postgres extra: '
            f"pip install 'mail-imap-mcp[postgres]' ({exc})"
        ) from None
    return PostgresEngine(settings, password)
