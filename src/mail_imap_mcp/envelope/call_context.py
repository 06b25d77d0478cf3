"""What the tool call being handled hands the layers below it, without the MCP SDK: its request id (for
logs) and where its progress goes. The MCP adapter (:mod:`mail_imap_mcp.envelope.mcp`) sets them; the
services and operations read them, and so import no protocol (the ``index`` command, which runs them
outside any call, starts without the SDK's 0.7 CPU-seconds of imports)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

#: The request id of the tool call being handled (for logs written below the envelope layer).
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)
#: For the handler's thread: ``report(done, total, message)`` sends the client a progress notification
#: for the tool call being handled (a no-op when the client asked for none).
progress_reporter: ContextVar[Callable[[int, int, str], None] | None] = ContextVar(
    "progress_reporter", default=None
)
