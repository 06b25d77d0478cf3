"""The JSON ``mail-imap-mcp setup`` prints for Claude Desktop, VS Code and Cursor, checked against each client's
documented format: tests/data/mcp-clients/*.json hold the documentation's address, the date it was read, what it
says and a JSON Schema of the fields it documents (the command Claude Code gets is run by the real CLI:
tests/integration/setup/test_setup_claude_code.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mail_imap_mcp.cli.setup_clients import snippets

REFERENCES = Path(__file__).resolve().parents[1] / "data" / "mcp-clients"
CONFIG = Path("/home/u/.config/mail-imap-mcp/config.toml")
COMMAND = ["/opt/mim/bin/mail-imap-mcp"]
# The line each client's block follows in what setup prints.
HEADINGS = {
    "claude-desktop": "claude_desktop_config.json:",
    "vscode": "'MCP: Open User Configuration'):",
    "cursor": "Cursor: add this to ~/.cursor/mcp.json",
}


def reference(client: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((REFERENCES / f"{client}.json").read_text(encoding="utf-8"))
    return loaded


def printed_block(text: str, client: str) -> dict[str, Any]:
    """The JSON printed after the client's heading, up to the blank line that ends it."""
    after = text.split(HEADINGS[client], 1)[1].split("\n", 1)[1]
    block: dict[str, Any] = json.loads(after.split("\n\n", 1)[0])
    return block


@pytest.mark.parametrize("client", sorted(HEADINGS))
def test_each_client_reference_names_its_source_and_accepts_the_documented_example(client: str) -> None:
    ref = reference(client)
    assert ref["source"].startswith("https://") and re.fullmatch(r"\d{4}-\d{2}-\d{2}", ref["read"])
    jsonschema.validate(ref["example"], ref["schema"])


@pytest.mark.parametrize("client", sorted(HEADINGS))
@pytest.mark.parametrize("password_env", [None, "MAIL_PASSWORD_WORK"], ids=["keychain", "environment"])
def test_setup_prints_each_clients_json_in_its_documented_format(
    client: str, password_env: str | None
) -> None:
    printed = printed_block(snippets(CONFIG, password_env, command=COMMAND, platform="linux"), client)
    jsonschema.validate(printed, reference(client)["schema"])
    (entry,) = (printed.get("mcpServers") or printed["servers"]).values()
    assert [entry["command"], *entry["args"]] == [*COMMAND, "serve", "--config", str(CONFIG)]
    assert ("env" in entry) == (password_env is not None)


def test_the_vscode_password_is_asked_by_an_input_the_snippet_declares() -> None:
    printed = printed_block(snippets(CONFIG, "MAIL_PASSWORD_WORK", command=COMMAND), "vscode")
    declared = {item["id"]: item for item in printed["inputs"]}
    value = printed["servers"]["mail"]["env"]["MAIL_PASSWORD_WORK"]
    (used,) = re.fullmatch(r"\$\{input:([^}]+)\}", value).groups()  # type: ignore[union-attr]
    assert declared[used]["type"] == "promptString" and declared[used]["password"] is True


@pytest.mark.parametrize(
    ("platform", "documented"),
    [
        ("darwin", "~/Library/Application Support/Claude/claude_desktop_config.json"),
        ("win32", "%APPDATA%\\Claude\\claude_desktop_config.json"),
    ],
)
def test_the_claude_desktop_file_is_where_the_documentation_says(platform: str, documented: str) -> None:
    assert documented in reference("claude-desktop")["documented"]
    text = snippets(CONFIG, command=COMMAND, platform=platform)
    assert documented.removeprefix("~") + ":\n" in text
