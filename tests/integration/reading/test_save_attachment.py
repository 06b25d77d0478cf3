"""Saving attachments to the user's ``download_dir`` (issue 60 item 4) through a real MCP client against
Dovecot: the saved bytes are the part's decoded bytes, a second save gets a numbered name, a hostile
name stays inside the folder, the argument exists only where the folder is set, and the HTTP transport
refuses to start with it."""

from __future__ import annotations

import email
import email.policy
import hashlib
import json
import os
import random
import stat
import subprocess
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from tests.support.accounts import account_settings, config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.mail.mail_state import flags_of
from tests.support.mail.mailgen import crlf
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import SERVER

pytestmark = pytest.mark.anyio

INVOICE = random.Random(60).randbytes(300_000)
SCRIPT = b"#!/bin/sh\necho the sender's script\n"


def _message() -> bytes:
    """An invoice from Acme with a PDF, and a script the sender named "../../.bashrc"."""
    text = mailgen.plain_message(
        "Invoice 2026-11", "Your invoice is attached.\n", from_="Acme <billing@acme.example>"
    )
    msg = email.message_from_bytes(text, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    msg.add_attachment(INVOICE, maintype="application", subtype="pdf", filename="Invoice 2026-11.pdf")
    msg.add_attachment(SCRIPT, maintype="application", subtype="x-sh", filename="../../.bashrc")
    return crlf(msg)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _attachments(mcp: EnvelopeClient) -> tuple[str, dict[str, str]]:
    (summary,) = (await mcp.ok("imap_search_messages", {"snippet_chars": 0}))["messages"]
    message = (await mcp.ok("imap_get_message", {"message_id": summary["message_id"]}))["message"]
    return summary["message_id"], {item["filename"]: item["part_id"] for item in message["attachments"]}


async def _save_argument_listed(mcp: EnvelopeClient) -> bool:
    listed = await mcp.client.list_tools()
    (tool,) = [tool for tool in listed.tools if tool.name == "imap_get_attachment"]
    return "save" in tool.input_schema["properties"]


async def test_an_attachment_is_saved_byte_exact_and_never_over_another_file(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    dovecot.seed(user, "INBOX", [_message()])
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    flags_before = flags_of(dovecot, user, "INBOX")
    config = make_config({"default": account_settings(dovecot, user)}, download_dir=str(downloads))
    async for mcp in open_client(config):
        assert await _save_argument_listed(mcp)
        message_id, parts = await _attachments(mcp)
        first = await mcp.call(
            "imap_get_attachment",
            {"message_id": message_id, "part_id": parts["Invoice 2026-11.pdf"], "save": True},
        )
        again = await mcp.ok(
            "imap_get_attachment",
            {"message_id": message_id, "part_id": parts["Invoice 2026-11.pdf"], "save": True},
        )
        hostile = await mcp.ok(
            "imap_get_attachment", {"message_id": message_id, "part_id": parts[".bashrc"], "save": True}
        )
    assert first["success"] and any("untrusted" in warning for warning in first["meta"]["warnings"])
    saved = first["data"]
    assert saved["saved_path"] == str(downloads / "Invoice 2026-11.pdf")
    assert saved["size_bytes"] == len(INVOICE) and saved["marked_downloaded"] is False  # Linux has no mark
    assert "saved_path" in saved["untrusted_content"]["fields"]
    assert _sha256(Path(saved["saved_path"]).read_bytes()) == _sha256(INVOICE)
    assert stat.S_IMODE(os.stat(saved["saved_path"]).st_mode) == 0o600
    assert again["saved_path"] == str(downloads / "Invoice 2026-11 (2).pdf")
    assert _sha256(Path(again["saved_path"]).read_bytes()) == _sha256(INVOICE)
    assert hostile["saved_path"] == str(downloads / "bashrc")
    assert Path(hostile["saved_path"]).read_bytes() == SCRIPT
    # Nothing outside the folder, nothing overwritten, and the message not even marked as read.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["Downloads"]
    assert sorted(path.name for path in downloads.iterdir()) == [
        "Invoice 2026-11 (2).pdf",
        "Invoice 2026-11.pdf",
        "bashrc",  # the message names it "../../.bashrc": its folder dropped, its dot too
    ]
    assert flags_of(dovecot, user, "INBOX") == flags_before


async def test_without_a_download_dir_save_is_not_listed_and_is_refused_naming_the_setting(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    dovecot.seed(user, "INBOX", [_message()])
    async for mcp in open_client(make_config({"default": account_settings(dovecot, user)})):
        assert not await _save_argument_listed(mcp)
        message_id, parts = await _attachments(mcp)
        arguments: dict[str, Any] = {"message_id": message_id, "part_id": parts["Invoice 2026-11.pdf"]}
        envelope = await mcp.fail("imap_get_attachment", {**arguments, "save": True}, "permission_denied")
        assert envelope["error"]["details"]["setting"] == "download_dir"
        assert (await mcp.ok("imap_get_attachment", {**arguments, "mode": "bytes"}))["returned_bytes"] > 0


async def test_regression_a_missing_download_dir_is_made_0700_where_its_parent_exists_else_named(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    """Every save into a download_dir that did not exist failed "No such file or directory" (issue 78)."""
    dovecot.seed(user, "INBOX", [_message()])
    downloads, nowhere = tmp_path / "Downloads", tmp_path / "missing" / "Downloads"
    settings = account_settings(dovecot, user)
    async for mcp in open_client(make_config({"default": settings}, download_dir=str(downloads))):
        message_id, parts = await _attachments(mcp)
        arguments = {"message_id": message_id, "part_id": parts["Invoice 2026-11.pdf"], "save": True}
        saved = await mcp.ok("imap_get_attachment", arguments)
    assert stat.S_IMODE(downloads.stat().st_mode) == 0o700
    assert saved["saved_path"] == str(downloads / "Invoice 2026-11.pdf")
    assert _sha256(Path(saved["saved_path"]).read_bytes()) == _sha256(INVOICE)
    async for mcp in open_client(make_config({"default": settings}, download_dir=str(nowhere))):
        refused = await mcp.fail("imap_get_attachment", arguments, "unavailable")
    assert refused["error"]["details"]["setting"] == "download_dir"
    message = refused["error"]["message"]
    assert message.startswith("download_dir") and f"nor does the folder {nowhere.parent}" in message
    assert sorted(path.name for path in tmp_path.iterdir()) == ["Downloads"]


@pytest.mark.parametrize(
    ("server", "named"),
    [
        ({"download_dir": "/srv/downloads"}, "download_dir in [server]"),
        ({"attachment_dirs": ["/srv/files"]}, "attachment_dirs in [server]"),
    ],
)
def test_the_http_transport_refuses_to_start_with_the_users_folders(
    dovecot: Dovecot, user: str, tmp_path: Path, server: dict[str, Any], named: str
) -> None:
    config = tmp_path / "config.toml"
    table = "".join(f"{key} = {json.dumps(value)}\n" for key, value in server.items())
    config.write_text(config_toml({"default": account_settings(dovecot, user)}) + f"\n[server]\n{table}")
    done = subprocess.run(
        [SERVER, "serve", "--config", str(config), "--transport", "http", "--port", "0"],
        capture_output=True,
        timeout=patient(60),
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    said = done.stderr.decode()
    assert done.returncode == 2, said
    assert named in said and "cannot be used over the HTTP transport" in said
    assert "serving" not in said
