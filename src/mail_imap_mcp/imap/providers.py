"""What well-known mail providers need for IMAP login, so a refused login can say what to do, and which
receiving servers' Authentication-Results their users can trust.

Besides wording diagnoses, one behaviour depends on the provider: whose sender authentication results
imap_get_message reports when the account names no authserv_id (``mail/trust.py``).
docs/providers.md has the settings; the table itself is data in ``config/providers.py``.
"""

from __future__ import annotations

from mail_imap_mcp.config.providers import PROVIDERS, Provider, provider_for, provider_for_address

__all__ = [
    "GENERIC_LOGIN_HINT",
    "PROVIDERS",
    "Provider",
    "login_hint",
    "oauth2_scope_hint",
    "provider_for",
    "provider_for_address",
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
