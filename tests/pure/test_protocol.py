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
from mail_imap_mcp.envelope.schemas import OUTPUT_SCHEMAS_FILE
from mail_imap_mcp.reference import DOCS, README_TOOLS_MARKERS, output_schemas, with_readme_tools_table
from mail_imap_mcp.server import build_server
from mail_imap_mcp.tools.registry import TOOLS
from tests.support.shared.protocol import _ACCOUNTS, OFFLINE, OFFLINE_WRITES

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parents[2]
SNAPSHOT = ROOT / "tests" / "snapshots" / "tools_list.json"
#: tools/list where some account allows writes: the write tools (and their helpers) are listed too.
SNAPSHOT_WRITES = ROOT / "tests" / "snapshots" / "tools_list_writes.json"
#: tools/list where download_dir is set: imap_get_attachment lists ``save``, so it is no longer read-only.
SNAPSHOT_SAVING = ROOT / "tests" / "snapshots" / "tools_list_download_dir.json"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"

OFFLINE_SAVING = Config.model_validate({"accounts": _ACCOUNTS, "server": {"download_dir": "/srv/downloads"}})

READ_TOOLS = [
    "imap_list_accounts",
    "imap_list_mailboxes",
    "imap_search_messages",
    "imap_get_message",
    "imap_get_thread",
    "imap_get_message_raw",
    "imap_get_attachment",
    "imap_get_changes",
]


async def tools_wire(config: Config = OFFLINE) -> list[dict[str, Any]]:
    async with Client(build_server(config)) as client:
        listed = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


@pytest.mark.parametrize(
    ("config", "snapshot"),
    [(OFFLINE, SNAPSHOT), (OFFLINE_WRITES, SNAPSHOT_WRITES), (OFFLINE_SAVING, SNAPSHOT_SAVING)],
    ids=["read_only", "writes", "download_dir"],
)
async def test_tools_list_matches_the_snapshot(config: Config, snapshot: Path) -> None:
    wire = await tools_wire(config)
    text = json.dumps(wire, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if UPDATE or not snapshot.exists():
        snapshot.write_text(text, encoding="utf-8")
    assert text == snapshot.read_text(encoding="utf-8"), (
        f"tools/list changed ({snapshot.name}): review, then UPDATE_SNAPSHOTS=1"
    )


async def test_write_tools_are_listed_only_when_writes_are_on_and_say_they_write() -> None:
    assert [t["name"] for t in await tools_wire()] == READ_TOOLS
    wire = {tool["name"]: tool for tool in await tools_wire(OFFLINE_WRITES)}
    assert set(READ_TOOLS) < set(wire)
    flags = wire["imap_update_message_flags"]["annotations"]
    assert (flags["readOnlyHint"], flags["destructiveHint"], flags["idempotentHint"]) == (False, False, True)


@pytest.mark.parametrize(("config", "read_only"), [(OFFLINE, True), (OFFLINE_SAVING, False)])
async def test_a_tool_listing_an_argument_that_saves_a_file_is_not_read_only(
    config: Config, read_only: bool
) -> None:
    """MCP's readOnlyHint means "does not modify its environment": imap_get_attachment's ``save`` writes
    a new file (never overwriting one) where download_dir lists it."""
    wire = {tool["name"]: tool for tool in await tools_wire(config)}
    hints = wire["imap_get_attachment"]["annotations"]
    assert ("save" in wire["imap_get_attachment"]["inputSchema"]["properties"]) is not read_only
    assert (hints["readOnlyHint"], hints["destructiveHint"], hints["idempotentHint"]) == (
        read_only,
        False,
        read_only,
    )
    assert all(
        tool["annotations"]["readOnlyHint"] for name, tool in wire.items() if name != "imap_get_attachment"
    )


@pytest.mark.parametrize("config", [OFFLINE, OFFLINE_WRITES], ids=["read_only", "writes"])
async def test_every_tool_is_titled_and_has_flat_input_and_object_output(config: Config) -> None:
    wire = await tools_wire(config)
    for tool in wire:
        if tool["name"] in READ_TOOLS:
            assert tool["annotations"]["readOnlyHint"] is True
        assert tool["annotations"]["title"] == tool["title"]
        assert len(tool["description"]) > 60
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        text = json.dumps(schema)
        for union in ("anyOf", "oneOf", "allOf", "$ref"):
            assert union not in text, f"{tool['name']} inputSchema uses {union}"
        assert tool["outputSchema"]["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])


def test_the_output_schemas_generated_ahead_match_the_models() -> None:
    """The server serves the outputSchemas of envelope/output_schemas.json (generating them takes a tenth
    of its startup): the file must be what the models give now."""
    expected = output_schemas()
    if UPDATE:
        OUTPUT_SCHEMAS_FILE.write_text(expected, encoding="utf-8")
    assert OUTPUT_SCHEMAS_FILE.read_text(encoding="utf-8") == expected, (
        f"{OUTPUT_SCHEMAS_FILE.name} is stale: run python -m mail_imap_mcp.reference"
    )


def test_readme_tool_table_is_generated_from_the_tool_declarations() -> None:
    """README's table of tools is what the declarations say (every tool, sending included): a tool added
    or a description changed without regenerating fails here."""
    path = ROOT / "README.md"
    readme = path.read_text(encoding="utf-8")
    assert all(marker in readme for marker in README_TOOLS_MARKERS), "README.md lacks the tool-table markers"
    expected = with_readme_tools_table(readme)
    if UPDATE:
        path.write_text(expected, encoding="utf-8")
    assert readme == expected, "README.md's tool table is stale: run python -m mail_imap_mcp.reference"
    assert "| `imap_send_draft` | *(send)* " in expected


def test_readme_and_the_draft_tool_say_that_sending_exists() -> None:
    """Sending landed: neither README's opening nor its environment paragraph nor imap_save_draft's
    docs may still say that the server never sends or that no tool does."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    opening = readme.split("\n\n")[1]
    assert "never send" not in opening and "send a saved draft" in opening
    assert "which\nno tool does yet" not in readme and "no tool does yet" not in readme.replace("\n", " ")
    details = next(spec for spec in TOOLS if spec.name == "imap_save_draft").details
    assert "Nothing is ever sent" not in details and "imap_send_draft" in details


def test_the_draft_tool_says_its_drafts_carry_attachments_and_bcc() -> None:
    """Drafts carry attachments and Bcc: imap_save_draft's words (the line a model reads and its details)
    no longer call them plain-text drafts."""
    spec = next(spec for spec in TOOLS if spec.name == "imap_save_draft")
    for words in (spec.description, spec.details):
        assert "plain-text draft" not in words and "plain-text email draft" not in words
        assert "attachments" in words and "Bcc" in words


@pytest.mark.parametrize("name", sorted(DOCS))
def test_generated_docs_are_up_to_date(name: str) -> None:
    expected = DOCS[name]() + "\n"
    path = ROOT / "docs" / name
    if UPDATE:
        path.write_text(expected, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == expected, (
        f"docs/{name} is stale: run python -m mail_imap_mcp.reference"
    )
