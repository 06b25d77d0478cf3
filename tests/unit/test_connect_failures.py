"""Connect and login failures: the IMAP layer raises what happened (typed, with the account, the phase
and the cause), the failure registry says it, naming the setting to change as the user writes it.

The refusals before a password or token is sent (no STARTTLS, LOGINDISABLED, a mechanism not offered)
and a refused LOGIN run over the scripted fake server under a real connection; the wording of each
connect phase is pure logic, checked on the typed error built directly.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

import pytest

from mail_imap_mcp.config import AccountConfig, Config, ConfigError, load_config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import (
    AccountBusy,
    AccountUnusable,
    CallTimedOut,
    ConnectFailed,
    ConnectPhase,
    ImplicitTlsPort,
    LoginDisabled,
    LoginRefused,
    MechanismNotOffered,
    ReconnectFailed,
    StartTlsMissing,
    TokenCommandFailed,
)
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import AccountUnknown
from mail_imap_mcp.mail.write_errors import DestinationMissing, ExtensionMissing, WriteRefused
from mail_imap_mcp.presentation.failures import envelope_of, mailbox_issue
from tests.support.fake_imap import LOGIN_OK, ScriptedServer, answer
from tests.support.translate import as_tool_failure

PLAIN_GREETING = b"* OK [CAPABILITY IMAP4rev1 LITERAL+ ID ENABLE IDLE AUTH=PLAIN] ready"


def account(**settings: Any) -> AccountConfig:
    values = {
        "host": "imap.example.org",
        "port": 1143,
        "security": "starttls",
        "username": "ann",
        "password": "secret",
        **settings,
    }
    return Config.model_validate({"accounts": {"work": values}}).accounts["work"]


#: Without TLS (the fake server speaks none): allowed for a loopback host only.
PLAIN = {"host": "127.0.0.1", "security": "plain"}


def fails_to_connect(server: ScriptedServer, config: AccountConfig) -> ConnectFailed:
    """The typed error of a call on ``server`` whose connect fails; the commands sent are checked by the caller."""
    connection = AccountConnection(
        "work", config, credentials=credentials_for("work", config), open_socket=server.open_socket
    )
    with pytest.raises(ConnectFailed) as failed:
        connection.run(lambda session: None, retry=False)
    return failed.value


def refused_before_login(error: ConnectFailed, server: ScriptedServer) -> ToolFailure:
    """What the registry says of a refusal that came before anything secret was sent (checked here)."""
    assert server.commands() == []  # neither STARTTLS nor LOGIN nor AUTHENTICATE
    failure = envelope_of(error)
    assert failure.retryable is False and failure.details["account_id"] == "work"
    return failure


def test_starttls_missing_sends_no_password_and_names_the_tls_settings() -> None:
    server = ScriptedServer(greeting=PLAIN_GREETING)
    error = fails_to_connect(server, account(security="starttls"))
    assert isinstance(error, StartTlsMissing)
    failure = refused_before_login(error, server)
    assert failure.code is ErrorCode.UNAVAILABLE
    assert failure.message == (
        "The server imap.example.org:1143 does not offer STARTTLS; refusing to send the password "
        'unencrypted. Use the server\'s TLS port (security = "tls" in [accounts.work] and port = 993 in '
        "[accounts.work] on most servers)."
    )
    assert failure.details == {"account_id": "work"}


def test_logindisabled_sends_no_password_and_names_starttls_or_tls() -> None:
    server = ScriptedServer(greeting=b"* OK [CAPABILITY IMAP4rev1 LOGINDISABLED STARTTLS] ready")
    error = fails_to_connect(server, account(**PLAIN))
    assert isinstance(error, LoginDisabled) and error.phase is ConnectPhase.LOGIN
    failure = refused_before_login(error, server)
    assert failure.code is ErrorCode.UNAVAILABLE
    assert failure.message == (
        "The server 127.0.0.1:1143 refuses LOGIN on an unencrypted connection (LOGINDISABLED); "
        'the password was not sent. Set security = "starttls" in [accounts.work] or security = "tls" '
        "in [accounts.work] with the TLS port."
    )


def test_a_mechanism_not_offered_sends_no_token_and_names_the_one_offered() -> None:
    server = ScriptedServer(greeting=PLAIN_GREETING.replace(b"AUTH=PLAIN", b"AUTH=PLAIN AUTH=OAUTHBEARER"))
    config = account(auth="xoauth2", password=None, oauth2_token_command=["echo", "a-token"], **PLAIN)
    error = fails_to_connect(server, config)
    assert isinstance(error, MechanismNotOffered) and error.offered == ["OAUTHBEARER", "PLAIN"]
    failure = refused_before_login(error, server)  # no AUTHENTICATE: the token stays here
    assert failure.code is ErrorCode.AUTH_FAILED
    assert failure.message == (
        "The server 127.0.0.1:1143 does not offer XOAUTH2 login (it offers: OAUTHBEARER, PLAIN); "
        'the token was not sent. Set auth = "oauthbearer" in [accounts.work], which it offers.'
    )
    assert failure.details == {"account_id": "work", "auth": "xoauth2", "offered": ["OAUTHBEARER", "PLAIN"]}


def test_a_refused_login_is_the_login_phase_with_the_providers_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    server = ScriptedServer(greeting=PLAIN_GREETING)
    server.expect(answer("LOGIN", b"{tag} NO [AUTHENTICATIONFAILED] Authentication failed."))
    monkeypatch.setenv("WORK_PASSWORD", "secret")
    error = fails_to_connect(server, account(password_env="WORK_PASSWORD", password=None, **PLAIN))
    assert type(error) is ConnectFailed and error.phase is ConnectPhase.LOGIN
    assert isinstance(error.cause, LoginRefused)
    failure = envelope_of(error)
    assert failure.code is ErrorCode.AUTH_FAILED
    assert failure.message.startswith(
        "The server 127.0.0.1:1143 refused the login of 'ann' (account 'work'). Hint: "
    )
    assert failure.message.endswith(
        "Otherwise check username in [accounts.work] and password_env in [accounts.work]."
    )
    assert failure.details == {"account_id": "work", "setting": "password_env in [accounts.work]"}


def test_regression_a_connection_lost_while_login_waits_is_no_refused_password() -> None:
    """A link that drops while LOGIN waits for its answer (in CI a busy host's reconnect was cut so, after
    Dovecot had logged it in) is a lost connection to retry, not a password to check: imapclient makes a
    LoginError of it all the same."""
    server = ScriptedServer(greeting=PLAIN_GREETING)
    server.expect(answer("LOGIN", then_close=True))
    error = fails_to_connect(server, account(**PLAIN))
    assert error.phase is ConnectPhase.LOGIN and not isinstance(error.cause, LoginRefused)
    failure = envelope_of(error)
    assert failure.code is ErrorCode.UNAVAILABLE and failure.retryable, failure
    assert "during login" in failure.message and "refused" not in failure.message


def test_a_login_that_times_out_is_worded_as_a_timeout_of_the_login() -> None:
    from imapclient.exceptions import LoginError

    timed_out = LoginError("timed out")
    timed_out.__context__ = TimeoutError("timed out")  # as imapclient raises it: from within its except
    failure = envelope_of(ConnectFailed("work", account(**PLAIN), ConnectPhase.LOGIN, timed_out))
    assert failure.code is ErrorCode.TIMEOUT, failure
    assert "while connecting (login)" in failure.message


def test_the_connections_translate_gives_the_registrys_words() -> None:
    # What the tools' connections do (AppContext passes as_tool_failure): the same envelope error.
    server = ScriptedServer(greeting=PLAIN_GREETING)
    config = account(security="starttls")
    connection = AccountConnection(
        "work",
        config,
        credentials=credentials_for("work", config),
        open_socket=server.open_socket,
        translate=as_tool_failure,
    )
    with pytest.raises(ToolFailure) as failed:
        connection.run(lambda session: None, retry=False)
    assert "does not offer STARTTLS; refusing to send the password unencrypted" in failed.value.message


def test_a_working_login_raises_nothing() -> None:
    # The refusals above are no accident of the script: the same server with LOGIN answered logs in.
    server = ScriptedServer(greeting=PLAIN_GREETING)
    server.expect(answer("LOGIN", LOGIN_OK))
    config = account(**PLAIN)
    connection = AccountConnection(
        "work", config, credentials=credentials_for("work", config), open_socket=server.open_socket
    )
    assert connection.run(lambda session: "in", retry=False) == "in"
    assert server.commands() == ["LOGIN"]


def said(cause: BaseException, phase: ConnectPhase = ConnectPhase.TCP, **settings: Any) -> ToolFailure:
    return envelope_of(ConnectFailed("work", account(**settings), phase, cause))


def test_a_timeout_is_worded_by_the_phase_it_happened_in() -> None:
    tcp = said(TimeoutError(), ConnectPhase.TCP, connect_timeout_s=7)
    assert tcp.code is ErrorCode.TIMEOUT
    assert tcp.message == (
        "Connecting to imap.example.org:1143 timed out after 7s; check host in [accounts.work] and "
        "port in [accounts.work], and that no firewall blocks it."
    )
    assert tcp.details == {"account_id": "work", "timeout_s": 7}
    greeting = said(TimeoutError(), ConnectPhase.GREETING, connect_timeout_s=7)
    assert greeting.code is ErrorCode.UNAVAILABLE and greeting.retryable is False
    assert greeting.message.startswith(
        "Connected to imap.example.org:1143, but no IMAP greeting came within 7s: the port most likely "
        'expects implicit TLS. Set security = "tls" in [accounts.work] for this port'
    )
    # On a TLS connection a late greeting says nothing about the port: a slow server.
    late = said(TimeoutError(), ConnectPhase.GREETING, security="tls", connect_timeout_s=7)
    assert late.code is ErrorCode.TIMEOUT
    assert late.message == (
        "The server imap.example.org:1143 did not answer within 7s while connecting (greeting); retry shortly."
    )
    assert "(starttls)" in said(TimeoutError(), ConnectPhase.STARTTLS, security="starttls").message


def test_dns_refused_and_unknown_failures_name_host_port_and_security() -> None:
    dns = said(socket.gaierror(-2, "Name or service not known"))
    assert dns.code is ErrorCode.UNAVAILABLE and dns.retryable is False
    assert dns.message == "The host name 'imap.example.org' does not resolve; check host in [accounts.work]."
    refused = said(ConnectionRefusedError())
    assert refused.retryable is True
    assert refused.message == (
        "Nothing accepts connections at imap.example.org:1143; check port in [accounts.work] and that the "
        "server is running."
    )
    other = said(OSError("No route to host"), ConnectPhase.TLS)
    assert other.retryable is True
    assert other.message == (
        "Cannot talk to the IMAP server imap.example.org:1143 (OSError during tls); check that it is "
        "running and that host in [accounts.work], port in [accounts.work] and security in "
        "[accounts.work] are right."
    )


def test_tls_failures_name_ca_file_or_the_port() -> None:
    certificate = ssl.SSLCertVerificationError(1, "certificate verify failed")
    certificate.verify_message = "self-signed certificate"
    untrusted = said(certificate, ConnectPhase.TLS, security="tls")
    assert "could not be verified (self-signed certificate)" in untrusted.message
    assert "set ca_file in [accounts.work] to the certificate (PEM)" in untrusted.message
    plaintext = said(ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"), ConnectPhase.TLS)
    assert plaintext.message.startswith(
        "The server at imap.example.org:1143 answered without TLS, so this port is not an implicit-TLS "
        'port. Use STARTTLS on it (security = "starttls" in [accounts.work])'
    )
    implicit = said(ImplicitTlsPort(2.0), ConnectPhase.GREETING, security="starttls")
    assert (
        "no IMAP greeting came within 2s and the port answered a TLS handshake: it expects implicit TLS, "
        'not security = "starttls" in [accounts.work]'
    ) in implicit.message


def test_credentials_that_cannot_be_had_name_their_source() -> None:
    password = said(ConfigError("WORK_PASSWORD is not set"), ConnectPhase.TCP)
    assert password.code is ErrorCode.AUTH_FAILED
    assert password.message == (
        "No password for account 'work': WORK_PASSWORD is not set. Fix the account's password source."
    )
    token = envelope_of(
        ConnectFailed(
            "work",
            account(auth="xoauth2", password=None, oauth2_token_command=["pizauth", "show", "work"]),
            ConnectPhase.TCP,
            TokenCommandFailed("the command exited with status 1"),
        )
    )
    assert token.code is ErrorCode.AUTH_FAILED and token.details == {"account_id": "work", "auth": "xoauth2"}
    assert token.message.startswith(
        "No OAuth2 access token for account 'work': the command exited with status 1. Run the command "
        "yourself ('pizauth' of oauth2_token_command in [accounts.work])"
    )


def test_busy_out_of_time_and_lost_calls_keep_their_words() -> None:
    config = account(connect_timeout_s=5, command_timeout_s=20)
    busy = envelope_of(AccountBusy("work"))
    assert busy.code is ErrorCode.TIMEOUT and busy.details == {"account_id": "work"}
    assert busy.message == "Account 'work' is busy with another call; try again shortly."
    late = envelope_of(CallTimedOut("work", config, 25.0))
    assert late.code is ErrorCode.TIMEOUT
    assert late.message == (
        "The IMAP server imap.example.org did not answer in time (command timeout 20s, call budget 25s); "
        "retry shortly."
    )
    assert late.details == {"account_id": "work", "timeout_s": 20, "budget_s": 25.0}
    lost = envelope_of(ReconnectFailed("work", config))
    assert lost.code is ErrorCode.UNAVAILABLE and lost.retryable is True
    assert lost.message == (
        "Lost the connection to imap.example.org and could not re-establish it; retry shortly."
    )
    unknown = envelope_of(AccountUnknown("home", ["work", "archive"]))
    assert unknown.code is ErrorCode.NOT_FOUND
    assert unknown.message == (
        "Account 'home' is not configured (configured: archive, work); call imap_list_accounts to see them."
    )
    assert unknown.details == {
        "parameter": "account_id",
        "account_id": "home",
        "configured": ["archive", "work"],
    }


@pytest.mark.parametrize(
    ("said_by_server", "code"),
    [
        ("[OVERQUOTA] Quota exceeded (mailbox for user is full)", ErrorCode.LIMIT_EXCEEDED),
        ("[NOPERM] Permission denied", ErrorCode.PERMISSION_DENIED),
        ("[READ-ONLY] Mailbox is read-only", ErrorCode.PERMISSION_DENIED),
        ("Internal error\r\noccurred", ErrorCode.UNAVAILABLE),
    ],
)
def test_a_refused_write_is_coded_by_the_servers_reason(said_by_server: str, code: ErrorCode) -> None:
    refused = WriteRefused(Exception(said_by_server), "UID STORE", "Work")
    failure = envelope_of(refused)
    assert failure.code is code and failure.retryable is False
    shown = said_by_server.replace("\r", " ").replace("\n", " ")
    assert failure.message == f"The server refused UID STORE in 'Work': {shown}"
    assert failure.details == {"command": "UID STORE", "mailbox": "Work"}


def test_a_move_whose_expunge_was_refused_says_where_the_messages_are() -> None:
    refused = WriteRefused(Exception("[NOPERM] no"), "UID EXPUNGE", "INBOX")
    refused.copied_to = "Archive"
    failure = envelope_of(refused)
    assert failure.message == (
        "The server refused UID EXPUNGE in 'INBOX': [NOPERM] no The messages were copied to 'Archive' but "
        "are still in 'INBOX' as well."
    )


def test_destination_and_extension_refusals_name_the_argument_and_capability() -> None:
    missing = envelope_of(DestinationMissing("Archiv"))
    assert missing.code is ErrorCode.NOT_FOUND
    assert missing.details == {"parameter": "destination_mailbox", "mailbox": "Archiv"}
    assert missing.message.startswith(
        "Mailbox 'Archiv' (destination_mailbox) does not exist; nothing was changed."
    )
    extension = envelope_of(ExtensionMissing("UIDPLUS", "remove exactly these messages (UID EXPUNGE)"))
    assert extension.code is ErrorCode.PERMISSION_DENIED
    assert extension.details == {"missing_capability": "UIDPLUS"}
    assert extension.message.startswith(
        "The server does not offer UIDPLUS, which is needed to remove exactly these messages (UID EXPUNGE); "
        "nothing was changed."
    )
    assert "every other message marked \\Deleted.)" in extension.message


def test_a_refused_write_as_one_mailboxs_issue_keeps_the_registrys_code() -> None:
    issue = mailbox_issue("Work", WriteRefused(Exception("[OVERQUOTA] full"), "UID COPY", "Work"))
    assert issue.code == "limit_exceeded" and issue.retryable is False
    assert "The server refused UID COPY in 'Work': [OVERQUOTA] full" in issue.message


def select_read_write(exists: int = 1) -> list[bytes]:
    return [
        b"* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)",
        b"* OK [PERMANENTFLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft \\*)] Flags permitted.",
        b"* %d EXISTS" % exists,
        b"* OK [UIDVALIDITY 1700000000] UIDs valid",
        b"* OK [UIDNEXT 2] Predicted next UID",
        b"{tag} OK [READ-WRITE] Select completed",
    ]


def test_a_move_as_copy_and_expunge_whose_expunge_is_refused_says_where_the_messages_are() -> None:
    # A server with UIDPLUS but no MOVE: UID COPY, then \Deleted + UID EXPUNGE, whose STORE is refused.
    server = ScriptedServer(greeting=PLAIN_GREETING)
    server.expect(
        answer("LOGIN", LOGIN_OK.replace(b" MOVE", b"")),
        answer("SELECT", *select_read_write()),
        answer("UID COPY", b"{tag} OK [COPYUID 1700000001 1 7] Copy completed"),
        answer("UID STORE", b"{tag} NO [NOPERM] Permission denied"),
        answer("UID STORE", b"{tag} NO [NOPERM] Permission denied"),  # the \Deleted taken back
    )
    config = account(**PLAIN)
    connection = AccountConnection(
        "work",
        config,
        credentials=credentials_for("work", config),
        open_socket=server.open_socket,
        translate=as_tool_failure,
    )

    def move(session: ImapSession) -> object:
        session.select("INBOX")
        return session.uid_move([1], "Archive")

    with pytest.raises(ToolFailure) as refused:
        connection.run_write(move)
    assert server.commands() == ["LOGIN", "SELECT", "UID COPY", "UID STORE", "UID STORE"]
    assert refused.value.code is ErrorCode.PERMISSION_DENIED and refused.value.retryable is False
    assert refused.value.message == (
        "The server refused UID EXPUNGE in 'INBOX': store failed: [NOPERM] Permission denied The messages "
        "were copied to 'Archive' but are still in 'INBOX' as well."
    )


def test_a_copy_to_a_missing_mailbox_is_the_destination_not_found() -> None:
    server = ScriptedServer(greeting=PLAIN_GREETING)
    server.expect(
        answer("LOGIN", LOGIN_OK),
        answer("SELECT", *select_read_write()),
        answer("UID COPY", b"{tag} NO [TRYCREATE] Mailbox doesn't exist: Archiv"),
    )
    config = account(**PLAIN)
    connection = AccountConnection(
        "work", config, credentials=credentials_for("work", config), open_socket=server.open_socket
    )

    def copy(session: ImapSession) -> object:
        session.select("INBOX")
        return session.uid_copy([1], "Archiv")

    with pytest.raises(DestinationMissing) as missing:
        connection.run_write(copy)
    assert missing.value.mailbox == "Archiv" and missing.value.parameter == "destination_mailbox"
    assert envelope_of(missing.value).details == {"parameter": "destination_mailbox", "mailbox": "Archiv"}


#: The bundle's form as Claude Desktop passes it, with the address at a domain of its own.
FORM_ENV = {
    "MAIL_IMAP_DEFAULT_ADDRESSES": "ann@example.org",
    "MAIL_IMAP_DEFAULT_HOST": "imap.example.org",
    "MAIL_IMAP_DEFAULT_PASS": "secret",
    "HOME": "/nonexistent",
}


def unusable(env: dict[str, str]) -> tuple[ToolFailure, int]:
    """What a call on the form's account says, and how many sockets it opened."""
    opened: list[object] = []

    def open_socket(*args: object) -> socket.socket:
        opened.append(args)
        raise AssertionError("an account with a wrong setting is never connected")

    config = load_config(None, {**FORM_ENV, **env}).accounts["default"]
    connection = AccountConnection(
        "default", config, credentials=credentials_for("default", config), open_socket=open_socket
    )
    with pytest.raises(AccountUnusable) as failed:
        connection.run(lambda session: None, retry=False)
    return envelope_of(failed.value), len(opened)


