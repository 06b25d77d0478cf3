"""``mail-imap-mcp login [ACCOUNT]``, ``logout`` and ``status``: the built-in sign-in of an account with
``oauth2_provider``.

``login`` runs the authorization code grant with PKCE through the system browser (:mod:`.net.browser`'s
opener, which honours ``BROWSER``) and a loopback redirect (:mod:`mail_imap_mcp.net.loopback_redirect`), the
URL printed as well; ``--device`` runs the device grant where no browser can open. The refresh token
goes to the OS keychain; nothing of a token is printed.
"""

from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime

from mail_imap_mcp.cli.login_flags import BROWSER_WAIT_S
from mail_imap_mcp.config import AccountConfig, AuthMethod, Config, ConfigError
from mail_imap_mcp.config.sign_in import SignInProvider
from mail_imap_mcp.credentials.keychain import KeychainUnavailable, backend_name
from mail_imap_mcp.credentials.oauth_client import oauth_client
from mail_imap_mcp.credentials.refresh import RefreshTokenStore
from mail_imap_mcp.credentials.sign_in_here import no_keychain_advice
from mail_imap_mcp.credentials.sign_in_state import (
    LockTimeout,
    SignInRecord,
    forget_record,
    keep_sign_in,
    read_record,
    refresh_lock,
    refresh_token_store,
)
from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from mail_imap_mcp.credentials.tokens import FixedToken
from mail_imap_mcp.net.browser import BrowserOpener
from mail_imap_mcp.net.oauth import (
    OAuthClient,
    TokenResponse,
    authorization_request,
    code_from_redirect,
    device_authorization,
    poll_device,
    redeem_code,
    revoke,
    signed_in_as,
)
from mail_imap_mcp.net.tokens import TokenUnavailable

_GOOGLE_DEVICE = (
    "Google does not allow its mail scope (https://mail.google.com/) on the device sign-in: run "
    "`mail-imap-mcp login` without --device on a machine with a browser"
)


def run(
    command: str,
    config: Config,
    account_id: str | None,
    device: bool = False,
    wait_s: float = BROWSER_WAIT_S,
) -> int:
    """Run ``command`` (login, logout, status); the process's exit status (130 after Ctrl-C)."""
    try:
        if command == "status":
            return _status(config, account_id)
        account_id, account = _signing_in_account(config, account_id)
        if command == "logout":
            return _logout(account_id, account)
        return _login(account_id, account, device, wait_s)
    except KeyboardInterrupt:
        print(f"mail-imap-mcp {command}: stopped (Ctrl-C); nothing was stored", file=sys.stderr)
        return 130
    except (ConfigError, TokenUnavailable, LockTimeout, OSError) as exc:
        reason = exc.reason if isinstance(exc, TokenUnavailable) else str(exc)
        print(f"mail-imap-mcp {command}: {reason}", file=sys.stderr)
        return 1


def _signing_in_account(config: Config, account_id: str | None) -> tuple[str, AccountConfig]:
    candidates = {aid: acc for aid, acc in config.accounts.items() if acc.oauth2_provider is not None}
    if account_id is None:
        if len(candidates) != 1:
            names = ", ".join(sorted(candidates)) or "none"
            raise ConfigError(f"name the account to sign in to (accounts with oauth2_provider: {names})")
        account_id = next(iter(candidates))
    if account_id not in candidates:
        raise ConfigError(
            f"account {account_id!r} has no oauth2_provider: it does not use the built-in sign-in "
            "(docs/providers.md)"
        )
    return account_id, candidates[account_id]


def _login(account_id: str, account: AccountConfig, device: bool, wait_s: float) -> int:
    # A sign-in's check (a login over IMAP) loads with ``login``: ``status`` and ``logout`` need none of it.
    from mail_imap_mcp.credentials.sign_in_flow import check_new_sign_in
    from mail_imap_mcp.imap.token_check import new_sign_in_refusal

    if account.oauth2_client_credentials:
        raise ConfigError(
            f"account {account_id!r} signs in as the application (oauth2_client_credentials): nobody signs "
            "in and nothing is kept; `mail-imap-mcp check` tries its token"
        )
    client = oauth_client(account)
    store = refresh_token_store(account_id, account)
    _check_store(account_id, account, store)  # before the provider is asked: a token it could not keep
    if device:
        if account.oauth2_provider is SignInProvider.GOOGLE:
            raise TokenUnavailable(_GOOGLE_DEVICE)
        started = device_authorization(client)
        where = started.verification_uri_complete or started.verification_uri
        print(
            f"To sign in to {account_id!r}, open {where} and enter the code {started.user_code}",
            file=sys.stderr,
        )
        answer, nonce = poll_device(client, started), None  # the device grant sends no nonce
    else:
        answer, nonce = _browser_sign_in(account_id, client, account.oauth2_redirect_port or 0, wait_s)
    if not answer.refresh_token:
        raise TokenUnavailable(
            "the provider gave no refresh token (the offline_access scope, or Google's access_type=offline, "
            "is needed to stay signed in)"
        )
    check_new_sign_in(
        answer, client, nonce, lambda token: new_sign_in_refusal(account_id, account, FixedToken(token))
    )
    try:
        keep_sign_in(account_id, answer.refresh_token, signed_in_as(answer), store)
    except (ConfigError, LockTimeout, OSError) as exc:
        raise ConfigError(_not_kept(account_id, account, client, answer.refresh_token, exc)) from None
    print(f"Signed in: account {account_id!r} is ready.", file=sys.stderr)
    return 0


