"""The built-in sign-in's browser step in a real browser (issue 48): Debian's headless Chromium, driven by
selenium (tests/support/clients/chromium.py), through node-oidc-provider's login and consent pages to the loopback
listener: for ``mail-imap-mcp login``, and for Claude Desktop's path, an SDK stdio client that declares no
elicitation, whose server opens the browser itself (``BROWSER`` set to that Chromium script) when a call
needs the sign-in; the call after it lists the mailboxes. Dovecot checks the tokens with the provider; the
refresh token goes to a real Secret Service. The sign-in URL reaches no envelope and no log line.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.accounts import config_toml
from tests.support.clients import chromium
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.servers.oidc_provider import OidcProvider, wait_for
from tests.support.shared.login_command import Terminal
from tests.support.shared.login_command import terminal as terminal
from tests.support.shared.sign_in_chromium import CHROMIUM_BROWSER
from tests.support.shared.sign_in_tokens import ACCOUNT, outcomes
from tests.support.shared.sign_in_tokens import keychain as keychain

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed"),
]


@pytest.mark.anyio
async def test_login_signs_in_through_chromium_and_the_account_lists_its_mailboxes(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    done = terminal.run("login", ACCOUNT, BROWSER=CHROMIUM_BROWSER)
    assert done.returncode == 0, done.stderr
    refresh_token = terminal.keychain.load()
    assert refresh_token is not None and refresh_token not in done.stderr + done.stdout
    assert f"{ACCOUNT}: signed in as {terminal.user}" in terminal.run("status").stdout
    (envelope,) = await outcomes(terminal.settings)
    assert envelope["success"] is True, envelope


def test_consent_cancelled_in_chromium_stores_nothing(oidc: OidcProvider, terminal: Terminal) -> None:
    before = oidc.token_requests
    done = terminal.run("login", BROWSER=CHROMIUM_BROWSER, OIDC_TEST_DECLINE="1")
    assert done.returncode == 1
    assert "did not grant access (access_denied" in done.stderr, done.stderr
    assert terminal.keychain.load() is None and oidc.token_requests == before


@pytest.mark.anyio
async def test_claude_desktops_path_the_server_opens_chromium_and_the_next_call_lists_mailboxes(
    oidc: OidcProvider, terminal: Terminal, tmp_path: Path
) -> None:
    config = tmp_path / "desktop.toml"
    config.write_text(config_toml({ACCOUNT: terminal.settings}))
    signed_in, log = tmp_path / "browser-done.txt", tmp_path / "server.log"
    env = {
        "PATH": os.environ["PATH"],
        **terminal.secret_service.environment(),
        "BROWSER": CHROMIUM_BROWSER,
        "OIDC_TEST_LOGIN": terminal.user,
        "OIDC_TEST_DONE": str(signed_in),
        "MAIL_IMAP_MCP_LOG_LEVEL": "DEBUG",
    }  # no DISPLAY: BROWSER names the browser
    params = StdioServerParameters(command=SERVER, args=["serve", "--config", str(config)], env=env)
    envelopes: list[dict[str, Any]] = []
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:  # declares no elicitation
            mcp = EnvelopeClient(client)
            first = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
            details = first["error"]["details"]
            assert details["reason"] == "sign_in_required" and details["browser_opened"] is True, first
            # A bundle user has no terminal and needs none: the page open in the browser is the way.
            said = json.dumps(first)
            assert "mail-imap-mcp login" not in said and "terminal" not in said, first
            assert "sign-in page open to them" in first["error"]["message"], first
            wait_for(signed_in.exists, within=120)  # Chromium signed in and consented
            page = signed_in.read_text()
            assert "Signed in to mail-imap-mcp" in page and "terminal" not in page, page
            assert "return to your conversation with the assistant" in page, page
            listed = await mcp.ok("imap_list_mailboxes")
            assert "INBOX" in {box["name"] for box in listed["mailboxes"]}
            envelopes += [first, listed]
    stored = terminal.keychain.load()
    assert stored is not None
    logged = log.read_text()
    assert f"sign-in attempt of account '{ACCOUNT}' ended: signed in" in logged
    written = logged + json.dumps(envelopes)
    assert f"{oidc.issuer}/auth" not in written  # the sign-in URL: in no envelope, no log line
    assert stored not in written
