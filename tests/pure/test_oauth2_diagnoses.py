"""Pure logic of OAuth2 login: SASL messages, the server's challenge decoded, and what each failure says.

Dovecot 2.3 reports every refused token the same way (``401`` / ``invalid_token``); the answers of other
servers (Gmail's ``400`` with a scope, RFC 7628 ``insufficient_scope``) are checked here on the mapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.credentials.token_command import run_token_command
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.errors import ConnectFailed, ConnectPhase, MechanismNotOffered, OAuthRejected
from mail_imap_mcp.imap.personality import Profile
from mail_imap_mcp.net.oauth_challenge import OAuthChallenge
from mail_imap_mcp.net.sasl import SaslExchange, oauth_initial_response
from mail_imap_mcp.net.tokens import TokenUnavailable
from mail_imap_mcp.presentation.failures import envelope_of


def connect_failure(
    cause: BaseException, account_id: str, config: AccountConfig, phase: ConnectPhase
) -> ToolFailure:
    """What the registry says of the IMAP layer's typed connect failure with ``cause``."""
    return envelope_of(ConnectFailed(account_id, config, phase, cause))


def mechanism_not_offered(account_id: str, config: AccountConfig, capabilities: list[Any]) -> ToolFailure:
    """What the registry says when a server with ``capabilities`` lacks the account's mechanism."""
    return envelope_of(MechanismNotOffered(account_id, config, Profile.of(capabilities).mechanisms))


def account(host: str = "imap.example.org", auth: str = "xoauth2", **extra: Any) -> AccountConfig:
    settings: dict[str, Any] = {
        "host": host,
        "username": "me@example.org",
        "auth": auth,
        "oauth2_token_command": ["pizauth", "show", "work"],
        **extra,
    }
    config = AccountConfig.model_validate(settings)
    config._file_section = "accounts.work"
    return config


def test_xoauth2_initial_response_is_googles_format() -> None:
    sent = oauth_initial_response("XOAUTH2", "me@example.org", "ya29.abc", "imap.gmail.com", 993)
    assert sent == b"user=me@example.org\x01auth=Bearer ya29.abc\x01\x01"


def test_oauthbearer_initial_response_follows_rfc_7628_and_escapes_the_authzid() -> None:
    sent = oauth_initial_response("OAUTHBEARER", "a,b=c@example.org", "tok", "mail.example.org", 993)
    assert (
        sent == b"n,a=a=2Cb=3Dc@example.org,\x01host=mail.example.org\x01port=993\x01auth=Bearer tok\x01\x01"
    )


@pytest.mark.parametrize(("method", "answer"), [("XOAUTH2", b""), ("OAUTHBEARER", b"\x01")])
def test_the_exchange_keeps_the_servers_challenge_and_answers_as_the_mechanism_asks(
    method: str, answer: bytes
) -> None:
    exchange = SaslExchange(method, b"initial")
    assert exchange(b"") == b"initial"
    assert exchange(b'{"status":"401","schemes":"bearer","scope":"https://mail.google.com/"}') == answer
    assert exchange.challenge == OAuthChallenge("401", "https://mail.google.com/", "bearer")
    assert exchange(b"more") == answer and exchange(b"more") == answer
    assert exchange(b"more") is None  # a server that keeps challenging: the client aborts


@pytest.mark.parametrize(
    ("decoded", "expected"),
    [
        (b'{"status":"invalid_token"}', OAuthChallenge("invalid_token")),
        (b'{"status":401,"scope":"mail"}', OAuthChallenge("401", "mail")),
        (b'{"status":"4\\u00000\\n1","scope":["x"]}', OAuthChallenge("4 0 1")),
        (b"not json", None),
        (b"[1, 2]", None),
        (b'{"status": true}', OAuthChallenge()),
    ],
)
def test_challenges_are_parsed_defensively(decoded: bytes, expected: OAuthChallenge | None) -> None:
    assert OAuthChallenge.parse(decoded) == expected


def rejected(
    config: AccountConfig, challenge: OAuthChallenge | None, said: str = "[AUTHENTICATIONFAILED] no"
) -> str:
    failure = connect_failure(OAuthRejected(challenge, said), "work", config, ConnectPhase.LOGIN)
    assert failure.code is ErrorCode.AUTH_FAILED
    assert failure.retryable is False
    return failure.message


def test_an_expired_token_says_to_refresh_the_helper() -> None:
    message = rejected(account(), OAuthChallenge("401", "mail", "bearer"))
    assert "status 401, scope 'mail'" in message
    assert "invalid or expired: make the token helper refresh it" in message
    assert "also a fresh one from oauth2_token_command in [accounts.work]" in message
    failure = connect_failure(
        OAuthRejected(OAuthChallenge("401"), "no", same_token_again=True),
        "work",
        account(),
        ConnectPhase.LOGIN,
    )
    assert "printed the same token again, so the token helper did not refresh it" in failure.message


@pytest.mark.parametrize(
    ("host", "scope"),
    [
        ("imap.gmail.com", "the scope https://mail.google.com/"),
        (
            "outlook.office365.com",
            "the scopes https://outlook.office.com/IMAP.AccessAsUser.All and offline_access",
        ),
    ],
)
def test_a_token_without_the_imap_scope_is_told_the_providers_scope(host: str, scope: str) -> None:
    message = rejected(account(host), OAuthChallenge("insufficient_scope", "https://mail.google.com/"))
    assert (
        f"The token lacks the permission (scope) IMAP needs; authorise the token helper again with {scope}."
        in message
    )
    # Gmail answers 400 with the scope it wants for a token it cannot use: user and scope are both named.
    message = rejected(account(host), OAuthChallenge("400", "https://mail.google.com/", "Bearer"))
    assert "status 400, scope 'https://mail.google.com/'" in message
    assert f"issued for 'me@example.org' (username in [accounts.work]) with {scope}" in message


def test_a_refusal_without_a_challenge_quotes_the_server() -> None:
    # Microsoft 365 answers a bad token with a plain NO.
    message = rejected(account("outlook.office365.com"), None, "AUTHENTICATE failed.")
    assert "the server said: AUTHENTICATE failed." in message
    assert "IMAP.AccessAsUser.All" in message


def test_a_missing_mechanism_names_the_other_one_or_the_password() -> None:
    oauthbearer = account(auth="oauthbearer")
    failure = mechanism_not_offered("work", oauthbearer, [b"IMAP4rev1", b"AUTH=PLAIN", b"AUTH=XOAUTH2"])
    assert "does not offer OAUTHBEARER login (it offers: PLAIN, XOAUTH2)" in failure.message
    assert 'Set auth = "xoauth2" in [accounts.work], which it offers.' in failure.message
    failure = mechanism_not_offered("work", account(), ["IMAP4rev1"])
    assert "(it offers: no SASL mechanism)" in failure.message
    assert 'auth = "password" in [accounts.work]' in failure.message


def test_the_challenge_reaches_the_details() -> None:
    failure = connect_failure(
        OAuthRejected(OAuthChallenge("401", "mail"), "no"), "work", account(), ConnectPhase.LOGIN
    )
    assert failure.details["server_status"] == "401" and failure.details["server_scope"] == "mail"
    assert failure.details["auth"] == "xoauth2"


def test_no_time_left_runs_nothing_and_says_so(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(TokenUnavailable, match="time budget was used up before the command could run"):
        run_token_command(["touch", str(marker)], 0, {})
    assert not marker.exists()
