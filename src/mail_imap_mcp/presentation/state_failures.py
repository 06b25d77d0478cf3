"""The words of the shared state's failures (``[state]``: Redis out of reach)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.state import StateUnavailable, UsedMarkersFull


def _state_unavailable(exc: StateUnavailable, call: Any) -> ToolFailure:
    if exc.setting == "state_dir":
        return ToolFailure(
            ErrorCode.UNAVAILABLE,
            f"The server's record of sends cannot be used ({exc.detail}); nothing was changed or sent. The "
            "user checks that [server] state_dir is a directory they can write.",
            details={"setting": "state_dir"},
            retryable=True,
        )
    return ToolFailure(
        ErrorCode.UNAVAILABLE,
        f"The state the server instances share cannot be reached ({exc.detail}); nothing was changed. "
        "Try again in a moment; the operator checks [state] redis_url.",
        details={"setting": "redis_url"},
        retryable=True,
    )


def _used_markers_full(exc: UsedMarkersFull, call: Any) -> ToolFailure:
    remembered = "each remembered until it expires so that it works only once; nothing was changed"
    if exc.per_owner:
        return ToolFailure(
            ErrorCode.LIMIT_EXCEEDED,
            f"You confirmed {exc.limit} requests with tokens in the last minutes, the most one user may on "
            f"this server process ({remembered}). Try again in a few minutes.",
            details={"limit": exc.limit, "per": "user"},
            retryable=True,
        )
    return ToolFailure(
        ErrorCode.LIMIT_EXCEEDED,
        f"This server process already holds {exc.limit} confirmation tokens used in the last minutes "
        f"({remembered}). Try again in a few minutes, or share the state of the instances in Redis "
        "([state] redis_url).",
        details={"limit": exc.limit, "per": "process"},
        retryable=True,
    )


STATE_FAILURES: Mapping[type[BaseException], Callable[[Any, Any], ToolFailure]] = {
    StateUnavailable: _state_unavailable,
    UsedMarkersFull: _used_markers_full,
}
