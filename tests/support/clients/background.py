"""A call's answer once what it waits for ended: the answer itself, or, where it handed back a background
operation (``data.background``: the user deciding on the approval page, a long write), that operation
polled with ``imap_get_operation`` until it ended, as the call would have answered."""

from __future__ import annotations

from typing import Any

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.patience import eventually_async


async def decided(mcp: EnvelopeClient, answer: dict[str, Any], *, within: float = 60) -> dict[str, Any]:
    """``answer``, or its background operation's end: ``success``, ``data`` (the operation's result),
    ``error``, ``summary`` and its ``state``."""
    background = (answer.get("data") or {}).get("background")
    if background is None:
        return answer

    async def ended() -> dict[str, Any] | None:
        detail = await mcp.ok("imap_get_operation", {"operation_id": background["operation_id"]})
        return None if detail["operation"]["state"] in ("accepted", "running") else detail

    detail = await eventually_async(ended, within=within, interval=0.1, what="the background operation's end")
    return {
        "success": detail["error"] is None,
        "data": detail["result"],
        "error": detail["error"],
        "summary": detail["summary"],
        "state": detail["operation"]["state"],
    }
