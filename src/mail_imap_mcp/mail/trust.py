"""Whose sender authentication results an account trusts: the Authentication-Results of the receiving
servers it names (``authserv_id``), else of its provider's (``config/providers.py``)."""

from __future__ import annotations

from mail_imap_mcp.config.providers import provider_for
from mail_imap_mcp.mime.authentication import TrustedServers


def trusted_servers(host: str, authserv_id: str | None) -> TrustedServers:
    """Whose Authentication-Results an account on ``host`` trusts: its configured ``authserv_id``, else its
    provider's receiving servers (none for an unknown provider: nothing is reported there)."""
    if authserv_id is not None:
        return TrustedServers(frozenset({authserv_id.lower()}))
    provider = provider_for(host)
    if provider is None:
        return TrustedServers()
    return TrustedServers(frozenset(provider.authserv_ids), provider.unnamed_authserv)