def _check_store(account_id: str, account: AccountConfig, store: RefreshTokenStore) -> None:
    """Refuse, before the provider is asked, a sign-in whose refresh token could not be kept."""
    try:
        store.load()
    except KeychainUnavailable:
        raise ConfigError(
            f"no keychain is usable here (keyring backend {backend_name()}), so a sign-in could not be "
            f"kept; nothing was asked of the provider: {no_keychain_advice(account_id, account)}"
        ) from None


def _not_kept(
    account_id: str, account: AccountConfig, client: OAuthClient, refresh_token: str, exc: Exception
) -> str:
    """Why the sign-in was not kept, and what became of the refresh token the provider issued: revoked
    there where it offers revocation (RFC 7009), else said to stay valid."""
    try:
        revoked = revoke(client, refresh_token)
    except TokenUnavailable:
        revoked = False
    if revoked:
        fate = "the refresh token the provider issued was revoked there (nothing of it stays valid)"
    elif account.oauth2_provider is SignInProvider.MICROSOFT:
        fate = (
            "Microsoft Entra ID offers no revocation of a refresh token (no RFC 7009 endpoint): the one "
            "it issued stays valid at Microsoft until it expires unused (90 days), kept nowhere here; "
            "removing the app's access in your account's settings ends it"
        )
    else:
        fate = (
            "the provider offers no revocation (RFC 7009) or refused it: the refresh token it issued "
            "stays valid there until it expires, kept nowhere here"
        )
    return f"the sign-in could not be kept ({exc}); {fate}; {no_keychain_advice(account_id, account)}"


def _browser_sign_in(
    account_id: str, client: OAuthClient, port: int, wait_s: float
) -> tuple[TokenResponse, str]:
    """The provider's answer to a sign-in in the browser, and the nonce its ID token must carry."""
    from mail_imap_mcp.net.loopback_redirect import RedirectListener

    try:
        listener = RedirectListener(port)
    except OSError as exc:
        raise TokenUnavailable(
            f"cannot listen for the browser's answer on 127.0.0.1:{port} ({exc.strerror}): another "
            "program uses that port; stop it or set oauth2_redirect_port to another port registered with "
            "the provider (or leave it unset: a free one is taken); nothing was stored"
        ) from None
    with listener:
        request = authorization_request(client, listener.redirect_uri)
        listener.expect(request.url, request.state)
        print(
            f"To sign in to {account_id!r}, open this address in a browser (opening it now):\n"
            f"{listener.opening_url}",
            file=sys.stderr,
        )
        # The opener may wait for the browser command to end: the listener must answer meanwhile. Its
        # address, not the authorization URL, is on the browser's command line, which any user can read.
        opener = BrowserOpener.for_terminal()
        threading.Thread(
            target=opener.open_for_user, args=(listener.opening_url, account_id), daemon=True
        ).start()
        print(
            f"Waiting up to {wait_s:g} s (--wait) for the browser to come back to {listener.redirect_uri} "
            "once you have signed in; Ctrl-C stops.",
            file=sys.stderr,
        )
        redirect = listener.wait(wait_s)
    if redirect is None:
        raise TokenUnavailable(
            f"no answer from the browser within {wait_s:g}s (the sign-in was not finished, or the "
            f"provider sent the browser elsewhere than {listener.redirect_uri}). If the provider's page "
            "showed an error, the two likely mistakes are the client ID (oauth2_client_id: the "
            "application (client) ID of your registration) and a redirect URI the registration lacks "
            f"({listener.redirect_uri}, or the loopback address for any port where the provider allows "
            "it: docs/providers.md); if its page did not load, the provider was out of reach; nothing "
            "was stored"
        )
    code = code_from_redirect(request, redirect)
    return redeem_code(client, request, code, 30.0), request.nonce


