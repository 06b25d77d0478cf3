"""What a message's headers say about its sender: the receiving server's Authentication-Results (RFC
8601) and facts worth a second look (a display name that is another address, a failed DMARC check, a
punycode or mixed-script domain, a Reply-To on another domain).

Only the topmost Authentication-Results header counts, or the one whose authserv-id is the account's
configured one: a receiving server adds its header above the ones the message arrived with, and a
sender can write any header it likes below it (RFC 8601 5: forged ones are to be ignored).
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from .addresses import Address, parse_address_list

__all__ = ["AuthenticationResults", "SenderWarning", "authentication_results", "sender_warnings"]

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
_EMAIL = re.compile(r"[^\s@<>()\"',;:]+@[^\s@<>()\"',;:]+\.[^\s@<>()\"',;:]+")


@dataclass(frozen=True)
class AuthenticationResults:
    """One Authentication-Results header: who added it and the SPF, DKIM and DMARC results it states."""

    #: Who added it (None: the header names no one, as Microsoft 365's do).
    authserv_id: str | None
    spf: str | None = None
    dkim: str | None = None
    dmarc: str | None = None


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
    for clause in clauses:
        match = _METHOD_RESULT.match(clause)
        if match is None:
            continue
        method, result = match.group(1).lower(), match.group(2).lower()
        if method in METHODS:
            found.setdefault(method, []).append(result if result in _RESULTS else "unknown")
    best = {
        method: min(results, key=lambda r: _RANK.index(r) if r in _RANK else len(_RANK))
        for method, results in found.items()
    }
    return AuthenticationResults(authserv_id, **best)


def authentication_results(
    values: Sequence[str], authserv_id: str | None = None
) -> AuthenticationResults | None:
    """The results that count among a message's Authentication-Results ``values`` (top to bottom): the
    topmost header's, or with ``authserv_id`` (the account's receiving server) the first one it added."""
    for value in values:
        parsed = parse_authentication_results(value)
        if parsed is None:
            continue
        if authserv_id is None:
            return parsed
        if parsed.authserv_id == authserv_id.lower():
            return parsed
    return None


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


def sender_warnings(
    from_values: Sequence[str], reply_to_values: Sequence[str], authentication: AuthenticationResults | None
) -> list[SenderWarning]:
    """Facts about the sender of a message with these From and Reply-To header values (decoded, as
    :func:`~.headers.parse_header_block` gives them) and these authentication results."""
    warnings: list[SenderWarning] = []
    senders = [a for value in from_values for a in parse_address_list(value) if a.email]
    sender = senders[0] if senders else None
    if sender is not None and sender.name:
        shown = {m.lower() for m in _EMAIL.findall(sender.name)}
        others = sorted(shown - {(sender.email or "").lower()})
        if others:
            warnings.append(
                SenderWarning(
                    "display_name_is_other_address",
                    f"The sender's display name is the address {others[0]}, but the message is from "
                    f"{sender.email}.",
                )
            )
    if authentication is not None and authentication.dmarc == "fail":
        warnings.append(
            SenderWarning(
                "dmarc_fail",
                f"The receiving server ({authentication.authserv_id or 'unnamed'}) reports that DMARC "
                "failed: the domain of the From address did not authenticate this message.",
            )
        )
    domain = _domain(sender) if sender is not None else ""
    if domain:
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
    replies = [a for value in reply_to_values for a in parse_address_list(value) if a.email]
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
