"""The words of the shared state's failures (``[state]``: Redis out of reach)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.state import StateUnavailable


def _state_unavailable(exc: StateUnavailable, call: Any) -> ToolFailure:
    return ToolFailure(
        ErrorCode.UNAVAILABLE,
        f"The state the server instances share cannot be reached ({exc.detail}); nothing was changed. "
        "Try again in a moment; the operator checks [state] redis_url.",
        details={"setting": "redis_url"},
        retryable=True,
    )


STATE_FAILURES: Mapping[type[BaseException], Callable[[Any, Any], ToolFailure]] = {
    StateUnavailable: _state_unavailable,
}
