"""An account of the bundle's form that signs in with the built-in sign-in, on a desktop with no usable
keychain (issue 78 item 8).

The sign-in keeps its refresh token in the OS keychain; with no Secret Service there (no D-Bus session
bus), it cannot sign in. The server says so when it starts, in the form's words, lists the account as
not usable with that problem, and answers every call on it ``auth_failed``, not retryable, with no
browser opened: before, the account was listed as usable, and each call answered a retryable
``auth_failed`` of 700 characters advising ``password_file``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from mail_imap_mcp.config.form import BUNDLE_FORM
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")
#: The bundle form's fields a Microsoft sign-in fills (the password left empty, as the form asks).
SIGN_IN_FORM = {"sign_in": "microsoft", "oauth2_client_id": "00000000-1111-2222-3333-444444444444"}


def form_environment(dovecot: Dovecot, user: str, **fields: str) -> dict[str, str]:
    """The variables Claude Desktop sets from the bundle's form filled with ``fields`` (the server
    ``dovecot``, as ``user``): each field's variable (config/form.py), an empty field left empty."""
    filled = {
        "email_address": "someone@outlook.com",
        "password": "",
        "imap_host": dovecot.host,
        "imap_port": str(dovecot.tls_port),
        "username": user,
        "ca_file": str(dovecot.ca_file),
        **fields,
    }
    return {BUNDLE_FORM[key][0]: value for key, value in filled.items()}


async def test_a_sign_in_without_a_keychain_is_unusable_from_the_start_in_the_forms_words(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    browser_opened = tmp_path / "browser-opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$@" > {browser_opened}\n')
    browser.chmod(0o700)
    # A desktop without a Secret Service: no D-Bus session bus to find one on.
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ["HOME"],
        "DISPLAY": ":0",
        "BROWSER": str(browser),
        **form_environment(dovecot, user, **SIGN_IN_FORM),
    }
    label, variable = "Sign in with (optional)", BUNDLE_FORM["sign_in"][0]
    log = tmp_path / "server.log"
    params = StdioServerParameters(command=SERVER, args=["serve"], env=env)
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            mcp = EnvelopeClient(client)
            (account,) = (await mcp.ok("imap_list_accounts"))["accounts"]
            assert account["usable"] is False
            (problem,) = account["problems"]
            assert (problem["field"], problem["setting"]) == (label, variable)
            assert "keychain" in problem["reason"]
            for tool, arguments in (("imap_list_mailboxes", {}), ("imap_search_messages", {"query": "x"})):
                error = (await mcp.fail(tool, arguments, "auth_failed"))["error"]
                assert error["retryable"] is False
                assert error["details"] == {"account_id": "default", "field": label, "setting": variable}
                assert f'"{label}" ({variable})' in error["message"] and "keychain" in error["message"]
                assert len(error["message"]) < 560, error["message"]
    said = log.read_text()
    assert f"account 'default' cannot be used until \"{label}\" ({variable}) is corrected" in said, said
    assert not browser_opened.exists()
    assert dovecot.password not in json.dumps(said)
