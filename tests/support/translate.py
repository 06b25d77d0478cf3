"""A connection's ``translate`` for tests that drive an ``AccountConnection`` without the tool runner and
want the registry's words (no connection of the server has one: the architecture test says so)."""

from __future__ import annotations

from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.presentation.failures import tool_failure


def as_tool_failure(exc: MailError) -> Exception:
    """``exc`` as its envelope failure."""
    return tool_failure(exc, None) or exc
