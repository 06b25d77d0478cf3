"""An MCP elicitation callback for tests: answers every question the same way and keeps the questions."""

from __future__ import annotations

from typing import Any

from mcp_types import ElicitRequestParams, ElicitResult


def answering(action: str = "accept", confirm: bool = True) -> Any:
    """A callback answering ``action`` (``accept`` with ``confirm``, ``decline`` or ``cancel``); the
    questions it was asked are in its ``asked`` list."""
    asked: list[str] = []

    async def callback(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action=action, content={"confirm": confirm} if action == "accept" else None)

    callback.asked = asked  # type: ignore[attr-defined]
    return callback
