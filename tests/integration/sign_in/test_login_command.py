"""``mail-imap-mcp login``, ``status`` and ``logout`` as a user runs them (issue 48): the authorization code
grant with PKCE through the "browser" (``BROWSER`` set to tests/support/clients/oidc_browser.py, which signs in
and consents on node-oidc-provider's pages with an HTTP client and follows the redirect to the loopback
listener), the device grant approved the same way, the refresh token kept in a real Secret Service; then
an MCP client lists the mailboxes on a Dovecot that checks the tokens with the provider. Failures store
nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from tests.support.accounts import config_toml, env_account
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.oidc_browser import approve
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import free_ports
from tests.support.servers.oidc_provider import (
    SECRET_CLIENT,
    SECRET_CLIENT_SECRET,
    OidcProvider,
    browser_signing_in_as,
)
from tests.support.servers.rfc8414_server import TENANT_PATH, Rfc8414Server
from tests.support.servers.secret_service import SecretService
from tests.support.shared.login_command import SERVER, Terminal
from tests.support.shared.login_command import terminal as terminal
from tests.support.shared.sign_in_tokens import (
    ACCOUNT,
    SignInEntries,
    outcomes,
    refresh_refused,
    sign_in_account,
)
from tests.support.shared.sign_in_tokens import keychain as keychain

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.mark.anyio
async def test_login_signs_in_through_the_browser_and_the_account_lists_its_mailboxes(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    done = terminal.run("login", ACCOUNT)
    assert done.returncode == 0, done.stderr
    # The address is printed as well: the listener's launch address, which holds no secret.
    assert re.search(r"^http://127\.0\.0\.1:\d+/start$", done.stderr, re.MULTILINE), done.stderr
    refresh_token = terminal.keychain.load()
    assert refresh_token is not None and refresh_token not in done.stderr + done.stdout
    (envelope,) = await outcomes(terminal.settings)
    assert envelope["success"] is True, envelope
    assert f"{ACCOUNT}: signed in as {terminal.user}" in terminal.run("status").stdout
    rotated = terminal.keychain.load()
    assert rotated is not None
    # Another install signing the same user in with the same app (the bundle beside a setup-made config)
    # shares the sign-in, which is kept by identity: logout signs it out too, and says so.
    another = terminal.directory / "another-install.toml"
    another.write_text(config_toml({"another": terminal.settings}))

    def status_of_another() -> str:
        argv, env = terminal.command("status")
        argv[-1] = str(another)
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=patient(120)).stdout

    assert f"another: signed in as {terminal.user}" in status_of_another()
    out = terminal.run("logout", ACCOUNT)
    assert "revoked at the provider and forgotten" in out.stderr, out.stderr
    assert (
        f"Every configuration on this computer that signs {terminal.user} in with this custom app"
        in out.stderr
    )
    assert "Claude Desktop's extension too" in out.stderr and "each is signed out as well" in out.stderr
    assert "another: not signed in" in status_of_another()
    assert terminal.keychain.load() is None
    assert refresh_refused(
        oidc, rotated
    )  # the provider no longer takes it (invalid_grant), not only forgotten
    assert "not signed in" in terminal.run("status").stdout


@pytest.mark.parametrize(
    ("browser", "said"),
    [
        ({"OIDC_TEST_DECLINE": "1"}, "did not grant access (access_denied"),
    ],
    ids=["consent declined"],
)
def test_a_sign_in_that_fails_says_why_and_stores_nothing(
    oidc: OidcProvider, terminal: Terminal, browser: dict[str, str], said: str
) -> None:
    before = oidc.token_requests
    done = terminal.run("login", **browser)
    assert done.returncode == 1
    assert said in done.stderr, done.stderr
    assert terminal.keychain.load() is None
    assert oidc.token_requests == before  # no code was redeemed


def test_a_redirect_with_another_state_is_not_taken_as_the_answer(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """Issue 56 item 4: the listener takes only the answer of its own sign-in (its ``state``); a forged
    one is answered and login waits on (here until its --wait of 3 s), redeeming and storing nothing."""
    before = oidc.token_requests
    done = terminal.run("login", "--wait", "3", OIDC_TEST_STATE="forged")
    assert done.returncode == 1
    assert "no answer from the browser within 3s" in done.stderr, done.stderr
    assert terminal.keychain.load() is None
    assert oidc.token_requests == before  # no code was redeemed


def test_login_says_when_the_provider_is_down(terminal: Terminal) -> None:
    down = f"http://127.0.0.1:{free_ports('127.0.0.1')[0]}"
    terminal.settings["oauth2_issuer"] = down
    done = terminal.run("login")
    assert done.returncode == 1
    assert f"the provider {down} could not be reached" in done.stderr, done.stderr
    assert terminal.keychain.load() is None


@pytest.mark.anyio
async def test_login_with_a_device_code_signs_in(terminal: Terminal) -> None:
    argv, env = terminal.command("login", "--device")
    with subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True) as login:
        assert login.stderr is not None
        shown = login.stderr.readline()
        found = re.search(r"open (\S+) and enter the code (\S+)", shown)
        assert found is not None, shown
        approve(found.group(1), terminal.user, user_code=found.group(2))
        assert login.wait(timeout=patient(120)) == 0, login.stderr.read()
    assert terminal.keychain.load() is not None
    (envelope,) = await outcomes(terminal.settings)
    assert envelope["success"] is True, envelope


def test_google_refuses_the_device_code_for_its_mail_scope(oidc: OidcProvider, terminal: Terminal) -> None:
    """The google preset (its mail scope) with every endpoint pointed at the local provider, whose device
    grant would work (test_login_with_a_device_code_signs_in): login --device says Google does not allow
    it and what to do instead, before asking the provider anything; nothing is stored."""
    metadata = oidc.metadata()
    secret_file = terminal.directory / "client-secret"
    secret_file.write_text(SECRET_CLIENT_SECRET)
    secret_file.chmod(0o600)
    terminal.settings = {
        key: value
        for key, value in terminal.settings.items()
        if key not in {"oauth2_issuer", "oauth2_scopes"}  # the preset's scopes: Google's mail scope
    }
    terminal.settings |= {
        "oauth2_provider": "google",
        "oauth2_client_id": SECRET_CLIENT,
        "oauth2_client_secret_file": str(secret_file),
        "oauth2_authorization_url": metadata["authorization_endpoint"],
        "oauth2_token_url": metadata["token_endpoint"],
        "oauth2_device_url": metadata["device_authorization_endpoint"],
    }
    before = oidc.token_requests
    done = terminal.run("login", "--device")
    assert done.returncode == 1
    assert (
        "Google does not allow its mail scope (https://mail.google.com/) on the device sign-in: run "
        "`mail-imap-mcp login` without --device on a machine with a browser" in done.stderr
    ), done.stderr
    assert "enter the code" not in done.stderr  # no device authorization was started
    assert terminal.keychain.load() is None and oidc.token_requests == before


@pytest.mark.anyio
@pytest.mark.parametrize("device", [False, True], ids=["browser", "device code"])
async def test_a_microsoft_shaped_account_signs_in_through_login(
    oidc: OidcProvider, oidc_dovecot: Dovecot, terminal: Terminal, device: bool
) -> None:
    """The microsoft preset (a tenant of its own, no client secret) with its endpoints pointed at the local
    provider, signed in by ``login`` through the browser and by ``login --device`` (which Microsoft allows
    for mail); the account then lists its mailboxes and stays signed in across an access token's expiry.
    The browser's sign-in goes through the Entra-shaped door, which answers prompt=consent with "Need
    admin approval" (issue 78 item 3): the preset asks select_account."""
    metadata = oidc.metadata()
    terminal.settings = {key: value for key, value in terminal.settings.items() if key != "oauth2_issuer"}
    terminal.settings |= {
        "oauth2_provider": "microsoft",
        "oauth2_tenant": "contoso.onmicrosoft.com",
        "oauth2_authorization_url": oidc.entra_authorization_endpoint,
        "oauth2_token_url": metadata["token_endpoint"],
        "oauth2_device_url": metadata["device_authorization_endpoint"],
    }
    if device:
        argv, env = terminal.command("login", "--device")
        with subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True) as login:
            assert login.stderr is not None
            shown = login.stderr.readline()
            found = re.search(r"open (\S+) and enter the code (\S+)", shown)
            assert found is not None, shown
            approve(found.group(1), terminal.user, user_code=found.group(2))
            assert login.wait(timeout=patient(120)) == 0, login.stderr.read()
    else:
        done = terminal.run("login", ACCOUNT)
        assert done.returncode == 0, done.stderr
        asked = terminal.authorization_url()
        assert asked.startswith(f"{oidc.entra_authorization_endpoint}?") and "prompt=select_account" in asked
    first = terminal.keychain.load()
    assert first is not None
    oidc.set_access_token_ttl(10)  # under the 30 s a login wants left: each login refreshes
    try:

        def expire() -> None:
            oidc.move_clock(11)  # the provider's clock passes the access token's expiry; no wait
            oidc_dovecot.kick(terminal.user)

        envelopes = await outcomes(terminal.settings, 2, expire)
    finally:
        oidc.set_access_token_ttl(3600)
        oidc.set_clock_offset(0)
    assert [envelope["success"] for envelope in envelopes] == [True, True], envelopes
    assert terminal.keychain.load() not in (None, first)  # refreshed, the rotated token kept


