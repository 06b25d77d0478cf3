"""``allowed_recipients``: to whom an account may send, and the one matcher of a recipient against it.

An entry is ``"*"`` (anyone, written out), an address (``bob@example.com``), a domain (``@example.com``:
that domain exactly) or its subdomains (``*.example.com``: not the domain itself). Domains are compared
case-folded and IDNA-normalised (``@Bücher.example`` and ``@xn--bcher-kva.example`` are one entry), and
so are the local parts of addresses (case-folded: providers treat them so; an allow list that told
``Bob@`` from ``bob@`` would only surprise).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

ANYONE = "*"
#: ``send_rate_per_hour``: at most this many messages an hour from one account (counted in the state store).
SendRate = Annotated[
    int,
    Field(
        ge=1,
        le=1000,
        description="At most this many sends in any hour (a sliding hour, counted in the record of sends, see "
        "server.state_dir).",
    ),
]


class NotAnEntry(ValueError):
    """An entry of ``allowed_recipients`` that is no address, domain or ``"*"``."""


def normal_domain(domain: str) -> str | None:
    """``domain`` case-folded and in IDNA A-labels (the standard library's IDNA 2003 codec, the same for an
    entry and a recipient), without a final dot; None where it is no valid domain name."""
    text = domain.strip().rstrip(".")
    if not text or any(char.isspace() for char in text):
        return None
    try:
        return text.casefold().encode("idna").decode("ascii").casefold()
    except UnicodeError:
        return None


def _split(address: str) -> tuple[str, str] | None:
    local, at, domain = address.strip().rpartition("@")
    normal = normal_domain(domain) if at else None
    if not local or normal is None or any(char.isspace() or char in '<>,;"' for char in local):
        return None
    return local.casefold(), normal


@dataclass(frozen=True)
class AllowedRecipients:
    """The parsed list: who is allowed, by address, domain and parent domain."""

    anyone: bool
    addresses: frozenset[tuple[str, str]]
    domains: frozenset[str]
    parents: frozenset[str]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowedRecipients:
        """Read ``entries``; :class:`NotAnEntry` names the first that is none of the four forms."""
        anyone = False
        addresses: set[tuple[str, str]] = set()
        domains: set[str] = set()
        parents: set[str] = set()
        for entry in entries:
            text = entry.strip()
            if text == ANYONE:
                anyone = True
            elif text.startswith("@") and (domain := normal_domain(text[1:])) is not None:
                domains.add(domain)
            elif text.startswith("*.") and (parent := normal_domain(text[2:])) is not None:
                parents.add(parent)
            elif not text.startswith(("@", "*")) and (address := _split(text)) is not None:
                addresses.add(address)
            else:
                raise NotAnEntry(
                    f"{entry!r} is not an allowed recipient: write an address (bob@example.com), a domain "
                    '(@example.com), its subdomains (*.example.com), or "*" for anyone'
                )
        return cls(anyone, frozenset(addresses), frozenset(domains), frozenset(parents))

    def allows(self, address: str) -> bool:
        """Whether mail may go to ``address`` (a bare address, as an envelope recipient is)."""
        if self.anyone:
            return True
        split = _split(address)
        if split is None:
            return False
        _, domain = split
        if split in self.addresses or domain in self.domains:
            return True
        return any(domain.endswith("." + parent) for parent in self.parents)
