"""Whether the application lists writes, as ``capabilities.WRITING`` declares them: where any account
allows them (a write's gate is its tool's own capability's, run by ``tool_calls.ToolCall``)."""

from __future__ import annotations

from mail_imap_mcp.capabilities import WRITING
from mail_imap_mcp.config import Config
from mail_imap_mcp.state import ANONYMOUS


def any_account_writes(full_config: Config) -> bool:
    """Whether any account of ``full_config`` allows writes (otherwise write tools are not listed)."""
    return WRITING.on(full_config, ANONYMOUS)
