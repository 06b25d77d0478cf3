"""What a message offers for leaving its list (RFC 2369 ``List-Unsubscribe``, RFC 8058 one-click), and
whether the offer is the list's own: a DKIM signature the receiving server reports as passing (the
trusted Authentication-Results, :mod:`.authentication`) whose ``h=`` covers both ``List-Unsubscribe``
and ``List-Unsubscribe-Post``, as RFC 8058 section 4 requires before a one-click POST.

Pure: headers in, facts out; whether and how anything is sent is the service's
(:mod:`mail_imap_mcp.services.unsubscribe`).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .authentication import AuthenticationResults

#: How a list is left: an HTTPS POST (RFC 8058), a mail drafted, a link handed to the user, or nothing.
Way = Literal["one_click", "mailto", "link", "none"]
#: What was done for a list once the user approved.
Outcome = Literal[
    "unsubscribed", "not_confirmed", "failed", "refused", "draft_saved", "open_yourself", "nothing_offered"
]
#: The List-Unsubscribe-Post value of RFC 8058 section 3.1.
ONE_CLICK_POST = "list-unsubscribe=one-click"
_BRACKETED = re.compile(r"<([^<>]*)>")
_TAG = re.compile(r"\s*([a-z][a-z0-9_]*)\s*=\s*([^;]*)", re.IGNORECASE)
_FOLDING = re.compile(r"\s+")


@dataclass(frozen=True)
class MailtoUnsubscribe:
    """A ``mailto:`` unsubscribe: the one address, and only the subject and body the link names (never
    its cc, bcc or other headers)."""

    address: str
    subject: str
    body: str


@dataclass(frozen=True)
class UnsubscribeOffer:
    """A message's ways to leave its list: ``https`` addresses (``one_click`` where the message offers
    RFC 8058 one-click and a passing DKIM signature covers both headers) and a ``mailto``."""

    list_name: str
    https: tuple[str, ...]
    one_click: bool
    mailto: MailtoUnsubscribe | None
    #: Why the https address is not one-click (empty where it is, or there is none).
    not_one_click: str = ""


def unsubscribe_offer(
    headers: Mapping[str, Sequence[str]], trusted: AuthenticationResults | None
) -> UnsubscribeOffer | None:
    """The offer of a message whose headers (lower-case names, values top to bottom, unfolded) are
    ``headers``; ``trusted`` the receiving server's Authentication-Results. None without
    List-Unsubscribe."""
    values = headers.get("list-unsubscribe", [])
    if not values:
        return None
    uris = [uri.strip() for uri in _BRACKETED.findall(values[0]) if uri.strip()]
    https = tuple(uri for uri in uris if uri.lower().startswith("https:"))
    mailto = next((parsed for uri in uris if (parsed := mailto_unsubscribe(uri)) is not None), None)
    posts = [_FOLDING.sub("", value).lower() for value in headers.get("list-unsubscribe-post", [])]
    reason = ""
    if not https:
        reason = "no https address" if not uris else "no https address (only mailto or http)"
    elif posts != [ONE_CLICK_POST]:
        reason = "the message does not offer one-click (List-Unsubscribe-Post)"
    elif not signed_by_list(headers, trusted):
        reason = "no DKIM signature the receiving server verified covers List-Unsubscribe and List-Unsubscribe-Post"
    return UnsubscribeOffer(
        list_name=_list_name(headers),
        https=https,
        one_click=bool(https) and not reason,
        mailto=mailto,
        not_one_click=reason if https else "",
    )


def signed_by_list(headers: Mapping[str, Sequence[str]], trusted: AuthenticationResults | None) -> bool:
    """Whether a DKIM signature the trusted server reports as passing covers both unsubscribe headers.

    A passing result is matched to its ``DKIM-Signature`` by domain (``d=``), and by selector and the
    start of the signature where the result names them; the signature's ``h=`` must list both names.
    """
    if trusted is None or not trusted.dkim_passes:
        return False
    for value in headers.get("dkim-signature", []):
        tags = {key.lower(): _FOLDING.sub("", tag) for key, tag in _TAG.findall(value)}
        signed = {name.strip().lower() for name in tags.get("h", "").split(":")}
        if not {"list-unsubscribe", "list-unsubscribe-post"} <= signed:
            continue
        for passed in trusted.dkim_passes:
            if passed.get("d") != tags.get("d", "").lower():
                continue
            if "s" in passed and passed["s"] != tags.get("s"):
                continue
            if "b" in passed and not tags.get("b", "").startswith(passed["b"]):
                continue
            return True
    return False


def mailto_unsubscribe(uri: str) -> MailtoUnsubscribe | None:
    """A ``mailto:`` URI as an unsubscribe message: its one address, subject and body; None for another
    scheme, no address or several (an unsubscribe goes to one list address)."""
    if not uri.lower().startswith("mailto:"):
        return None
    path, _, query = uri[len("mailto:") :].partition("?")
    addresses = [a for a in urllib.parse.unquote(path).split(",") if a.strip()]
    if len(addresses) != 1 or "@" not in addresses[0] or any(ch in addresses[0] for ch in "<>\r\n "):
        return None
    fields = {key.lower(): value for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True)}
    return MailtoUnsubscribe(
        address=addresses[0].strip(),
        subject=fields.get("subject", "unsubscribe").replace("\r", " ").replace("\n", " ") or "unsubscribe",
        body=fields.get("body", ""),
    )


def _list_name(headers: Mapping[str, Sequence[str]]) -> str:
    """The list's name as List-Id gives it (its phrase, else its id), else the sender."""
    for value in headers.get("list-id", [])[:1]:
        phrase, _, rest = value.partition("<")
        ident = rest.partition(">")[0].strip()
        return (phrase.strip().strip('"') or ident or value.strip())[:200]
    sender = headers.get("from", [""])[0]
    return sender.strip()[:200]
