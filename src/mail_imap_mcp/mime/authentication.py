"""What a message's headers say about its sender: the receiving server's Authentication-Results (RFC
8601) and facts worth a second look (a display name that is another address, a failed DMARC check, a
punycode or mixed-script domain, a Reply-To on another domain, several From addresses, a Sender that is
not the From, results the sender may have written).

Only results from a server the account trusts count (RFC 8601 5 and 7.1): one named by the account's
authserv_id or, for a known provider, by the provider table (:class:`TrustedServers`). Such a server
removes headers claiming its id from arriving mail, so the first header with its id is its own. Any other
header may have been written by the sender: with no trusted server, nothing is reported, and a pass
claimed by an untrusted header becomes a warning. A header without an authserv-id (Microsoft 365's form)
counts only where trusted, and only as the topmost header.
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .addresses import Address, parse_address_list

__all__ = [
    "AuthenticationResults",
    "AuthenticationVerdict",
    "SenderWarning",
    "TrustedServers",
    "authentication_results",
    "sender_warnings",
]

#: The methods reported, and the results RFC 8601 2.7 defines for them (anything else is "unknown").
METHODS = ("spf", "dkim", "dmarc")
_RESULTS = frozenset(
    {"pass", "fail", "softfail", "neutral", "none", "temperror", "permerror", "policy", "hardfail"}
)
#: For a method reported several times (one DKIM result per signature): the most telling first.
_RANK = ("pass", "fail", "softfail", "hardfail", "policy", "permerror", "temperror", "neutral", "none")
_COMMENT = re.compile(r"\([^()]*\)")
_TOKEN = re.compile(r"^[!#-'*+\-.0-9=?A-Z^-~]{1,255}$", re.IGNORECASE)
_METHOD_RESULT = re.compile(r"^\s*([a-z0-9_-]+)(?:/[0-9]+)?\s*=\s*([a-z]+)", re.IGNORECASE)
_PROPERTY = re.compile(r"(header\.[a-z]+)\s*=\s*\"?([^\s;\"]+)", re.IGNORECASE)
_EMAIL = re.compile(r"[^\s@<>()\"',;:]+@[^\s@<>()\"',;:]+\.[^\s@<>()\"',;:]+")


@dataclass(frozen=True)
class AuthenticationResults:
    """One Authentication-Results header: who added it and the SPF, DKIM and DMARC results it states."""

    #: Who added it (None: the header names no one, as Microsoft 365's do).
    authserv_id: str | None
    spf: str | None = None
    dkim: str | None = None
    dmarc: str | None = None
    #: Each DKIM signature it reports as passing, as the header names it: ``{"d": ..., "s": ..., "b": ...}``
    #: from its ``header.d``/``header.i``, ``header.s`` and ``header.b`` properties (those given); not
    #: part of what the results are (equality).
    dkim_passes: tuple[Mapping[str, str], ...] = field(default=(), compare=False)


def _strip_comments(value: str) -> str:
    previous = None
    while previous != value:  # nested comments, innermost first
        previous, value = value, _COMMENT.sub(" ", value)
    return value


def parse_authentication_results(value: str) -> AuthenticationResults | None:
    """The header's authserv-id and results; None when it is not an Authentication-Results value."""
    head, *clauses = _strip_comments(value).split(";")
    words = head.split()
    authserv_id: str | None = None
    if _METHOD_RESULT.match(head):  # no authserv-id, as Microsoft 365 writes it: the first is a result
        clauses.insert(0, head)
    elif words and _TOKEN.match(words[0]):
        authserv_id = words[0].lower()
    else:
        return None
    found: dict[str, list[str]] = {}
    passes: list[Mapping[str, str]] = []
    for clause in clauses:
        match = _METHOD_RESULT.match(clause)
        if match is None:
            continue
        method, result = match.group(1).lower(), match.group(2).lower()
        if method in METHODS:
            found.setdefault(method, []).append(result if result in _RESULTS else "unknown")
        if method == "dkim" and result == "pass":
            passes.append(_signature_properties(clause[match.end() :]))
    best = {
        method: min(results, key=lambda r: _RANK.index(r) if r in _RANK else len(_RANK))
        for method, results in found.items()
    }
    return AuthenticationResults(authserv_id, **best, dkim_passes=tuple(passes))


