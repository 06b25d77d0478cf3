"""The opt-in file of a refresh token (``oauth2_token_file``, credentials/token_file.py) on a machine whose
keychain is keyring's ``fail`` backend (no keychain at all): ``mail-imap-mcp login`` signs in through the
"browser" (tests/support/clients/oidc_browser.py) against node-oidc-provider and writes the file 0600; the
server in process lists mail across access-token expiries, each refresh rotating the token in the file;
``logout`` revokes it at the provider and deletes the file. A file others can read is refused, naming
the setting. Two configurations whose accounts share an id but not a token file each say who signed in.

Each test has its own home (``own_home`` in tests/conftest.py, passed on to the commands by ``run``):
the sign-in's lock files and records (credentials/sign_in_state.py) go below it, never to the home of the
user running the tests, which every test and xdist worker would otherwise share.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from keyring.backends.fail import Keyring as FailKeyring

from mail_imap_mcp.credentials.token_file import SETTING, FileRefreshTokens
from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from tests.support.accounts import config_toml
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import OidcProvider, browser_signing_in_as, sign_in, wait_for
from tests.support.shared.sign_in_on_call import Launches, SignedOut, Visitor, stdio_like_client
from tests.support.shared.sign_in_tokens import ACCOUNT, outcomes, refresh_refused, sign_in_account

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")
NO_KEYCHAIN = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process and the commands it runs have no keychain (keyring's fail backend)."""
    for name, value in NO_KEYCHAIN.items():
        monkeypatch.setenv(name, value)
    before = keyring.get_keyring()
    keyring.set_keyring(FailKeyring())
    try:
        yield
    finally:
        keyring.set_keyring(before)


def run(directory: Path, settings: dict[str, Any], user: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``mail-imap-mcp <args>`` with ``settings`` as the account, as ``user`` at a browser, no keychain."""
    config = directory / "config.toml"
    config.write_text(config_toml({ACCOUNT: settings}))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ["HOME"],
        **NO_KEYCHAIN,
        **browser_signing_in_as(user),
    }
    return subprocess.run(
        [SERVER, *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=patient(120),
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.anyio
async def test_login_keeps_the_refresh_token_in_the_file_and_the_server_rotates_it_there(
    tmp_path: Path, oidc: OidcProvider, oidc_dovecot: Dovecot, no_keychain: None
) -> None:
    user, token_file = oidc_dovecot.new_user(), tmp_path / "tokens" / "work.token"
    settings = sign_in_account(oidc_dovecot, user, oidc, oauth2_token_file=str(token_file))
    done = run(tmp_path, settings, user, "login", ACCOUNT)
    assert done.returncode == 0, done.stderr
    assert mode(token_file) == 0o600
    first = token_file.read_text().strip()
    assert first and first not in done.stderr + done.stdout
    status = run(tmp_path, settings, user, "status").stdout
    assert f"{ACCOUNT}: signed in as {user}" in status and f"kept in the file {token_file}" in status, status

    oidc.set_access_token_ttl(10)  # under the 30 s a login wants left: each login refreshes
    before = oidc.token_requests

    def expire_and_drop_the_connection() -> None:
        oidc.move_clock(11)  # the provider's clock passes the access token's expiry: Dovecot would refuse it
        oidc_dovecot.kick(user)

    try:
        envelopes = await outcomes(
            settings, 3, expire_and_drop_the_connection, "imap_search_messages", {"mailbox": "INBOX"}
        )
    finally:
        oidc.set_access_token_ttl(3600)
        oidc.set_clock_offset(0)
    assert [envelope["success"] for envelope in envelopes] == [True, True, True], envelopes
    wait_for(lambda: oidc.token_requests >= before + 3)
    last = token_file.read_text().strip()
    assert last != first and mode(token_file) == 0o600
    assert refresh_refused(oidc, first)  # spent by the first refresh: only the rotated one works now
    assert [p.name for p in token_file.parent.iterdir()] == [token_file.name]  # no temporary file left

    out = run(tmp_path, settings, user, "logout", ACCOUNT)
    assert "revoked at the provider and forgotten" in out.stderr, out.stderr
    assert "Every configuration" not in out.stderr  # the file is this configuration's own
    assert not token_file.exists()
    assert refresh_refused(oidc, last)  # revoked at the provider, not only deleted here
    assert "not signed in" in run(tmp_path, settings, user, "status").stdout


def test_two_configurations_whose_accounts_share_an_id_but_not_a_token_file_each_say_who_signed_in(
    tmp_path: Path, oidc: OidcProvider, oidc_dovecot: Dovecot, no_keychain: None
) -> None:
    """Two users sign in to an account of the same id, each in their own configuration and token file:
    ``status`` of each names its own user (the record of who signed in belongs to the file, not to the
    account id alone), and one's logout leaves the other signed in."""
    people = []
    for name in ("first", "second"):
        user, directory = oidc_dovecot.new_user(), tmp_path / name
        directory.mkdir()
        settings = sign_in_account(oidc_dovecot, user, oidc, oauth2_token_file=str(directory / "work.token"))
        done = run(directory, settings, user, "login", ACCOUNT)
        assert done.returncode == 0, done.stderr
        people.append((user, directory, settings))
    for user, directory, settings in people:
        status = run(directory, settings, user, "status").stdout
        assert f"{ACCOUNT}: signed in as {user} " in status, status
    (first, first_directory, first_settings), (second, second_directory, second_settings) = people
    assert "revoked at the provider" in run(first_directory, first_settings, first, "logout", ACCOUNT).stderr
    assert "not signed in" in run(first_directory, first_settings, first, "status").stdout
    assert f"signed in as {second} " in run(second_directory, second_settings, second, "status").stdout


@pytest.mark.anyio
async def test_a_token_file_others_can_read_is_refused_naming_the_setting(
    tmp_path: Path, oidc: OidcProvider, oidc_dovecot: Dovecot, no_keychain: None
) -> None:
    user, token_file = oidc_dovecot.new_user(), tmp_path / "work.token"
    token = str(sign_in(oidc, user)["refresh_token"])
    token_file.write_text(token + "\n")
    token_file.chmod(0o644)
    before = oidc.token_requests
    (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc, oauth2_token_file=str(token_file)))
    error = envelope["error"]
    assert error["code"] == "auth_failed", error
    assert f"oauth2_token_file in [accounts.{ACCOUNT}]" in error["message"], error
    assert f"chmod 600 {token_file}" in error["message"]
    assert token not in str(envelope)
    assert oidc.token_requests == before  # the token in it was never spent
    token_file.chmod(0o600)
    (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc, oauth2_token_file=str(token_file)))
    assert envelope["success"] is True, envelope