@pytest.mark.parametrize(
    ("env", "code", "field", "setting"),
    [
        ({"MAIL_IMAP_DEFAULT_PASS": ""}, ErrorCode.AUTH_FAILED, "Password or app password", "PASS"),
        ({"MAIL_IMAP_DEFAULT_HOST": ""}, ErrorCode.UNAVAILABLE, "IMAP server (optional)", "HOST"),
        ({"MAIL_IMAP_DEFAULT_PORT": "99999"}, ErrorCode.UNAVAILABLE, "IMAP port (optional)", "PORT"),
        (
            {"MAIL_IMAP_DEFAULT_SECURITY": "ssl"},
            ErrorCode.UNAVAILABLE,
            "Connection security (optional)",
            "SECURITY",
        ),
    ],
)
def test_regression_a_call_on_an_account_with_a_wrong_setting_names_the_forms_field_unconnected(
    env: dict[str, str], code: ErrorCode, field: str, setting: str
) -> None:
    failure, opened = unusable(env)
    assert opened == 0
    assert (failure.code, failure.retryable) == (code, False)
    assert failure.details == {
        "account_id": "default",
        "field": field,
        "setting": f"MAIL_IMAP_DEFAULT_{setting}",
    }
    assert failure.message.startswith(
        f"Account 'default' cannot be used as set up: \"{field}\" (MAIL_IMAP_DEFAULT_"
    )
    assert "Correct it in the extension's settings" in failure.message
    assert "secret" not in failure.message


def test_every_wrong_setting_is_said_the_first_in_details() -> None:
    failure, _ = unusable({"MAIL_IMAP_DEFAULT_PORT": "x", "MAIL_IMAP_DEFAULT_PASS": ""})
    assert failure.code is ErrorCode.UNAVAILABLE and failure.details["setting"] == "MAIL_IMAP_DEFAULT_PORT"
    assert '"Password or app password" (MAIL_IMAP_DEFAULT_PASS) is empty' in failure.message


def test_regression_a_refused_password_of_the_form_names_its_field() -> None:
    config = load_config(None, FORM_ENV).accounts["default"]
    failure = envelope_of(
        ConnectFailed("default", config, ConnectPhase.LOGIN, LoginRefused("[AUTHENTICATIONFAILED] no"))
    )
    assert failure.code is ErrorCode.AUTH_FAILED
    assert failure.details == {
        "account_id": "default",
        "field": "Password or app password",
        "setting": "MAIL_IMAP_DEFAULT_PASS",
    }
    assert failure.message.endswith(
        'Otherwise check "Username (optional)" (MAIL_IMAP_DEFAULT_USER) and "Password or app password" '
        "(MAIL_IMAP_DEFAULT_PASS)."
    )
