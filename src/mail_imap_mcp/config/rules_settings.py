"""An account's rules (Sieve over ManageSieve, docs/rules.md): the switch that turns them on, where its
ManageSieve server is (``[accounts.<account_id>.sieve]``), and why a server runs no rules managed here."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .endpoints import SieveSettings
from .providers import Provider


class RulesSettings(BaseModel):
    """The rules' settings of an account (a part of :class:`~.accounts.AccountConfig`)."""

    rules_enabled: bool = Field(
        default=False,
        description="Allow managing the rules this account's server runs as mail arrives (Sieve over "
        "ManageSieve, docs/rules.md); off by default. Rules live in a script of their own; the user's own "
        "script is kept.",
    )
    sieve: SieveSettings = Field(
        default_factory=SieveSettings,
        description="The ManageSieve server ([accounts.<account_id>.sieve]: host, port, security), where "
        "it is not the IMAP host on port 4190 with STARTTLS; it logs in with this account's credentials.",
    )


def rules_unavailable(provider: Provider | None, sieve: SieveSettings) -> str | None:
    """Why an account at ``provider`` (its ``sieve`` table) runs no rules managed here, in a few words (a
    known provider without ManageSieve: Gmail, Microsoft 365, iCloud...); None where it may (its
    ManageSieve is then found when a call reaches it)."""
    if provider is not None and sieve.host is None:
        return f"{provider.name} offers no ManageSieve"
    return None
