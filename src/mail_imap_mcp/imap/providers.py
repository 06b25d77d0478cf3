"""What well-known mail providers need for IMAP login, so a refused login can say what to do, and which
receiving servers' Authentication-Results their users can trust.

Besides wording diagnoses, one behaviour depends on the provider: whose sender authentication results
imap_get_message reports when the account names no authserv_id (:func:`trusted_servers`).
docs/providers.md has the settings.
"""

from __future__ import annotations

from typing import NamedTuple

from mail_imap_mcp.mime.authentication import TrustedServers


class Provider(NamedTuple):
    name: str
    #: Host names (or their suffixes after a dot) of the provider's IMAP servers.
    hosts: tuple[str, ...]
    #: What to do when the server refuses the login.
    login_hint: str
    #: The OAuth2 scope(s) an access token needs for IMAP (``auth = "xoauth2"``), if the provider offers it.
    oauth2_scope: str | None = None
    #: The authserv-ids its receiving servers write in Authentication-Results (RFC 8601).
    authserv_ids: tuple[str, ...] = ()
    #: Its receiving servers write Authentication-Results without an authserv-id (Microsoft 365).
    unnamed_authserv: bool = False


PROVIDERS = (
    Provider(
        "Gmail",
        ("imap.gmail.com", "imap.googlemail.com"),
        "Gmail refuses the account password over IMAP: turn on 2-Step Verification, create an app "
        "password (Google Account > Security > App passwords) and use it as the password, or log in "
        'with OAuth2 (auth = "xoauth2", see docs/providers.md)',
        "the scope https://mail.google.com/",
        authserv_ids=("mx.google.com",),
    ),
    Provider(
        "iCloud",
        ("imap.mail.me.com",),
        "iCloud needs an app-specific password (account.apple.com > Sign-In and Security > "
        "App-Specific Passwords); the username is the address without @icloud.com or the full address",
    ),
    Provider(
        "Yahoo",
        ("imap.mail.yahoo.com", "imap.aol.com"),
        "Yahoo and AOL need an app password (Account security > Generate app password)",
    ),
    Provider(
        "Fastmail",
        ("imap.fastmail.com",),
        "Fastmail needs an app password with IMAP access (Settings > Privacy & Security > "
        "Manage app passwords)",
    ),
    Provider(
        "Microsoft 365 / Outlook.com",
        ("outlook.office365.com", "imap-mail.outlook.com", "outlook.office.com"),
        'Microsoft has turned off password login for IMAP; it needs OAuth2: set auth = "xoauth2" and '
        "an oauth2_token_command (docs/providers.md shows one with pizauth)",
        "the scopes https://outlook.office.com/IMAP.AccessAsUser.All and offline_access",
        unnamed_authserv=True,
    ),
)

GENERIC_LOGIN_HINT = (
    "many providers (Gmail, iCloud, Yahoo, Fastmail) refuse the account password over IMAP and "
    "need an app password"
)


def provider_for(host: str) -> Provider | None:
    """The provider whose IMAP server ``host`` is, if it is a known one."""
    host = host.lower().rstrip(".")
    for provider in PROVIDERS:
        if any(host == known or host.endswith("." + known) for known in provider.hosts):
            return provider
    return None


def oauth2_scope_hint(host: str) -> str | None:
    """The OAuth2 scope a token for ``host`` needs, in words (``the scope https://mail.google.com/``)."""
    provider = provider_for(host)
    return provider.oauth2_scope if provider else None


def login_hint(host: str) -> str:
    """What to try when ``host`` refuses the login."""
    provider = provider_for(host)
    return provider.login_hint if provider else GENERIC_LOGIN_HINT


def trusted_servers(host: str, authserv_id: str | None) -> TrustedServers:
    """Whose Authentication-Results an account on ``host`` trusts: its configured ``authserv_id``, else its
    provider's receiving servers (none for an unknown provider: nothing is reported there)."""
    if authserv_id is not None:
        return TrustedServers(frozenset({authserv_id.lower()}))
    provider = provider_for(host)
    if provider is None:
        return TrustedServers()
    return TrustedServers(frozenset(provider.authserv_ids), provider.unnamed_authserv)
