"""What a model reads of a server before its first call, and the budget it must stay within.

A client puts the server's ``instructions`` and, for every listed tool, its name, description and
``inputSchema`` into the model's context on every turn of every conversation: those bytes are paid for
whether a tool is called or not. Measured as the UTF-8 length of the instructions plus each tool's
``{"name", "description", "inputSchema"}`` in compact JSON (``scripts/token-report`` prints it). Each
capability declares its share of the budget (``capabilities.py``); a test holds every configuration to the
sum of the shares it turns on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: Rough bytes per token of this English-and-JSON text, for the estimate beside the bytes.
BYTES_PER_TOKEN = 4


def tool_bytes(tool: Mapping[str, Any]) -> int:
    """What a model reads of one listed tool (a ``tools/list`` entry as JSON)."""
    read = {"name": tool["name"], "description": tool["description"], "inputSchema": tool["inputSchema"]}
    return len(json.dumps(read, separators=(",", ":"), ensure_ascii=False).encode())