def _signature_properties(text: str) -> dict[str, str]:
    """``header.d`` (else the domain of ``header.i``), ``header.s`` and ``header.b`` of a DKIM result."""
    found = {key.lower(): value for key, value in _PROPERTY.findall(text)}
    domain = found.get("header.d") or found.get("header.i", "").rpartition("@")[2]
    named = {"d": domain.lower(), "s": found.get("header.s", ""), "b": found.get("header.b", "")}
    return {key: value for key, value in named.items() if value}


@dataclass(frozen=True)
class TrustedServers:
    """The receiving servers whose Authentication-Results an account trusts: ``ids`` (lower case), and,
    with ``unnamed``, a topmost header that names no server (Microsoft 365's form)."""

    ids: frozenset[str] = frozenset()
    unnamed: bool = False


@dataclass(frozen=True)
class AuthenticationVerdict:
    """What a message's Authentication-Results say: the trusted server's results (None: no trusted server
    wrote one), and the topmost untrusted header that claims a pass (it may be the sender's)."""

    trusted: AuthenticationResults | None
    unverified_pass: AuthenticationResults | None = None


def authentication_results(values: Sequence[str], trusted: TrustedServers) -> AuthenticationVerdict:
    """The verdict of a message's Authentication-Results ``values`` (top to bottom): the first header of a
    trusted server, and the first untrusted one claiming a pass."""
    unverified: AuthenticationResults | None = None
    topmost = True
    for value in values:
        parsed = parse_authentication_results(value)
        if parsed is None:
            continue
        if parsed.authserv_id in trusted.ids or (parsed.authserv_id is None and trusted.unnamed and topmost):
            return AuthenticationVerdict(parsed, unverified)
        topmost = False
        if unverified is None and "pass" in (parsed.spf, parsed.dkim, parsed.dmarc):
            unverified = parsed
    return AuthenticationVerdict(None, unverified)


@dataclass(frozen=True)
class SenderWarning:
    """A fact about the sender worth a second look (``code``), stated in ``message``."""

    code: str
    message: str


def _domain(address: Address) -> str:
    return (address.email or "").rpartition("@")[2].rstrip(".").lower()


def _scripts(label: str) -> set[str]:
    """The scripts of a domain label's letters (LATIN, CYRILLIC, GREEK...), digits and '-' left out."""
    scripts = set()
    for char in label:
        if char.isalpha():
            name = unicodedata.name(char, "UNKNOWN")
            scripts.add("CJK" if name.startswith(("CJK", "HIRAGANA", "KATAKANA")) else name.split()[0])
    return scripts


def _unicode_labels(domain: str) -> tuple[list[str], bool]:
    """The domain's labels in Unicode, and whether any was written in punycode (``xn--``)."""
    labels, punycode = [], False
    for label in domain.split("."):
        if label.startswith("xn--"):
            punycode = True
            with contextlib.suppress(UnicodeError):
                label = label.encode("ascii").decode("idna")
        labels.append(label)
    return labels, punycode


def _related(a: str, b: str) -> bool:
    """Whether two domains are the same or one is below the other (mail.example.org, example.org)."""
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def _addresses(values: Sequence[str]) -> list[Address]:
    return [a for value in values for a in parse_address_list(value) if a.email]


