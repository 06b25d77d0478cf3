"""The choice of the index engine, made once by the application root (``app.py``, ``cli/index.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mail_imap_mcp.config import Config, ConfigError
from mail_imap_mcp.config.installation import locked_install
from mail_imap_mcp.credentials.secrets import index_password

if TYPE_CHECKING:
    from mail_imap_mcp.index.engine import IndexEngine


def open_engine(config: Config) -> IndexEngine:
    """The engine of ``config``'s indexes (``[index] index_engine``): SQLite files in ``[server]
    index_dir`` (with a Tantivy index of their text beside each for ``sqlite+tantivy``), or the PostgreSQL database of ``[index] index_url``; :class:`ConfigError` naming the
    setting when its driver is missing or its password cannot be read."""
    settings = config.index
    # Each engine's modules load with it, when it is first used (a server keeping no index never loads one).
    if settings.index_engine == "sqlite":
        from mail_imap_mcp.index.engines.sqlite.engine import SqliteEngine

        return SqliteEngine(config.server.index_dir)
    if settings.index_engine == "sqlite+tantivy":
        try:
            from mail_imap_mcp.index.engines.tantivy.engine import TantivyEngine
        except ImportError:
            raise ConfigError(_missing_extra("sqlite+tantivy", "tantivy")) from None
        return TantivyEngine(config.server.index_dir)
    password = index_password(settings)
    try:
        from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine
    except ImportError:
        raise ConfigError(_missing_extra("postgresql", "postgres")) from None
    return PostgresEngine(settings, password)


def _missing_extra(engine: str, extra: str) -> str:
    return (
        f'[index] index_engine = "{engine}" needs the {extra} extra, which is not installed: install it '
        f"with {locked_install(f'requirements-{extra}.lock')}"
    )
