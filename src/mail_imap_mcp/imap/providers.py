"""What well-known mail providers need for IMAP login, so a refused login can say what to do, and which
receiving servers' Authentication-Results their users can trust.

Besides wording diagnoses, one behaviour depends on the provider: whose sender authentication results
imap_get_message reports when the account names no authserv_id (:func:`trusted_servers`).
docs/providers.md has the settings; the table itself is data in ``config/providers.py``.
"""

from __future__ import annotations

from mail_imap_mcp.config.providers import PROVIDERS, Provider, provider_for, provider_for_address
from mail_imap_mcp.mime.authentication import TrustedServers

__all__ = [
    "GENERIC_LOGIN_HINT",
    "PROVIDERS",
    "Provider",
    "login_hint",
    "oauth2_scope_hint",
    "provider_for",
    "provider_for_address",
    "trusted_servers",
]


GENERIC_LOGIN_HINT = (
    "many providers (Gmail, iCloud, Yahoo, Fastmail) refuse the account password over IMAP and "
    "need an app password"
)


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
