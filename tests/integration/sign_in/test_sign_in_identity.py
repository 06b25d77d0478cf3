"""One sign-in per identity, not per account id (issue 56, item 6): two configurations whose accounts are
both ``default`` but sign in as two users (Claude Desktop's bundle and a ``setup``-made account) keep two
sign-ins in one keychain (a real Secret Service), each served by its own; a sign-in a release before
kept under the account id is taken over once by the identity it belongs to, never by another one.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.credentials.keychain import find_secret
from mail_imap_mcp.credentials.sign_in_state import (
    SignInRecord,
    read_record,
    refresh_token_store,
    write_record,
)
from mail_imap_mcp.credentials.token_keychain import KEYCHAIN_SERVICE, KeychainRefreshTokens
from tests.support.clients.in_process import make_config
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import OidcProvider, sign_in
from tests.support.servers.secret_service import SecretService
from tests.support.shared.login_command import Terminal
from tests.support.shared.sign_in_tokens import ACCOUNT, SignInEntries, outcomes, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.anyio,
]


async def test_two_accounts_of_one_id_signed_in_as_two_users_keep_both_sign_ins(
    tmp_path: Path,
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    secret_service: SecretService,
    keychain: SignInEntries,
) -> None:
    """Each logs in through the browser, the other's after it: both still serve their own mailbox, where
    the second sign-in replaced the first one's token and the first server logged in with another
    user's token (refused)."""
    terminals = []
    for name in ("bundle", "setup"):
        (tmp_path / name).mkdir()
        user = oidc_dovecot.new_user()
        settings = sign_in_account(oidc_dovecot, user, oidc)
        terminals.append(Terminal(tmp_path / name, secret_service, keychain, user, settings))
    for terminal in terminals:
        done = terminal.run("login", ACCOUNT)
        assert done.returncode == 0, done.stderr
    assert len(keychain.kept_keys()) == 2
    for terminal in terminals:
        (envelope,) = await outcomes(terminal.settings)
        assert envelope["success"] is True, envelope
        assert f"{ACCOUNT}: signed in as {terminal.user}" in terminal.run("status").stdout


async def test_a_sign_in_kept_under_the_account_id_is_taken_over_once_by_its_own_identity(
    oidc: OidcProvider, oidc_dovecot: Dovecot, keychain: SignInEntries
) -> None:
    """The entry a release before kept under ``default``, its record naming who signed in: another
    user's account of that id leaves it alone; its own takes it over (the entry under ``default`` then
    gone, its record with it) and is served by it, this run and the next."""
    owner, other = oidc_dovecot.new_user(), oidc_dovecot.new_user()
    KeychainRefreshTokens(ACCOUNT).save(str(sign_in(oidc, owner)["refresh_token"]))
    write_record(ACCOUNT, SignInRecord(owner, time.time()))
    settings = {who: sign_in_account(oidc_dovecot, who, oidc) for who in (owner, other)}
    (refused,) = await outcomes(settings[other])
    assert refused["success"] is False and refused["error"]["details"]["reason"] == "sign_in_required", (
        refused
    )
    assert find_secret(KEYCHAIN_SERVICE, ACCOUNT, "test") is not None  # left to its owner
    for _ in range(2):
        (envelope,) = await outcomes(settings[owner])
        assert envelope["success"] is True, envelope
    assert keychain.kept_keys() == {store_of(settings[owner]).key}
    assert read_record(ACCOUNT, store_of(settings[owner])).signed_in_as == owner
    assert store_of(settings[other]).load() is None


def store_of(settings: dict[str, Any]) -> KeychainRefreshTokens:
    """The keychain store the server reads for the account of ``settings``."""
    store = refresh_token_store(ACCOUNT, make_config({ACCOUNT: settings}).accounts[ACCOUNT])
    assert isinstance(store, KeychainRefreshTokens)
    return store