@pytest.mark.anyio
@pytest.mark.parametrize("secret", [SECRET_CLIENT_SECRET, "wrong"], ids=["its secret", "a wrong secret"])
async def test_a_google_shaped_account_signs_in_with_its_client_secret(
    oidc: OidcProvider, terminal: Terminal, secret: str
) -> None:
    """The google preset with its endpoints pointed at the local provider: the client secret (from a
    file of the user's alone) goes with the code and every refresh; a wrong one stores nothing."""
    metadata = oidc.metadata()
    secret_file = terminal.directory / "client-secret"
    secret_file.write_text(secret)
    secret_file.chmod(0o600)
    terminal.settings = {key: value for key, value in terminal.settings.items() if key != "oauth2_issuer"}
    terminal.settings |= {
        "oauth2_provider": "google",
        "oauth2_client_id": SECRET_CLIENT,
        "oauth2_client_secret_file": str(secret_file),
        "oauth2_authorization_url": metadata["authorization_endpoint"],
        "oauth2_token_url": metadata["token_endpoint"],
    }
    done = terminal.run("login")
    if secret != SECRET_CLIENT_SECRET:
        assert done.returncode == 1 and "invalid_client" in done.stderr, done.stderr
        assert terminal.keychain.load() is None
        return
    assert done.returncode == 0, done.stderr
    seen = terminal.authorization_url()
    assert "access_type=offline" in seen and "prompt=consent" in seen
    (envelope,) = await outcomes(terminal.settings)
    assert envelope["success"] is True, envelope