def test_a_crash_before_the_new_file_replaces_the_old_keeps_the_old_token(tmp_path: Path) -> None:
    """A process ended (``os._exit``) just before the rename: the old token is whole and still the one
    read; the next store removes the crashed one's temporary file."""
    token_file = tmp_path / "work.token"
    store = FileRefreshTokens(token_file, SETTING)
    store.save("old-token")
    crash = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from mail_imap_mcp.credentials.token_file import FileRefreshTokens\n"
        "os.replace = lambda *_: os._exit(3)\n"
        "FileRefreshTokens(Path(sys.argv[1]), 'oauth2_token_file').save('new-token')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", crash, str(token_file)], capture_output=True, timeout=patient(60)
    )
    assert done.returncode == 3, done.stderr
    assert store.load() == "old-token"
    assert len(list(tmp_path.glob(".work.token.*.tmp"))) == 1  # the crashed store's, 0600 like the file
    store.save("newer-token")
    assert store.load() == "newer-token" and mode(token_file) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["work.token"]


@pytest.mark.anyio
async def test_the_sign_in_a_call_starts_keeps_the_token_in_the_file(
    tmp_path: Path, oidc: OidcProvider, oidc_dovecot: Dovecot, no_keychain: None
) -> None:
    """A call on the account nobody signed in to takes the user to sign in (URL-mode elicitation); the
    token goes to the file, 0600, and the call after works."""
    user, token_file = oidc_dovecot.new_user(), tmp_path / "work.token"
    settings = sign_in_account(oidc_dovecot, user, oidc, oauth2_token_file=str(token_file))
    account = SignedOut(user, settings, KeychainRefreshTokens(ACCOUNT), Launches())
    async for mcp in stdio_like_client(account, elicitation_callback=Visitor(user), mode="legacy"):
        data = await mcp.ok("imap_list_mailboxes")
        assert "INBOX" in {box["name"] for box in data["mailboxes"]}
    assert mode(token_file) == 0o600 and token_file.read_text().strip()
