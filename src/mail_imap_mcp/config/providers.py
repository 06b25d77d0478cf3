"""The well-known mail providers as data: their IMAP and SMTP submission servers, the address domains
whose mail they keep, what their login needs, and whether they file a copy of sent mail themselves.

One table serves three readers: an account that names an address but no host gets its provider's
server (``MAIL_IMAP_<ID>_HOST`` left empty, as the MCP Bundle's form allows), ``mail-imap-mcp setup``
proposes the settings and says how to get an app password, and a refused login is worded with the
provider's hint (``imap/providers.py``). docs/providers.md has the settings in words.
"""

from __future__ import annotations

from typing import NamedTuple

from .endpoints import Endpoint, Security

_YAHOO_HINT = "Yahoo and AOL need an app password (Account security > Generate app password)"


class Provider(NamedTuple):
    name: str
    #: Host names (or their suffixes after a dot) of the provider's IMAP servers; the first is the one
    #: an account without a host gets.
    hosts: tuple[str, ...]
    #: What to do when the server refuses the login (and what ``setup`` says before asking).
    login_hint: str
    #: The OAuth2 scope(s) an access token needs for IMAP (``auth = "xoauth2"``), if the provider offers it.
    oauth2_scope: str | None = None
    #: The authserv-ids its receiving servers write in Authentication-Results (RFC 8601).
    authserv_ids: tuple[str, ...] = ()
    #: Its receiving servers write Authentication-Results without an authserv-id (Microsoft 365).
    unnamed_authserv: bool = False
    #: Address domains (``gmail.com``) whose mailboxes live on these servers.
    domains: tuple[str, ...] = ()
    port: int = 993
    security: Security = Security.TLS
    #: Where the server is not one of ``hosts`` (a local bridge): the host an account gets.
    local_host: str | None = None
    #: Password login is refused: only OAuth2 works (Microsoft 365).
    oauth2_only: bool = False
    #: Its SMTP submission server (the account's credentials and token source log in there too); on a
    #: local bridge, on ``local_host``.
    submission: tuple[str, int, Security] | None = None
    #: Its submission server files a copy of each message in Sent itself (a client that appended one
    #: too would leave two).
    files_sent_copy: bool = False

    @property
    def imap_host(self) -> str:
        """The host an account at this provider connects to."""
        return self.local_host or self.hosts[0]

    @property
    def submission_endpoint(self) -> Endpoint | None:
        """Where an account at this provider submits mail, if the table knows."""
        return None if self.submission is None else Endpoint(*self.submission)


PROVIDERS = (
    Provider(
        "Gmail",
        ("imap.gmail.com", "imap.googlemail.com"),
        "Gmail refuses the account password over IMAP: sign in with Google (the built-in OAuth2 sign-in, "
        'oauth2_provider = "google"), or turn on 2-Step Verification, create an app password (Google '
        "Account > Security > App passwords) and use it as the password (docs/providers.md)",
        "the scope https://mail.google.com/",
        authserv_ids=("mx.google.com",),
        domains=("gmail.com", "googlemail.com"),
        submission=("smtp.gmail.com", 465, Security.TLS),
        files_sent_copy=True,
    ),
    Provider(
        "iCloud",
        ("imap.mail.me.com",),
        "iCloud needs an app-specific password (account.apple.com > Sign-In and Security > "
        "App-Specific Passwords); the username is the address without @icloud.com or the full address",
        domains=("icloud.com", "me.com", "mac.com"),
        submission=("smtp.mail.me.com", 587, Security.STARTTLS),
    ),
    Provider(
        "Yahoo",
        ("imap.mail.yahoo.com",),
        _YAHOO_HINT,
        domains=("yahoo.com", "ymail.com", "rocketmail.com"),
        submission=("smtp.mail.yahoo.com", 465, Security.TLS),
    ),
    Provider(
        "AOL",
        ("imap.aol.com",),
        _YAHOO_HINT,
        domains=("aol.com",),
        submission=("smtp.aol.com", 465, Security.TLS),
    ),
    Provider(
        "Fastmail",
        ("imap.fastmail.com",),
        "Fastmail needs an app password with IMAP access (Settings > Privacy & Security > "
        "Manage app passwords)",
        domains=("fastmail.com", "fastmail.fm"),
        submission=("smtp.fastmail.com", 465, Security.TLS),
    ),
    Provider(
        "Microsoft 365 / Outlook.com",
        ("outlook.office365.com", "imap-mail.outlook.com", "outlook.office.com"),
        "Microsoft has turned off password login for IMAP; it needs OAuth2: sign in with Microsoft (the "
        'built-in sign-in, oauth2_provider = "microsoft" and your client ID), or an oauth2_token_command '
        "(docs/providers.md)",
        "the scopes https://outlook.office.com/IMAP.AccessAsUser.All and offline_access",
        unnamed_authserv=True,
        domains=("outlook.com", "hotmail.com", "live.com", "msn.com"),
        oauth2_only=True,
        # Microsoft 365's name; Outlook.com's pages name smtp-mail.outlook.com (docs/providers.md).
        submission=("smtp.office365.com", 587, Security.STARTTLS),
        files_sent_copy=True,
    ),
    Provider(
        "Proton Mail (through Proton Mail Bridge)",
        # No host: the Bridge listens on loopback, where any test or home server may listen too.
        (),
        "Proton Mail speaks IMAP only through Proton Mail Bridge on this computer: start it, use the "
        "IMAP password the Bridge shows (not your Proton password), and set ca_file to the certificate "
        "the Bridge exports (Settings > Export TLS certificates)",
        domains=("proton.me", "protonmail.com", "protonmail.ch", "pm.me"),
        port=1143,
        security=Security.STARTTLS,
        local_host="127.0.0.1",
        submission=("127.0.0.1", 1025, Security.STARTTLS),
    ),
)


def provider_for(host: str) -> Provider | None:
    """The provider whose IMAP server ``host`` is, if it is a known one."""
    host = host.lower().rstrip(".")
    for provider in PROVIDERS:
        if any(host == known or host.endswith("." + known) for known in provider.hosts):
            return provider
    return None


def provider_for_address(address: str) -> Provider | None:
    """The provider that keeps the mail of ``address`` (``you@gmail.com``), if it is a known one."""
    domain = address.rpartition("@")[2].strip().lower().rstrip(".")
    if not domain or "@" not in address:
        return None
    return next((provider for provider in PROVIDERS if domain in provider.domains), None)
