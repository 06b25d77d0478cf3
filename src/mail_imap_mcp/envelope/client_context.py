"""What the MCP SDK's context of a tool call says of its client: whether it can be asked (elicitation),
whether it is asked in the call's result (a protocol of 2026-07-28 or later), whether it asked for progress,
and how progress reaches it. Read by the envelope tool (:mod:`.mcp`) when a call starts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio.from_thread
from mcp_types.version import is_version_at_least

from mail_imap_mcp.envelope.user_page import INPUT_REQUIRED_VERSION

log = logging.getLogger("mail_imap_mcp.calls")


def progress_sender(context: Any) -> Callable[[int, int, str], None]:
    """``report(done, total, message)``: a progress notification to the client of ``context``."""

    def report(done: int, total: int, message: str) -> None:
        try:  # called from the handler's worker thread
            anyio.from_thread.run(context.report_progress, done, total, message or None)
        except Exception:
            log.debug("progress notification not sent", exc_info=True)

    return report


def asks_in_result(context: Any) -> bool:
    """Whether this call's protocol asks the user through the result (no request back to the client)."""
    version = getattr(context, "protocol_version", None)
    return isinstance(version, str) and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def progress_asked(context: Any) -> bool:
    """Whether the call carries a progressToken: in its ``_meta``, or as the SDK's dispatch context holds
    it (a JSON-RPC request's token; an in-process client's progress callback, which has no token)."""
    try:
        request = context.request_context
    except (AttributeError, ValueError):  # no request context
        return False
    meta = getattr(request, "meta", None)
    if isinstance(meta, dict) and (meta.get("progressToken") or meta.get("progress_token")) is not None:
        return True
    dispatch = getattr(getattr(request, "session", None), "_request_outbound", None)
    for _ in range(4):  # the SDK wraps its dispatch contexts; a few layers at most
        if dispatch is None:
            break
        if getattr(dispatch, "_progress_token", None) is not None or getattr(dispatch, "_on_progress", None):
            return True
        dispatch = getattr(dispatch, "_inner", None)
    return False


def can_elicit(context: Any) -> bool:
    """Whether the client of ``context`` can ask its user (it declared elicitation)."""
    capabilities = getattr(context, "client_capabilities", None) if context is not None else None
    return getattr(capabilities, "elicitation", None) is not None
