"""OAuth2 login (issue 14): ``auth = "xoauth2"`` / ``"oauthbearer"`` with ``oauth2_token_command``.

Against a real Dovecot whose ``oauth2`` passdb asks a loopback introspection endpoint
(tests/support/servers/oauth2.py) whether a token is active, through the SDK's MCP client in process, over
stdio, and through ``mail-imap-mcp check`` as a user runs it.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config, load_config
from mail_imap_mcp.credentials.logins import Logins
from mail_imap_mcp.imap.pool import ConnectionPool
from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml, env_account
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.patience import eventually, patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import SESSION_PASSWORD
from tests.support.servers.oauth2 import IntrospectionEndpoint, TokenHelper, new_token
from tests.support.wire import ImapRecorder

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


def oauth_account(
    server: Dovecot, user: str, command: list[str], auth: str = "xoauth2", **extra: Any
) -> dict[str, Any]:
    """Settings of an OAuth2 account of ``user`` on ``server`` (TLS), its token from ``command``."""
    return account_settings(server, user, password_env=None, auth=auth, oauth2_token_command=command, **extra)


def one_account(settings: dict[str, Any]) -> Config:
    return make_config({"default": settings})


async def call(config: Config, tool: str = "imap_list_mailboxes", **arguments: Any) -> list[dict[str, Any]]:
    """Envelopes of ``tool`` called once per item of ``arguments['times']`` (default once), one session."""
    times = arguments.pop("times", 1)
    envelopes = []
    async for mcp in open_client(config):
        for _ in range(times):
            envelopes.append(await mcp.call(tool, arguments))
    return envelopes


async def failure(config: Config, code: str = "auth_failed") -> dict[str, Any]:
    errors = []
    async for mcp in open_client(config):
        errors.append((await mcp.fail("imap_list_mailboxes", {}, code))["error"])
    (error,) = errors
    return error


@pytest.fixture
def oauth_user(oauth_dovecot: Dovecot) -> str:
    return oauth_dovecot.new_user()


@pytest.fixture
def helper(tmp_path: Path) -> TokenHelper:
    return TokenHelper(tmp_path / "helper")


@pytest.fixture
def good_token(introspection: IntrospectionEndpoint, oauth_user: str, helper: TokenHelper) -> str:
    """A token the server accepts for ``oauth_user``, which ``helper`` prints."""
    token = new_token()
    introspection.accept(token, oauth_user)
    helper.queue(token)
    return token


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("auth", "security"), [("xoauth2", "tls"), ("oauthbearer", "tls"), ("xoauth2", "starttls")]
)
async def test_login_with_a_good_token(
    auth: str,
    security: str,
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    oauth_user: str,
    helper: TokenHelper,
    good_token: str,
) -> None:
    asked = introspection.requests
    port = oauth_dovecot.tls_port if security == "tls" else oauth_dovecot.plain_port
    settings = oauth_account(oauth_dovecot, oauth_user, helper.command, auth, security=security, port=port)
    (envelope,) = await call(one_account(settings))
    assert envelope["success"], envelope
    assert envelope["data"]["mailboxes"][0]["name"] == "INBOX"
    assert helper.runs == 1
    assert introspection.requests == asked + 1
    # Dovecot's log process writes the login line a moment later, among other tests' lines.
    logged = f"Login: user=<{oauth_user}>, method={auth.upper()}"
    eventually(lambda: logged in oauth_dovecot.log_path.read_text(), within=10, what=logged)


@pytest.mark.anyio
async def test_a_server_that_cannot_check_the_token_is_unavailable_for_now_and_the_token_is_kept(
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    oauth_user: str,
    helper: TokenHelper,
    good_token: str,
) -> None:
    """Regression: Dovecot answers AUTHENTICATE with ``NO [UNAVAILABLE] Temporary authentication failure``
    when it cannot ask whether a token is good. That was reported as a server that cannot be talked to,
    its host, port and security to be checked. Now it is the server's refusal for now, in its words; the
    token is not thrown away, and the next call logs in with it."""
    async for mcp in open_client(one_account(oauth_account(oauth_dovecot, oauth_user, helper.command))):
        asked = introspection.requests
        with introspection.down():
            refused = (await mcp.fail("imap_list_mailboxes", {}, "unavailable"))["error"]
        assert introspection.requests == asked + 1  # one login, not retried with a token asked anew
        assert refused["retryable"] is True
        assert "[UNAVAILABLE] Temporary authentication failure" in refused["message"], refused
        assert "Retry in a minute" in refused["message"] and "is running" not in refused["message"]
        listed = await mcp.ok("imap_list_mailboxes", {})
        assert listed["mailboxes"][0]["name"] == "INBOX"
    assert helper.runs == 1


@pytest.mark.anyio
@pytest.mark.parametrize("auth", ["xoauth2", "oauthbearer"])
async def test_expired_token_is_fetched_again_and_the_login_retried_once(
    auth: str,
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    oauth_user: str,
    helper: TokenHelper,
    caplog: pytest.LogCaptureFixture,
) -> None:
    expired, fresh = new_token("expired"), new_token("fresh")
    introspection.accept(fresh, oauth_user)
    helper.queue(expired, fresh)  # the helper hands out its cached token first, then a refreshed one
    caplog.set_level(logging.INFO, logger="mail_imap_mcp")
    (envelope,) = await call(one_account(oauth_account(oauth_dovecot, oauth_user, helper.command, auth)))
    assert envelope["success"], envelope
    assert helper.runs == 2
    status = "401" if auth == "xoauth2" else "invalid_token"
    assert f"refused the OAuth2 token (status {status}" in caplog.text
    assert expired not in caplog.text and fresh not in caplog.text


@pytest.mark.anyio
async def test_a_login_reuses_the_token_until_the_server_refuses_it(
    oauth_dovecot: Dovecot, introspection: IntrospectionEndpoint, oauth_user: str, helper: TokenHelper
) -> None:
    first, second = new_token(), new_token()
    introspection.accept(first, oauth_user)
    helper.queue(first)
    config = one_account(oauth_account(oauth_dovecot, oauth_user, helper.command))
    async for mcp in open_client(config):
        await mcp.ok("imap_list_mailboxes")
        await mcp.ok("imap_list_mailboxes")
        assert helper.runs == 1  # the connection is reused: no new login
        introspection.revoke(first)
        introspection.accept(second, oauth_user)
        helper.queue(second)
        oauth_dovecot.kick(oauth_user)  # the server drops the session: the next call logs in again
        await mcp.ok("imap_list_mailboxes")
        assert helper.runs == 2


@pytest.mark.anyio
@pytest.mark.parametrize(("auth", "status"), [("xoauth2", "401"), ("oauthbearer", "invalid_token")])
@pytest.mark.parametrize("refreshed", [True, False], ids=["new-token-refused", "same-token-again"])
async def test_a_wrong_token_is_auth_failed_with_the_servers_status_and_a_next_step(
    auth: str,
    status: str,
    refreshed: bool,
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    oauth_user: str,
    helper: TokenHelper,
) -> None:
    wrong, other = new_token("wrong"), new_token("other")
    helper.queue(wrong, other) if refreshed else helper.queue(wrong)
    asked = introspection.requests
    error = await failure(one_account(oauth_account(oauth_dovecot, oauth_user, helper.command, auth)))
    assert helper.runs == 2  # fetched once more after the first refusal, then given up
    message = error["message"]
    assert f"refused the OAuth2 access token ({auth.upper()})" in message
    if refreshed:
        assert "also a fresh one from oauth2_token_command in [accounts.default]" in message
        assert introspection.requests == asked + 2
    else:  # a second login with the same token would only be refused again
        assert (
            "run once more, oauth2_token_command in [accounts.default] printed the same token again, so "
            "the token helper did not refresh it" in message
        )
        assert introspection.requests == asked + 1
    assert f"status {status}" in message
    assert "invalid or expired: make the token helper refresh it" in message
    assert error["details"]["server_status"] == status
    assert error["retryable"] is False
    assert wrong not in str(error) and other not in str(error)


@pytest.mark.anyio
async def test_a_token_of_another_user_is_refused(
    oauth_dovecot: Dovecot, introspection: IntrospectionEndpoint, oauth_user: str, helper: TokenHelper
) -> None:
    token = new_token()
    introspection.accept(token, oauth_dovecot.new_user())
    helper.queue(token)
    error = await failure(one_account(oauth_account(oauth_dovecot, oauth_user, helper.command)))
    assert f"issued for {oauth_user!r}" in error["message"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            "import sys; sys.stderr.write('helper: no token for work; run helper auth work\\n'); sys.exit(3)",
            "exited with status 3 and said: 'helper: no token for work; run helper auth work'",
        ),
        ("pass", "printed nothing"),
        ("print('   ')", "printed nothing"),
        ('print(\'{"access_token": "abc", "expires_in": 3599}\')', "must print only the token"),
    ],
    ids=["fails", "empty", "blank", "json"],
)
async def test_a_token_command_that_gives_no_token_is_auth_failed_with_a_next_step(
    script: str, expected: str, oauth_dovecot: Dovecot, introspection: IntrospectionEndpoint, oauth_user: str
) -> None:
    asked = introspection.requests
    settings = oauth_account(oauth_dovecot, oauth_user, [sys.executable, "-c", script])
    error = await failure(one_account(settings))
    assert expected in error["message"], error["message"]
    assert "No OAuth2 access token for account 'default'" in error["message"]
    assert "oauth2_token_command in [accounts.default]" in error["message"]
    assert "authorised again" in error["message"]
    assert introspection.requests == asked  # nothing reached the server


@pytest.mark.anyio
async def test_a_stderr_line_is_shown_with_token_like_text_blanked(
    oauth_dovecot: Dovecot, oauth_user: str
) -> None:
    secret = new_token("leak")
    script = f"import sys; sys.stderr.write('refresh failed for {secret}\\n'); sys.exit(1)"
    error = await failure(
        one_account(oauth_account(oauth_dovecot, oauth_user, [sys.executable, "-c", script]))
    )
    assert "refresh failed for [redacted]" in error["message"]
    assert secret not in str(error)


@pytest.mark.anyio
async def test_a_hanging_token_command_is_stopped_with_what_it_started(
    oauth_dovecot: Dovecot, oauth_user: str, tmp_path: Path
) -> None:
    # The child starts a grandchild that holds stdout open: only killing the process group ends both.
    marker = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, pathlib; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"pathlib.Path({str(marker)!r}).write_text(str(p.pid)); p.wait()"
    )
    settings = oauth_account(
        oauth_dovecot, oauth_user, [sys.executable, "-c", script], oauth2_token_timeout_s=3
    )
    error = await failure(one_account(settings))
    assert "did not finish within 3s and was stopped" in error["message"]  # its own limit ended it
    grandchild = int(marker.read_text())
    eventually(lambda: not _alive(grandchild), within=5, what=f"the end of the helper's child {grandchild}")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.anyio
async def test_a_token_command_that_cannot_start(
    oauth_dovecot: Dovecot, oauth_user: str, tmp_path: Path
) -> None:
    error = await failure(
        one_account(oauth_account(oauth_dovecot, oauth_user, [str(tmp_path / "no-such-helper")]))
    )
    assert "could not be started (No such file or directory)" in error["message"]


@pytest.mark.anyio
async def test_a_server_without_the_mechanism_is_told_and_gets_no_token(
    dovecot: Dovecot, helper: TokenHelper
) -> None:
    token = new_token()
    helper.queue(token)
    error = await failure(one_account(oauth_account(dovecot, dovecot.new_user(), helper.command)))
    assert (
        "does not offer XOAUTH2 login (it offers: LOGIN, PLAIN); the token was not sent" in error["message"]
    )
    assert 'auth = "password" in [accounts.default]' in error["message"]
    assert error["details"]["offered"] == ["LOGIN", "PLAIN"]


@pytest.fixture(scope="module")
def xoauth2_only_dovecot(introspection: IntrospectionEndpoint) -> Iterator[Dovecot]:
    """A Dovecot offering XOAUTH2 but not OAUTHBEARER, asking the endpoint with ``introspection_mode = get``."""
    with Dovecot(
        oauth2_introspection_url=introspection.url,
        oauth2_introspection_mode="get",
        oauth2_mechanisms=("xoauth2",),
        password=SESSION_PASSWORD,
    ) as server:
        yield server


@pytest.mark.anyio
async def test_get_introspection_and_a_missing_oauthbearer_names_the_mechanism_to_use(
    xoauth2_only_dovecot: Dovecot, introspection: IntrospectionEndpoint, helper: TokenHelper
) -> None:
    server = xoauth2_only_dovecot
    user = server.new_user()
    token = new_token()
    introspection.accept(token, user)
    helper.queue(token)
    error = await failure(one_account(oauth_account(server, user, helper.command, "oauthbearer")))
    assert "does not offer OAUTHBEARER login (it offers: LOGIN, PLAIN, XOAUTH2)" in error["message"]
    assert 'Set auth = "xoauth2" in [accounts.default], which it offers' in error["message"]
    (envelope,) = await call(one_account(oauth_account(server, user, helper.command, "xoauth2")))
    assert envelope["success"], envelope


@pytest.mark.anyio
async def test_password_accounts_keep_working_beside_oauth2_accounts(
    dovecot: Dovecot, oauth_dovecot: Dovecot, oauth_user: str, helper: TokenHelper, good_token: str
) -> None:
    config = make_config(
        {
            "oauth": oauth_account(oauth_dovecot, oauth_user, helper.command),
            "same_server_password": account_settings(oauth_dovecot, oauth_dovecot.new_user()),
            "other_server": account_settings(dovecot, dovecot.new_user()),
        }
    )
    async for mcp in open_client(config):
        for account_id in config.accounts:
            data = await mcp.ok("imap_list_mailboxes", {"account_id": account_id})
            assert data["mailboxes"][0]["name"] == "INBOX"
        accounts = (await mcp.ok("imap_list_accounts"))["accounts"]
        assert len(accounts) == 3


@pytest.mark.anyio
async def test_oauth2_login_over_stdio(
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    oauth_user: str,
    helper: TokenHelper,
    tmp_path: Path,
) -> None:
    expired, fresh = new_token("expired"), new_token("fresh")
    introspection.accept(fresh, oauth_user)
    helper.queue(expired, fresh)
    path = tmp_path / "config.toml"
    path.write_text(
        config_toml(
            {
                "work": oauth_account(oauth_dovecot, oauth_user, helper.command, "oauthbearer"),
                "broken": oauth_account(oauth_dovecot, oauth_user, [sys.executable, "-c", "pass"]),
            }
        )
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "MAIL_IMAP_MCP_LOG_LEVEL": "DEBUG"}
    params = StdioServerParameters(command=SERVER, args=["--config", str(path)], env=env)
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        data = await mcp.ok("imap_list_mailboxes", {"account_id": "work"})
        assert data["mailboxes"][0]["name"] == "INBOX"
        error = (await mcp.fail("imap_list_mailboxes", {"account_id": "broken"}, "auth_failed"))["error"]
        assert "printed nothing" in error["message"]
    assert helper.runs == 2


def run_check(path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SERVER, "check", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=patient(90),
        env={
            "PATH": os.environ["PATH"],
            "HOME": os.environ["HOME"],
            PASSWORD_ENV: SESSION_PASSWORD,
            **(env or {}),
        },
        check=False,
    )


@pytest.mark.slow
def test_check_diagnoses_each_oauth2_failure(
    dovecot: Dovecot,
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    tmp_path: Path,
) -> None:
    good, wrong = new_token("good"), new_token("wrong")
    users = {name: oauth_dovecot.new_user() for name in ("xoauth2", "oauthbearer", "wrong")}
    introspection.accept(good, users["xoauth2"])
    good_bearer = new_token("good")
    introspection.accept(good_bearer, users["oauthbearer"])
    helpers = {
        name: TokenHelper(tmp_path / name, token)
        for name, token in (
            ("xoauth2", good),
            ("oauthbearer", good_bearer),
            ("wrong", wrong),
            ("nomech", good),
        )
    }
    hang = [sys.executable, "-c", "import time; time.sleep(30)"]
    accounts = {
        "a_xoauth2": oauth_account(oauth_dovecot, users["xoauth2"], helpers["xoauth2"].command),
        "b_oauthbearer": oauth_account(
            oauth_dovecot, users["oauthbearer"], helpers["oauthbearer"].command, "oauthbearer"
        ),
        "c_wrong": oauth_account(oauth_dovecot, users["wrong"], helpers["wrong"].command),
        "d_fails": oauth_account(
            oauth_dovecot, users["wrong"], [sys.executable, "-c", "raise SystemExit(2)"]
        ),
        "e_hangs": oauth_account(oauth_dovecot, users["wrong"], hang, oauth2_token_timeout_s=1),
        "f_empty": oauth_account(oauth_dovecot, users["wrong"], ["true"]),
        "g_nomech": oauth_account(dovecot, dovecot.new_user(), helpers["nomech"].command),
        "h_password": account_settings(oauth_dovecot, oauth_dovecot.new_user()),
    }
    path = tmp_path / "config.toml"
    path.write_text(config_toml(accounts))
    done = run_check(path)
    assert done.returncode == 1
    assert done.stderr == ""
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["ok   a_xoauth2"].startswith(
        f"127.0.0.1:{oauth_dovecot.tls_port} (tls, xoauth2) as {users['xoauth2']}: logged in"
    )
    assert "(tls, oauthbearer)" in lines["ok   b_oauthbearer"] and "logged in" in lines["ok   b_oauthbearer"]
    assert "[auth_failed]" in lines["FAIL c_wrong"] and "status 401, scope 'mail'" in lines["FAIL c_wrong"]
    assert "invalid or expired" in lines["FAIL c_wrong"] and "the same token again" in lines["FAIL c_wrong"]
    assert "exited with status 2" in lines["FAIL d_fails"]
    assert "did not finish within 1s" in lines["FAIL e_hangs"]
    assert "printed nothing" in lines["FAIL f_empty"]
    assert "does not offer XOAUTH2" in lines["FAIL g_nomech"]
    assert lines["ok   h_password"].startswith(f"127.0.0.1:{oauth_dovecot.tls_port} (tls) as ")
    for token in (good, good_bearer, wrong):
        assert token not in done.stdout
    assert helpers["wrong"].runs == 2


@pytest.mark.slow
@pytest.mark.anyio
async def test_env_only_oauth2_account(
    oauth_dovecot: Dovecot, oauth_user: str, helper: TokenHelper, good_token: str
) -> None:
    env = env_account(
        oauth_dovecot,
        oauth_user,
        MAIL_IMAP_DEFAULT_PASS="",
        MAIL_IMAP_DEFAULT_AUTH="oauthbearer",
        MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND=json.dumps(helper.command),
    )
    (envelope,) = await call(load_config(None, {**env, "HOME": "/nonexistent"}))
    assert envelope["success"], envelope
    done = subprocess.run(
        [SERVER, "check"],
        capture_output=True,
        text=True,
        timeout=patient(60),
        env={"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], **env},
    )
    assert done.stdout.startswith(f"ok   default: 127.0.0.1:{oauth_dovecot.tls_port} (tls, oauthbearer)"), (
        done
    )
    # Shell words work too; a failure names the variable to fix.
    env["MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND"] = f"{shlex.quote(sys.executable)} -c 'raise SystemExit(4)'"
    done = subprocess.run(
        [SERVER, "check"],
        capture_output=True,
        text=True,
        timeout=patient(60),
        env={"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], **env},
    )
    assert done.returncode == 1 and done.stderr == ""
    assert "exited with status 4" in done.stdout
    assert "of MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND)" in done.stdout
    assert good_token not in done.stdout


@pytest.mark.anyio
async def test_on_the_wire_the_token_travels_only_in_the_sasl_continuation(
    oauth_dovecot: Dovecot, introspection: IntrospectionEndpoint, oauth_user: str, helper: TokenHelper
) -> None:
    """The exact bytes of an XOAUTH2 login with one refused token, and the round trips a first call costs."""
    expired, token = new_token("expired"), new_token("fresh")
    introspection.accept(token, oauth_user)
    helper.queue(expired, token)
    recorder = ImapRecorder(oauth_dovecot.plain_port)
    settings = oauth_account(oauth_dovecot, oauth_user, helper.command, port=recorder.port, security="plain")
    config = one_account(settings)
    app = AppContext.from_config(config)
    try:
        async for mcp in open_client(config, app):
            await mcp.ok("imap_list_mailboxes")
            trips = app.connection("default").round_trips
    finally:
        recorder.close()
    (sent,) = (bytes(out) for out, _ in recorder.take())
    lines = sent.split(b"\r\n")
    verbs = [line.split(b" ")[1] for line in lines if b" " in line]
    # No CAPABILITY: the tagged OK carried it. ENABLE QRESYNC rides with LIST (no round trip of its
    # own). LOGOUT when the server closed.
    assert verbs == [b"AUTHENTICATE", b"AUTHENTICATE", b"ENABLE", b"LIST", b"LOGOUT"]
    authenticate = [index for index, line in enumerate(lines) if line.endswith(b" AUTHENTICATE XOAUTH2")]
    assert len(authenticate) == 2
    first, second = (lines[index + 1] for index in authenticate)
    assert base64.b64decode(first) == f"user={oauth_user}\x01auth=Bearer {expired}\x01\x01".encode()
    assert lines[authenticate[0] + 2] == b""  # the empty answer to the server's error challenge
    assert base64.b64decode(second) == f"user={oauth_user}\x01auth=Bearer {token}\x01\x01".encode()
    # TCP connect, greeting, AUTHENTICATE's "+", the refused token's challenge, the empty answer's NO,
    # AUTHENTICATE's "+" again, the accepted token's OK, LIST. (Without SASL-IR, one more than LOGIN's.)
    assert trips == 8


def test_setup_with_a_token_command_writes_an_oauth2_account_that_logs_in(
    tmp_path: Path, oauth_dovecot: Dovecot, oauth_user: str, helper: TokenHelper, good_token: str
) -> None:
    # `mail-imap-mcp setup` as a script runs it: the token command instead of a password (no secret to
    # keep: the helper keeps its own), the login proved, the config written.
    config = tmp_path / "mail.toml"
    argv = [SERVER, "setup", "--config", str(config), "--address", f"{oauth_user}@example.org"]
    argv += ["--host", oauth_dovecot.host, "--port", str(oauth_dovecot.tls_port), "--username", oauth_user]
    argv += ["--ca-file", str(oauth_dovecot.ca_file), "--oauth2-token-command", shlex.join(helper.command)]
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        argv, stdin=subprocess.DEVNULL, env=env, capture_output=True, text=True, timeout=patient(60)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok: logged in" in done.stdout
    (account,) = load_config(config, env={}).accounts.values()
    assert (account.auth.value, account.oauth2_token_command) == ("xoauth2", helper.command)
    assert account.password_source == "oauth2_token_command"
    assert good_token not in config.read_text() + done.stdout
    check = subprocess.run(
        [SERVER, "check", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=patient(60),
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_every_connection_of_the_account_shares_one_token_and_one_refresh(
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    oauth_user: str,
    helper: TokenHelper,
    good_token: str,
) -> None:
    # Issue 48's seam: the pool's connection, a watcher's and the index sync's each logged in with a token
    # of their own (a command run each); an expired token cost one run per connection.
    config = one_account(oauth_account(oauth_dovecot, oauth_user, helper.command))
    pool = ConnectionPool(config.accounts, Logins().all(config.accounts))
    connections = [pool.get("default"), pool.new_connection("default"), pool.new_connection("default")]
    try:
        for connection in connections:
            connection.connect()
        assert helper.runs == 1
        fresh = new_token()
        introspection.revoke(good_token)
        introspection.accept(fresh, oauth_user)
        helper.queue(fresh)
        for connection in connections:
            connection.discard()
            connection.connect()  # the first is refused the old token and gets the fresh one for all
        assert helper.runs == 2
        assert all(connection.logins == 2 for connection in connections)
    finally:
        for connection in connections[1:]:
            connection.close()
        pool.close_all()
