"""The built-in sign-in's failures (issue 48), each a clear message or envelope with nothing stored,
against node-oidc-provider with Dovecot checking its tokens and a real Secret Service: the browser sent
to another port, the redirect port taken, Ctrl-C while ``login`` waits, an expired refresh token, the
provider's clock five minutes ahead or behind, and an access token the IMAP server refuses.

Covered elsewhere: consent declined and a state mismatch (test_login_command.py::
test_a_sign_in_that_fails_says_why_and_stores_nothing), the provider down at login
(test_login_command.py::test_login_says_when_the_provider_is_down) and at a refresh
(test_sign_in_tokens.py::test_a_provider_that_is_down_keeps_the_sign_in), a revoked refresh token
(test_sign_in_tokens.py::test_a_revoked_refresh_token_says_to_sign_in_again).
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import free_ports
from tests.support.servers.oidc_provider import MAIL_SCOPE, OidcProvider, sign_in, wait_for
from tests.support.shared.login_command import Terminal
from tests.support.shared.login_command import terminal as terminal
from tests.support.shared.sign_in_tokens import ACCOUNT, outcomes, refresh_refused, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain
from tests.support.shared.sign_in_tokens import user as user

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


class Elsewhere:
    """Another program's listener on a loopback port: records the requests the browser brings it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.paths.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def elsewhere() -> Iterator[Elsewhere]:
    listener = Elsewhere()
    yield listener
    listener.server.shutdown()
    listener.server.server_close()


def test_a_redirect_to_another_port_is_never_taken_and_nothing_is_stored(
    oidc: OidcProvider, terminal: Terminal, elsewhere: Elsewhere
) -> None:
    before = oidc.token_requests
    done = terminal.run("login", "--wait", "8", OIDC_TEST_REDIRECT_PORT=str(elsewhere.port))
    assert done.returncode == 1
    assert "no answer from the browser within 8s" in done.stderr, done.stderr
    assert "nothing was stored" in done.stderr
    (went,) = elsewhere.paths  # the code went to the other program, which login never asked
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(went).query)["code"]
    assert terminal.keychain.load() is None
    assert oidc.token_requests == before