def _logout(account_id: str, account: AccountConfig) -> int:
    store = refresh_token_store(account_id, account)
    refresh_token = store.load()
    if refresh_token is None:
        print(f"Account {account_id!r} was not signed in.", file=sys.stderr)
        return 0
    try:
        client = oauth_client(account)
        offered = client.endpoints.revocation is not None
        revoked = offered and revoke(client, refresh_token)
    except TokenUnavailable:
        offered = revoked = False
    with refresh_lock(account_id, 30.0, store):
        store.forget()
    forget_record(account_id, store)
    if revoked:
        said = "revoked at the provider and forgotten"
    elif offered:
        said = "forgotten here, but the provider did not confirm its revocation (it may still be valid there)"
    else:
        said = (
            f"forgotten here; {account.oauth2_provider} offers no revocation (RFC 7009), so the provider "
            "honours it until it lapses, or until you end the app's sessions in your account's security "
            "settings"
        )
    print(f"Signed out of {account_id!r}: the sign-in was {said}.", file=sys.stderr)
    if isinstance(store, KeychainRefreshTokens):
        print(_shared_sign_in(account), file=sys.stderr)
    return 0


def _shared_sign_in(account: AccountConfig) -> str:
    """Who else a keychain's sign-in signed out: it is kept by identity, not by configuration."""
    return (
        f"Every configuration on this computer that signs {account.username} in with this "
        f"{account.oauth2_provider} app (client ID {account.oauth2_client_id}), Claude Desktop's extension "
        "too, shared this sign-in in the keychain: each is signed out as well, and asks to sign in again."
    )


def _status(config: Config, account_id: str | None) -> int:
    """One line per account, as ``check`` lists them (every account, or the one named); no token shown."""
    if account_id is not None and account_id not in config.accounts:
        raise ConfigError(
            f"no account {account_id!r} in the configuration ({', '.join(sorted(config.accounts))})"
        )
    accounts = {aid: acc for aid, acc in config.accounts.items() if account_id in (None, aid)}
    for aid, account in sorted(accounts.items()):
        if account.faults or account.oauth2_provider is None:
            print(f"{aid}: {_login_without_sign_in(account)}")
            continue
        if account.oauth2_client_credentials:
            print(f"{aid}: signs in as the application ({account.oauth2_client_id}); no sign-in is kept")
            continue
        store = refresh_token_store(aid, account)
        stored_at = store.stored_at()
        if stored_at is None:
            print(f"{aid}: not signed in (run `mail-imap-mcp login {aid}`)")
            continue
        print(
            f"{status_line(aid, account, stored_at, read_record(aid, store))}; the refresh token is kept {store.where()}"
        )
    return 0


_PASSWORD_PLACES = {
    "keyring": "a password kept in the OS keychain (password_keyring)",
    "file": "a password kept in the file {} (password_file)",
    "env": "a password from the environment variable {} (password_env)",
    "command": "a password printed by password_command",
    "inline": "a password written in the config file",
}


def _login_without_sign_in(account: AccountConfig) -> str:
    """How an account without the built-in sign-in logs in (nothing to sign in to), or why it cannot."""
    if account.faults:
        fault = account.faults[0]
        return f"not usable until {fault.named} is corrected: it {fault.reason}"
    if account.per_user:
        return "per_user template, logged in as each user who signs in"
    if account.auth is not AuthMethod.PASSWORD:
        return (
            "logs in with a token from oauth2_token_command (your helper keeps its sign-in); none kept here"
        )
    kind, _, detail = account.password_source.partition(":")
    return f"logs in with {_PASSWORD_PLACES[kind].format(detail)}; no sign-in to keep"


#: What each provider documents of a refresh token's lifetime (docs/providers.md cites the pages).
EXPECTED_LIFETIME = {
    SignInProvider.MICROSOFT: "90 days from its last use, renewed by each refresh (sliding), per "
    "Microsoft's documentation",
    SignInProvider.GOOGLE: "until revoked (7 days for an app whose OAuth consent screen is in testing "
    "mode), per Google's documentation",
    SignInProvider.CUSTOM: "as the provider sets it (no documented lifetime known here)",
}


def status_line(account_id: str, account: AccountConfig, stored_at: float, record: SignInRecord) -> str:
    """One signed-in account's line of ``status``: who, when, the last refresh that succeeded and the
    refresh token's expected lifetime (never a token)."""
    assert account.oauth2_provider is not None
    who = record.signed_in_as or f"{account.username} (the configured username)"
    signed_in = _when(record.signed_in_at) if record.signed_in_at else f"(sign-in stored {_when(stored_at)})"
    refreshed = _when(record.refreshed_at) if record.refreshed_at else "none yet"
    lifetime = EXPECTED_LIFETIME[account.oauth2_provider]
    if account.oauth2_provider is SignInProvider.MICROSOFT:
        last_use = max(filter(None, (record.refreshed_at, record.signed_in_at, stored_at)))
        lifetime += f": expected to last until {_when(last_use + 90 * 86400)} unless used before"
    return (
        f"{account_id}: signed in as {who} with {account.oauth2_provider}; signed in {signed_in}; last "
        f"refresh succeeded: {refreshed}; refresh token expected to last {lifetime} (expected, not "
        "checked with the provider)"
    )


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")
