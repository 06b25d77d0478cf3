"""The whole tool surface a model reads, in bytes (``envelope/surface.py``'s measure of one tool, summed):
what tests/pure/test_tool_surface.py holds to its budgets and ``scripts/token-report`` prints."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mail_imap_mcp.envelope.surface import tool_bytes


def surface_bytes(instructions: str, tools: Iterable[Mapping[str, Any]]) -> tuple[int, dict[str, int]]:
    """The whole surface in bytes, and each tool's share."""
    per_tool = {tool["name"]: tool_bytes(tool) for tool in tools}
    return len(instructions.encode()) + sum(per_tool.values()), per_tool
