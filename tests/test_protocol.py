"""Wire-level contract: the tools/list snapshot, schemas clients can consume, generated docs in sync."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from mail_imap_mcp.config import Config
from mail_imap_mcp.reference import DOCS
from mail_imap_mcp.server import build_server

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parent.parent
SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list.json"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"

OFFLINE = Config.model_validate(
    {"accounts": {"default": {"host": "127.0.0.1", "username": "u", "password_env": "UNUSED_PASSWORD"}}}
)


async def tools_wire() -> list[dict[str, Any]]:
    async with Client(build_server(OFFLINE)) as client:
        listed = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


async def test_tools_list_matches_the_snapshot() -> None:
    wire = await tools_wire()
    text = json.dumps(wire, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if UPDATE or not SNAPSHOT.exists():
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert text == SNAPSHOT.read_text(encoding="utf-8"), "tools/list changed: review, then UPDATE_SNAPSHOTS=1"


async def test_every_tool_is_read_only_titled_and_has_flat_input_and_object_output() -> None:
    wire = await tools_wire()
    assert [t["name"] for t in wire] == [
        "imap_list_accounts",
        "imap_list_mailboxes",
        "imap_search_messages",
        "imap_get_message",
        "imap_get_message_raw",
    ]
    for tool in wire:
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["annotations"]["title"] == tool["title"]
        assert len(tool["description"]) > 80
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        text = json.dumps(schema)
        for union in ("anyOf", "oneOf", "allOf", "$ref"):
            assert union not in text, f"{tool['name']} inputSchema uses {union}"
        assert tool["outputSchema"]["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])


@pytest.mark.parametrize("name", sorted(DOCS))
def test_generated_docs_are_up_to_date(name: str) -> None:
    expected = DOCS[name]() + "\n"
    path = ROOT / "docs" / name
    if UPDATE:
        path.write_text(expected, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == expected, (
        f"docs/{name} is stale: run python -m mail_imap_mcp.reference"
    )
