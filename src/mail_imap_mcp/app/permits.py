"""Whether the application permits writes, as ``capabilities.WRITING`` declares them: listed where any
account allows them, gated where a write tool takes its connection."""

from __future__ import annotations

from mail_imap_mcp.capabilities import WRITING
from mail_imap_mcp.config import Config
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.state import ANONYMOUS


def any_account_writes(full_config: Config) -> bool:
    """Whether any account of ``full_config`` allows writes (otherwise write tools are not listed)."""
    return WRITING.on(full_config, ANONYMOUS)


def permitted_for_writes(config: Config, connection: AccountConnection) -> AccountConnection:
    """``connection`` where ``config`` (the caller's accounts) allows it writes; ``permission_denied``
    naming the setting otherwise."""
    WRITING.gate(config, connection.account_id)
    return connection