def test_a_taken_redirect_port_says_so_and_a_free_one_signs_in(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        terminal.settings["oauth2_redirect_port"] = port
        done = terminal.run("login")
    assert done.returncode == 1
    assert f"cannot listen for the browser's answer on 127.0.0.1:{port}" in done.stderr, done.stderr
    assert "set oauth2_redirect_port to another port" in done.stderr and "nothing was stored" in done.stderr
    assert terminal.keychain.load() is None
    free = free_ports("127.0.0.1")[0]
    terminal.settings["oauth2_redirect_port"] = free
    done = terminal.run("login")
    assert done.returncode == 0, done.stderr
    assert f"http://127.0.0.1:{free}/start" in done.stderr  # the listener's launch address, printed
    assert f"redirect_uri={urllib.parse.quote(f'http://127.0.0.1:{free}/callback', safe='')}" in (
        terminal.authorization_url()
    )
    assert terminal.keychain.load() is not None


def test_login_without_a_keychain_refuses_before_the_browser_naming_oauth2_token_file(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """Issue 56, item 7: no usable keychain (keyring's fail backend): refused before the provider is
    asked, naming oauth2_token_file, where the browser sign-in ran first and its token was left valid."""
    before = oidc.token_requests
    done = terminal.run("login", PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    assert done.returncode == 1, done.stderr
    assert "nothing was asked of the provider" in done.stderr and "oauth2_token_file" in done.stderr, done
    assert "password_file" not in done.stderr and f"{oidc.issuer}/auth?" not in done.stderr, done.stderr
    assert oidc.token_requests == before and oidc.refresh_tokens(terminal.user) == []


def test_regression_check_without_a_keychain_gives_logins_advice(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """Issue 89 item 18: ``check`` answered a sign-in without a keychain with a password account's advice
    (password_file, password_command) and "the sign-in is kept; retry shortly"; it says what login says."""
    no_keychain = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    advice = (
        'set oauth2_token_file = "~/.config/mail-imap-mcp/default.token" in [accounts.default], then run '
        "login again"
    )
    login = terminal.run("login", **no_keychain)
    checked = terminal.run("check", **no_keychain)
    assert advice in login.stderr, login.stderr
    assert checked.returncode == 1 and advice in checked.stdout, checked.stdout + checked.stderr
    assert "password_file" not in checked.stdout and "retry shortly" not in checked.stdout, checked.stdout


def test_a_sign_in_that_could_not_be_kept_is_revoked_at_the_provider(
    oidc: OidcProvider, terminal: Terminal, tmp_path: Path
) -> None:
    """The token file's directory replaced by a file while the user signs in: the refresh token the
    provider issued is revoked there (RFC 7009; node-oidc-provider offers it), and the message says so."""
    tokens = tmp_path / "tokens"
    terminal.settings["oauth2_token_file"] = str(tokens / "work.token")
    done = terminal.run("login", OIDC_TEST_BREAK_DIR=str(tokens))
    assert done.returncode == 1, done.stderr
    assert "could not be kept" in done.stderr and "was revoked there" in done.stderr, done.stderr
    assert "oauth2_token_file" in done.stderr
    (issued,) = oidc.refresh_tokens(terminal.user)
    assert issued not in done.stderr and refresh_refused(oidc, issued)


def test_login_says_what_it_waits_for_and_on_timeout_names_the_two_likely_mistakes(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    """A client ID the provider does not know: its page shows an error and never sends the browser back;
    login says what it waits for, how long and how to stop, then names the client ID and the redirect
    URI, where it waited in silence."""
    terminal.settings["oauth2_client_id"] = "no-such-client"
    done = terminal.run("login", "--wait", "3")
    assert done.returncode == 1
    assert "Waiting up to 3 s (--wait) for the browser to come back to http://127.0.0.1:" in done.stderr
    assert "Ctrl-C stops" in done.stderr
    assert "no answer from the browser within 3s" in done.stderr, done.stderr
    assert "oauth2_client_id" in done.stderr and "a redirect URI the registration lacks" in done.stderr


@contextlib.contextmanager
def ctrl_c_as_at_a_terminal() -> Iterator[None]:
    """SIGINT handled as a terminal's process has it. A run started in the background by a script or
    ``nohup`` ignores SIGINT, a child keeps that across exec, and Python then installs no handler: three
    fresh-clone runs started so saw the login wait on after Ctrl-C (its stack: still in the listener's
    wait). A handler of this process's own is reset to the default in the child."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_while_login_waits_for_the_browser_stores_nothing(
    oidc: OidcProvider, terminal: Terminal
) -> None:
    argv, env = terminal.command("login", BROWSER="true %s")  # a browser nobody uses
    env["PYTHONFAULTHANDLER"] = "1"  # a login that does not end shows where each thread stood (SIGABRT)
    before = oidc.token_requests
    with (
        ctrl_c_as_at_a_terminal(),
        subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True) as login,
    ):
        assert login.stderr is not None
        shown = ""
        while "/start" not in shown:
            line = login.stderr.readline()
            assert line, f"login ended before it printed the sign-in address: {shown}"  # EOF: never loop
            shown += line
        redirect = re.search(r"http://127\.0\.0\.1:\d+/start", shown).group(0)  # type: ignore[union-attr]
        login.send_signal(signal.SIGINT)
        try:
            status = login.wait(timeout=patient(30))
        except subprocess.TimeoutExpired:  # the threads' stacks say where it stood
            login.send_signal(signal.SIGABRT)
            pytest.fail(f"login did not end after Ctrl-C; its threads:\n{login.stderr.read()[-8000:]}")
        assert status == 130
        said = login.stderr.read()
    assert "mail-imap-mcp login: stopped (Ctrl-C); nothing was stored" in said, said
    assert "Traceback" not in said
    port = urllib.parse.urlsplit(redirect).port
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))  # the listener is closed
    assert terminal.keychain.load() is None
    assert oidc.token_requests == before


@pytest.mark.anyio
async def test_an_expired_refresh_token_says_to_sign_in_again(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, keychain: KeychainRefreshTokens
) -> None:
    oidc.set_refresh_token_ttl(60)
    try:
        refresh_token = str(sign_in(oidc, user)["refresh_token"])
    finally:
        oidc.set_refresh_token_ttl(86400)
    keychain.save(refresh_token)
    oidc.move_clock(61)  # past the refresh token's expiry at the provider, with no wait
    try:
        (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc))
    finally:
        oidc.set_clock_offset(0)
    error = envelope["error"]
    assert error["code"] == "auth_failed" and error["details"]["reason"] == "sign_in_required", error
    assert f"mail-imap-mcp login {ACCOUNT}" in envelope["data"]["next_action"]["instruction"]
    assert refresh_token not in str(envelope)


@pytest.mark.anyio
@pytest.mark.parametrize("offset", [300, -300], ids=["5 minutes ahead", "5 minutes behind"])
async def test_the_providers_clock_ahead_or_behind_changes_nothing(
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    user: str,
    keychain: KeychainRefreshTokens,
    caplog: pytest.LogCaptureFixture,
    offset: int,
) -> None:
    """An access token's expiry is counted from expires_in on receipt, on this machine's clock: with
    the provider's clock five minutes off, a token of 10 s is replaced once per expiry, before the IMAP
    server would refuse it (no refusal is logged), and every call works."""
    caplog.set_level(logging.INFO)
    oidc.set_clock_offset(offset)
    # Tokens of 10 s: less than the 30 s a login wants left, so each login after an expiry asks for a
    # new one; and time enough for Dovecot to ask the provider about it on a busy machine (with 3 s and
    # a 4 s sleep, a login slower than 3 s found its new token refused).
    oidc.set_access_token_ttl(10)
    try:
        keychain.save(str(sign_in(oidc, user)["refresh_token"]))
        before = oidc.token_requests

        def expire_and_drop_the_connection() -> None:
            # The provider's clock moves a further 11 s: past the token's expiry (Dovecot would refuse
            # it), still five minutes off. No wait.
            oidc.move_clock(11)
            oidc_dovecot.kick(user)

        envelopes = await outcomes(
            sign_in_account(oidc_dovecot, user, oidc),
            3,
            expire_and_drop_the_connection,
            "imap_search_messages",
            [{"mailbox": "INBOX", "query": word} for word in ("alpha", "beta", "gamma")],
        )
        # The provider's clock is off: the last token was issued at its time, not ours.
        issued = oidc.introspect(oidc.access_tokens(user)[-1])["iat"]
        assert abs(issued - (time.time() + offset)) < 60, issued - time.time()  # moved 22 s at most
    finally:
        oidc.set_access_token_ttl(3600)
        oidc.set_clock_offset(0)
    assert [envelope["success"] for envelope in envelopes] == [True, True, True], envelopes
    wait_for(lambda: oidc.token_requests >= before + 3)
    assert oidc.token_requests == before + 3
    assert "refused the OAuth2 token" not in caplog.text


@pytest.mark.anyio
async def test_a_token_the_imap_server_refuses_fails_clearly_after_one_retry(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, keychain: KeychainRefreshTokens
) -> None:
    """A sign-in whose tokens lack the scope Dovecot requires: the first token is refused, one more is
    fetched and refused too, and the call fails with auth_failed naming the refusal (never a loop)."""
    scopes = ["openid", "offline_access", "other"]
    keychain.save(str(sign_in(oidc, user, scope=" ".join(scopes))["refresh_token"]))
    before = oidc.token_requests
    (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc, oauth2_scopes=scopes))
    assert MAIL_SCOPE not in scopes
    error = envelope["error"]
    assert error["code"] == "auth_failed", error
    assert "refused the OAuth2 access token (XOAUTH2)" in error["message"], error["message"]
    assert "also a fresh one from the built-in sign-in" in error["message"]
    assert "oauth2_scopes in [accounts.default] includes 'mail'" in error["message"]
    assert f"mail-imap-mcp login {ACCOUNT}" in error["message"]
    assert "token_command" not in error["message"] and "helper" not in error["message"]
    wait_for(lambda: oidc.token_requests >= before + 2)
    time.sleep(0.5)
    assert oidc.token_requests == before + 2
    stored = keychain.load()
    assert stored is not None and stored not in str(envelope)


@pytest.mark.anyio
async def test_a_token_of_another_issuer_is_refused_by_dovecot_after_one_retry(
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    user: str,
    keychain: KeychainRefreshTokens,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """An account signed in at another provider than the one Dovecot trusts: our code gets its tokens
    (the other provider answers every refresh) and sends them; Dovecot refuses each (its introspection
    at its own issuer does not know them), so the call fails with auth_failed after one retry."""
    with OidcProvider(tmp_path_factory.mktemp("other-issuer")) as other:
        keychain.save(str(sign_in(other, user)["refresh_token"]))
        before, trusted_before = other.token_requests, oidc.token_requests
        (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, other))
        error = envelope["error"]
        assert error["code"] == "auth_failed", error
        assert "refused the OAuth2 access token (XOAUTH2)" in error["message"], error["message"]
        assert f"mail-imap-mcp login {ACCOUNT}" in error["message"]
        wait_for(lambda: other.token_requests >= before + 2)
        time.sleep(0.5)
        assert other.token_requests == before + 2  # the token, and one more after the refusal
        assert oidc.token_requests == trusted_before
        assert len(other.access_tokens(user)) >= 3 and not oidc.access_tokens(user)
        stored = keychain.load()
        assert stored is not None and stored not in str(envelope)
