"""No OAuth token anywhere but the keychain (issue 48): a whole run as a user makes it, ``login``, then
the server over stdio at DEBUG with access tokens that expire mid-session (refreshed, the refresh token
rotated each time), then ``status`` and ``logout``, each process with its own home, temporary directory
and captured output. Every file the run wrote (the home with its config, state and data directories,
the temporary directory, the config file, every captured log) is searched for every access and refresh
token the provider issued (as it logged them), also as the base64 of the SASL messages that carry an
access token; the keychain (GNOME Keyring's files, encrypted) alone may hold them.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from mail_imap_mcp.net.sasl import oauth_initial_response
from tests.support.accounts import config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail.mailgen import make_message
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import OidcProvider, browser_signing_in_as, wait_for
from tests.support.servers.secret_service import SecretService
from tests.support.shared.sign_in_secrets import files_under, holding
from tests.support.shared.sign_in_tokens import ACCOUNT, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


@pytest.mark.anyio
async def test_no_file_or_log_of_a_run_holds_a_token_but_the_keychain(
    tmp_path: Path,
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    secret_service: SecretService,
    keychain: KeychainRefreshTokens,
) -> None:
    user = oidc_dovecot.new_user()
    oidc_dovecot.seed(user, "INBOX", [make_message(number) for number in range(3)])
    config, temp, logs = tmp_path / "config.toml", tmp_path / "tmp", tmp_path / "logs"
    temp.mkdir()
    logs.mkdir()
    settings = sign_in_account(oidc_dovecot, user, oidc)
    config.write_text(config_toml({ACCOUNT: settings}))
    env = {
        **secret_service.environment(),
        "PATH": os.environ["PATH"],
        "TMPDIR": str(temp),
        "MAIL_IMAP_MCP_LOG_LEVEL": "DEBUG",
        **browser_signing_in_as(user),
    }

    def run(*args: str) -> None:
        with (logs / f"{args[0]}.out").open("w") as out, (logs / f"{args[0]}.err").open("w") as err:
            done = subprocess.run(
                [SERVER, *args, "--config", str(config)],
                env=env,
                stdout=out,
                stderr=err,
                timeout=patient(120),
            )
        assert done.returncode == 0, (logs / f"{args[0]}.err").read_text()

    run("login")
    oidc.set_access_token_ttl(10)  # under the 30 s a login wants left: each login refreshes
    try:
        # The server's stderr, its log, goes to a file as a client's log file would keep it.
        params = StdioServerParameters(
            command="sh",
            args=["-c", 'exec "$0" serve --config "$1" 2>"$2"', SERVER, str(config), str(logs / "serve.err")],
            env=env,
        )
        async with Client(params) as client:
            mcp = EnvelopeClient(client)
            envelopes = [await mcp.call("imap_list_mailboxes")]
            for word in ("alpha", "beta"):
                oidc.move_clock(
                    11
                )  # the access token expired (no wait): the next login refreshes and rotates
                oidc_dovecot.kick(user)
                found = await mcp.call("imap_search_messages", {"mailbox": "INBOX", "query": word})
                envelopes.append(found)
            envelopes.append(await mcp.call("imap_search_messages", {"mailbox": "INBOX"}))
            (first, *_) = envelopes[-1]["data"]["messages"]
            envelopes.append(await mcp.call("imap_get_message", {"message_id": first["message_id"]}))
    finally:
        oidc.set_access_token_ttl(3600)
        oidc.set_clock_offset(0)
    assert all(envelope["success"] for envelope in envelopes), envelopes
    run("status")
    wait_for(lambda: len(oidc.refresh_tokens(user)) >= 4)
    access, refresh = oidc.access_tokens(user), oidc.refresh_tokens(user)
    assert keychain.load() == refresh[-1]  # the keychain holds the last one: the search can find it
    run("logout")
    (logs / "envelopes.json").write_text(repr(envelopes))

    secrets: dict[str, str] = {}
    for number, token in enumerate(refresh):
        secrets[f"refresh token {number}"] = token
    for number, token in enumerate(access):
        secrets[f"access token {number}"] = token
        for mechanism in ("XOAUTH2", "OAUTHBEARER"):
            said = oauth_initial_response(mechanism, user, token, oidc_dovecot.host, oidc_dovecot.tls_port)
            secrets[f"access token {number} in {mechanism}"] = base64.b64encode(said).decode()
    assert len(access) >= 3 and len(refresh) >= 4  # the sign-in, and a rotation at each refresh
    home = secret_service.home
    keyrings = home / ".local" / "share" / "keyrings"
    written = files_under(home, temp, logs, tmp_path, skip=keyrings)
    assert config in written and logs / "serve.err" in written
    assert "DEBUG" in (logs / "serve.err").read_text()  # the server logged at DEBUG
    assert any(path.name.endswith(".lock") for path in written)  # the sign-in's lock and record
    assert holding(written, secrets) == []
    # The search finds what it looks for: the same files with one token written into a copy of a log.
    planted = tmp_path / "planted.log"
    planted.write_bytes((logs / "serve.err").read_bytes() + refresh[-1].encode())
    assert holding([planted], secrets) == [f"{planted}: refresh token {len(refresh) - 1}"]
