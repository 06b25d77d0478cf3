"""Where an account's servers are: one endpoint per protocol (IMAP, SMTP submission, ManageSieve), each a
host, a port and a security; the account's credentials and token source serve them all."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Security(StrEnum):
    TLS = "tls"
    STARTTLS = "starttls"
    PLAIN = "plain"


DEFAULT_PORTS = {Security.TLS: 993, Security.STARTTLS: 143, Security.PLAIN: 143}
#: Submission ports (RFC 8314: 465 implicit TLS; RFC 6409: 587 with STARTTLS).
SUBMISSION_PORTS = {Security.TLS: 465, Security.STARTTLS: 587, Security.PLAIN: 587}
#: ManageSieve's port (RFC 5804: 4190, STARTTLS).
MANAGESIEVE_PORT = 4190


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` and literal loopback addresses (no DNS lookups)."""
    if host.lower() in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _refuse_plain_off_loopback(security: Security | None, host: str | None) -> None:
    """A table's ``security = 'plain'`` is refused unless it names a loopback host."""
    if security is Security.PLAIN and (host is None or not is_loopback_host(host)):
        raise ValueError(
            "security = 'plain' sends the password unencrypted and is only allowed for a loopback host "
            "named here; use 'tls' or 'starttls'"
        )


class Endpoint(NamedTuple):
    """One server of an account: where to connect and how the connection is secured."""

    host: str
    port: int
    security: Security


class SmtpSettings(BaseModel):
    """``[accounts.<account_id>.smtp]``: the SMTP submission server, where it differs from the
    provider's (every key defaults from the provider table, docs/providers.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="Submission server host; default: the provider's (Gmail, Microsoft 365, iCloud...), "
        "known from the IMAP host or the account's address.",
    )
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Port; default 465 for tls, 587 otherwise."
    )
    security: Security | None = Field(
        default=None,
        description="tls (implicit TLS), starttls (upgrade required), or plain (loopback only); default: "
        "the provider's, else tls.",
    )

    @model_validator(mode="after")
    def _plain_only_to_loopback(self) -> SmtpSettings:
        _refuse_plain_off_loopback(self.security, self.host)
        return self

    def endpoint(self, provider_default: Endpoint | None) -> Endpoint | None:
        """The submission endpoint these settings give over ``provider_default``; None where no host is
        known (neither set here nor the provider's)."""
        host = self.host or (provider_default.host if provider_default else None)
        if host is None:
            return None
        if self.security is not None:
            security = self.security
        elif provider_default is not None and self.host is None:
            security = provider_default.security
        else:
            security = Security.TLS
        if self.port is not None:
            port = self.port
        elif provider_default is not None and self.host is None and security is provider_default.security:
            port = provider_default.port
        else:
            port = SUBMISSION_PORTS[security]
        return Endpoint(host, port, security)


class SieveSettings(BaseModel):
    """``[accounts.<account_id>.sieve]``: the account's ManageSieve server (RFC 5804), where it differs from
    the IMAP host on port 4190 with STARTTLS."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str | None = Field(
        default=None, min_length=1, max_length=253, description="ManageSieve host; default: the IMAP host."
    )
    port: int | None = Field(default=None, ge=1, le=65535, description="Port; default 4190.")
    security: Security | None = Field(
        default=None,
        description="starttls (RFC 5804's way, the default), tls (implicit TLS), or plain (loopback only).",
    )

    @model_validator(mode="after")
    def _plain_only_to_loopback(self) -> SieveSettings:
        _refuse_plain_off_loopback(self.security, self.host)
        return self

    def endpoint(self, imap_host: str) -> Endpoint:
        """The ManageSieve endpoint: these settings over the IMAP host, port 4190, STARTTLS."""
        return Endpoint(
            self.host or imap_host, self.port or MANAGESIEVE_PORT, self.security or Security.STARTTLS
        )