def sender_warnings(
    headers: Mapping[str, Sequence[str]], verdict: AuthenticationVerdict | None = None
) -> list[SenderWarning]:
    """Facts about the sender of a message with these headers (lower-case names: ``from``, ``sender``,
    ``reply-to``; values decoded, as :func:`~.headers.parse_header_block` gives them) and this verdict on
    its authentication results."""
    senders = _addresses(headers.get("from", ()))
    sender = senders[0] if senders else None
    domain = _domain(sender) if sender is not None else ""
    warnings = _display_name_warnings(sender) + _multiple_from(senders)
    warnings += _sender_differs(senders, headers.get("sender", ()))
    if verdict is not None:
        warnings += _authentication_warnings(verdict)
    if domain:
        warnings += _domain_warnings(domain)
    replies = _addresses(headers.get("reply-to", ()))
    elsewhere = [a for a in replies if domain and _domain(a) and not _related(_domain(a), domain)]
    if elsewhere:
        warnings.append(
            SenderWarning(
                "reply_to_other_domain",
                f"Replies go to {elsewhere[0].email} (Reply-To), on another domain than the sender's "
                f"({domain}).",
            )
        )
    return warnings


def _display_name_warnings(sender: Address | None) -> list[SenderWarning]:
    if sender is None or not sender.name:
        return []
    # NFKC first: a full-width at sign (U+FF20) or letters shown as another address count as that address.
    shown = {m.lower() for m in _EMAIL.findall(unicodedata.normalize("NFKC", sender.name))}
    others = sorted(shown - {(sender.email or "").lower()})
    if not others:
        return []
    return [
        SenderWarning(
            "display_name_is_other_address",
            f"The sender's display name is the address {others[0]}, but the message is from {sender.email}.",
        )
    ]


def _multiple_from(senders: Sequence[Address]) -> list[SenderWarning]:
    """Several From addresses (RFC 5322 3.6.2 then requires a Sender)."""
    if len(senders) < 2:
        return []
    named = ", ".join(str(a.email) for a in senders[:3]) + (", ..." if len(senders) > 3 else "")
    return [
        SenderWarning(
            "multiple_from_addresses",
            f"The From header names {len(senders)} addresses ({named}); a mail client may show only "
            "one of them.",
        )
    ]


def _sender_differs(senders: Sequence[Address], sender_values: Sequence[str]) -> list[SenderWarning]:
    """A Sender that is not one of the From addresses."""
    actual = _addresses(sender_values)
    from_addresses = {(a.email or "").lower() for a in senders}
    if not actual or (actual[0].email or "").lower() in from_addresses:
        return []
    return [
        SenderWarning(
            "sender_differs_from_from",
            f"The message was sent by {actual[0].email} (Sender) on behalf of "
            f"{senders[0].email if senders else 'no From address'}.",
        )
    ]


def _authentication_warnings(verdict: AuthenticationVerdict) -> list[SenderWarning]:
    warnings = []
    trusted, claimed = verdict.trusted, verdict.unverified_pass
    if trusted is not None and trusted.dmarc == "fail":
        warnings.append(
            SenderWarning(
                "dmarc_fail",
                f"The receiving server ({trusted.authserv_id or 'unnamed'}) reports that DMARC failed: the "
                "domain of the From address did not authenticate this message.",
            )
        )
    if claimed is not None:
        passes = ", ".join(f"{m}=pass" for m in METHODS if getattr(claimed, m) == "pass")
        warnings.append(
            SenderWarning(
                "unverified_authentication",
                f"An Authentication-Results header from {claimed.authserv_id or 'an unnamed server'} claims "
                f"{passes}, but no receiving server this account trusts wrote it: the sender may have. "
                "Not reported as the message's authentication (the account's authserv_id names the "
                "server to trust).",
            )
        )
    return warnings


def _domain_warnings(domain: str) -> list[SenderWarning]:
    warnings = []
    labels, punycode = _unicode_labels(domain)
    readable = ".".join(labels)
    if punycode or not domain.isascii():
        warnings.append(
            SenderWarning(
                "punycode_domain",
                f"The sender's domain {domain} is an internationalised (punycode) name; it reads as "
                f"{readable}.",
            )
        )
    mixed = [label for label in labels if len(_scripts(label)) > 1]
    if mixed:
        warnings.append(
            SenderWarning(
                "mixed_script_domain",
                f"The sender's domain mixes scripts ({', '.join(sorted(_scripts(mixed[0])))}) in "
                f"{mixed[0]!r}: letters that look alike may come from different alphabets.",
            )
        )
    return warnings