@pytest.mark.anyio
async def test_status_says_who_signed_in_when_the_last_refresh_succeeded_and_the_expected_lifetime(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """status after login, then after a call refreshed the access token, for each provider's lifetime;
    never a token in what it prints."""
    assert terminal.run("login").returncode == 0
    moment = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"
    before_use = terminal.run("status").stdout
    assert re.search(
        rf"^{ACCOUNT}: signed in as {terminal.user} with custom; signed in {moment}; last refresh "
        r"succeeded: none yet; refresh token expected to last as the provider sets it \(no documented "
        r"lifetime known here\) \(expected, not checked with the provider\); the refresh token is kept in "
        r"the OS keychain$",
        before_use,
        re.MULTILINE,
    ), before_use
    (envelope,) = await outcomes(terminal.settings)  # a refresh, in this process, in the same home
    assert envelope["success"] is True, envelope
    after_use = terminal.run("status").stdout
    assert re.search(rf"last refresh succeeded: {moment};", after_use), after_use
    metadata = oidc.metadata()
    endpoints = {
        "oauth2_issuer": None,
        "oauth2_authorization_url": oidc.entra_authorization_endpoint,
        "oauth2_token_url": metadata["token_endpoint"],
    }
    terminal.settings = {
        key: value for key, value in (terminal.settings | endpoints).items() if value is not None
    }
    terminal.settings["oauth2_provider"] = "microsoft"  # another sign-in: signed in, then refreshed
    assert terminal.run("login").returncode == 0
    (envelope,) = await outcomes(terminal.settings)
    assert envelope["success"] is True, envelope
    microsoft = terminal.run("status").stdout
    assert re.search(
        rf"with microsoft; .* expected to last 90 days from its last use, renewed by each refresh "
        rf"\(sliding\), per Microsoft's documentation: expected to last until {moment} unless used before",
        microsoft,
    ), microsoft
    refreshed, until = re.findall(r"(\d{4}-\d\d-\d\d \d\d:\d\d) UTC", microsoft.split("last refresh")[1])
    parsed = [datetime.strptime(moment, "%Y-%m-%d %H:%M") for moment in (refreshed, until)]
    assert parsed[1] - parsed[0] == timedelta(days=90)  # counted from the last refresh
    terminal.settings["oauth2_provider"] = "google"
    terminal.settings["oauth2_authorization_url"] = metadata["authorization_endpoint"]
    assert terminal.run("login").returncode == 0
    google = terminal.run("status").stdout
    assert "until revoked (7 days for an app whose OAuth consent screen is in testing mode)" in google
    kept = [KeychainRefreshTokens(key).load() or "" for key in terminal.keychain.kept_keys()]
    tokens = [*kept, *oidc.access_tokens(terminal.user)]
    for printed in (before_use, after_use, microsoft, google):
        assert all(token and token not in printed for token in tokens)


@pytest.mark.anyio
async def test_an_environment_account_signs_in_and_the_server_lists_its_mailboxes(
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    secret_service: SecretService,
    keychain: KeychainRefreshTokens,
) -> None:
    """A Google-shaped account set by MAIL_IMAP_WORK_* variables alone (as the bundle's form sets them):
    login, then the server over stdio, with the client secret in its variable."""
    user = oidc_dovecot.new_user()
    metadata = oidc.metadata()
    prefix = "MAIL_IMAP_WORK_"
    env = {
        "PATH": os.environ["PATH"],
        **secret_service.environment(),
        **browser_signing_in_as(user),
        **env_account(oidc_dovecot, user, "WORK", MAIL_IMAP_WORK_PASS=""),
        f"{prefix}OAUTH2_PROVIDER": "google",
        f"{prefix}OAUTH2_CLIENT_ID": SECRET_CLIENT,
        f"{prefix}OAUTH2_CLIENT_SECRET": SECRET_CLIENT_SECRET,
        f"{prefix}OAUTH2_AUTHORIZATION_URL": metadata["authorization_endpoint"],
        f"{prefix}OAUTH2_TOKEN_URL": metadata["token_endpoint"],
        f"{prefix}OAUTH2_SCOPES": "openid offline_access mail",
    }
    done = subprocess.run(
        [SERVER, "login", "work"], env=env, capture_output=True, text=True, timeout=patient(120)
    )
    assert done.returncode == 0, done.stderr
    assert keychain.load() is not None
    params = StdioServerParameters(command=SERVER, args=["serve"], env=env)
    async with Client(params) as client:
        listed = await EnvelopeClient(client).call("imap_list_mailboxes")
    assert listed["success"] is True, listed


@pytest.mark.anyio
async def test_a_custom_issuer_publishing_only_rfc_8414_metadata_is_discovered(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """An issuer with a path whose only document is RFC 8414's, at the path the RFC inserts the
    well-known name into (section 3.1); its endpoints are the real provider's."""
    names = (
        "authorization_endpoint",
        "token_endpoint",
        "revocation_endpoint",
        "device_authorization_endpoint",
    )
    endpoints = {name: oidc.metadata()[name] for name in names}
    with Rfc8414Server(endpoints) as metadata:
        terminal.settings["oauth2_issuer"] = metadata.issuer
        done = terminal.run("login", ACCOUNT)
        assert done.returncode == 0, done.stderr
        assert terminal.authorization_url().startswith(f"{oidc.issuer}/auth?")
        assert metadata.requested[0] == f"/.well-known/oauth-authorization-server{TENANT_PATH}"
        (envelope,) = await outcomes(terminal.settings)
    assert envelope["success"] is True, envelope
    assert "INBOX" in str(envelope["data"])
    assert terminal.keychain.load() is not None


def test_rfc_8414_metadata_naming_another_issuer_is_refused_and_nothing_is_stored(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """RFC 8414 section 3.3: metadata whose ``issuer`` is not the one configured may send the sign-in
    elsewhere; login refuses it before any browser opens."""
    names = ("authorization_endpoint", "token_endpoint")
    with Rfc8414Server({name: oidc.metadata()[name] for name in names}, names_issuer=oidc.issuer) as metadata:
        terminal.settings["oauth2_issuer"] = metadata.issuer
        done = terminal.run("login", ACCOUNT)
    assert done.returncode == 1
    assert f"names another issuer ({oidc.issuer}), not {metadata.issuer}" in done.stderr, done.stderr
    assert "/auth?" not in done.stderr
    assert terminal.keychain.load() is None


def test_a_sign_in_the_mail_server_cannot_check_is_not_kept_and_login_says_try_again(
    oidc: OidcProvider, secret_service: SecretService, keychain: SignInEntries, tmp_path: Path
) -> None:
    """Regression: a Dovecot that cannot ask whether a token is good (its introspection endpoint is
    down) answers ``NO [UNAVAILABLE]``. login said the new sign-in was another account's; it is not kept,
    and login says the server could not be asked, to try again."""
    (nobody,) = free_ports("127.0.0.1")
    with Dovecot(oauth2_introspection_url=f"http://127.0.0.1:{nobody}/introspect") as cannot_check:
        user = cannot_check.new_user()
        terminal = Terminal(
            tmp_path, secret_service, keychain, user, sign_in_account(cannot_check, user, oidc)
        )
        done = terminal.run("login", ACCOUNT)
    assert done.returncode == 1, done.stderr
    assert f"could not be asked whether the new sign-in is {user}'s" in done.stderr, done.stderr
    assert "[UNAVAILABLE]" in done.stderr and "try again" in done.stderr
    assert "another account's" not in done.stderr
    assert terminal.keychain.load() is None


def test_a_sign_in_as_another_account_is_refused_by_the_mail_server_and_not_kept(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """Issue 56 item 4: whoever signed in at the provider (the user in the wrong account, or anyone who
    got the browser there), the new token is kept only once the IMAP server logged the account's username
    in with it; Dovecot refuses another account's token, and login says so."""
    done = terminal.run("login", ACCOUNT, OIDC_TEST_LOGIN="mallory")
    assert done.returncode == 1, done.stderr
    assert f"refused to log in as {terminal.user} with the new sign-in" in done.stderr, done.stderr
    assert f"Sign in again as {terminal.user}" in done.stderr
    assert terminal.keychain.load() is None
    assert "not signed in" in terminal.run("status").stdout
