"""A message's summary from its headers, flags and text, with no IMAP: what a page of search results
shows of each message, built the same way from a server's FETCH answer or from a local index's row.

Every field is bounded (a hostile 1 MB Subject must not make a page huge), addresses are listed up to
:data:`MAX_LISTED_ADDRESSES` with the number left out, and the recipients are also said in a few words
(``"me +2"``) for the compact page. The sender warnings of its From, Reply-To and Sender headers
(:func:`~.authentication.sender_warnings`, without the authentication results) are read from
:func:`address_text` of each, which the local index keeps, so a hit says the same from either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..content.text import collapse_whitespace, truncate
from .addresses import Address, format_address, format_address_quoted, parse_address_list
from .authentication import SenderWarning, sender_warnings
from .dates import parse_date
from .kept import kept_when_short
from .parts import Part, attachment_parts, has_attachments

MAX_LISTED_ADDRESSES = 20
#: A summary names at most this many attachments (what ``filename:`` is judged by without an index).
MAX_ATTACHMENT_NAMES = 50
#: Subject and address fields of a summary are cut to this many characters (and marked).
MAX_SUMMARY_FIELD_CHARS = 2000
#: The headers a summary's sender warnings are read from (:func:`~.authentication.sender_warnings`, with
#: no verdict: Authentication-Results is the message's, not the summary's).
SENDER_HEADERS = ("from", "reply-to", "sender")
#: A summary's sender warning is cut to this many characters (and marked): at most one of each of the
#: six codes these headers tell.
MAX_WARNING_CHARS = 300
#: A display name of an address header longer than :data:`MAX_SUMMARY_FIELD_CHARS` is cut to this many
#: characters.
_ADDRESS_NAME_CHARS = 200
#: How much of such a header is read: as much as the index reads of a message's header fields (16 KiB),
#: so both paths read the same, in bounded time.
_ADDRESS_READ_CHARS = 16 * 1024
#: The address fields are kept by their header values (senders and recipients recur from message to
#: message) when these hold up to this many characters: at most 2,048 of each kind.
_KEPT_ADDRESS_CHARS = 1024


@dataclass(frozen=True, slots=True)
class MessageSummary:
    """What a list of messages shows of one: each field bounded, None where the message has none."""

    #: ISO 8601 UTC, from the Date header, else the arrival time given.
    date: str | None
    from_: str | None
    to: str | None
    cc: str | None
    subject: str | None
    #: The recipients (To and Cc) in a few words, "me" for the account's own addresses; "" when the
    #: message went to the account alone.
    short_recipients: str | None
    #: Its Message-ID header (``<left@right>``), when it has one.
    header_message_id: str | None
    has_attachments: bool
    snippet: str | None
    #: The file names of its attachments (None: one without a name), at most :data:`MAX_ATTACHMENT_NAMES`.
    attachment_names: tuple[str | None, ...] = ()
    #: What its From, Reply-To and Sender tell worth a second look (:data:`SENDER_HEADERS`), bounded.
    sender_warnings: tuple[SenderWarning, ...] = ()


def summarise(
    headers: dict[str, list[str]],
    *,
    arrived: datetime | None = None,
    parts: list[Part] | None = None,
    snippet: str | None = None,
    own: frozenset[str] = frozenset(),
) -> MessageSummary:
    """The summary of a message with these (lower-case named) ``headers``; ``arrived``: when the server
    received it (the date when the Date header is missing or unreadable); ``parts``: its structure, when
    known; ``snippet``: the start of its text (see :func:`snippet_of`); ``own``: the account's addresses
    (lower-case), which the short recipients call 'me'."""
    sent = parse_date(first(headers, "date"))
    return MessageSummary(
        date=iso_utc(sent or arrived),
        from_=_address_field(tuple(headers.get("from", ()))),
        to=_address_field(tuple(headers.get("to", ()))),
        cc=_address_field(tuple(headers.get("cc", ()))),
        subject=bounded(first(headers, "subject")),
        short_recipients=_short_recipients_field((*headers.get("to", ()), *headers.get("cc", ())), own),
        header_message_id=bounded(first(headers, "message-id")),
        has_attachments=has_attachments(parts) if parts else False,
        snippet=snippet,
        attachment_names=attachment_names(parts) if parts else (),
        sender_warnings=_warnings_field(
            tuple(address_text(headers.get(name, ())) for name in SENDER_HEADERS)
        ),
    )


def address_text(values: Sequence[str]) -> str:
    """An address header's values (From, Reply-To, Sender) as one text of at most
    :data:`MAX_SUMMARY_FIELD_CHARS`: what the local index keeps of them (the From as its sender column)
    and what a summary's sender warnings are read from, so both paths warn alike. A longer one (a display
    name padded to hide the address) is written again from the addresses of its first
    :data:`_ADDRESS_READ_CHARS`, each name cut to :data:`_ADDRESS_NAME_CHARS` and each address to what RFC 5321
    allows, as many as fit: what a warning names stays."""
    joined = ", ".join(values)
    if len(joined) <= MAX_SUMMARY_FIELD_CHARS:
        return joined
    kept: list[str] = []
    size = 0
    for address in parse_address_list(joined[:_ADDRESS_READ_CHARS]):
        name = truncate(address.name, _ADDRESS_NAME_CHARS)[0] if address.name else None
        email = address.email
        if email and len(email) > 254:
            local, _, domain = email.rpartition("@")
            email = f"{local[:64]}@{domain[:189]}"
        text = format_address_quoted(Address(name, email))
        size += len(text) + 2
        if size > MAX_SUMMARY_FIELD_CHARS:
            break
        kept.append(text)
    return ", ".join(kept) or joined[:MAX_SUMMARY_FIELD_CHARS]


def attachment_names(parts: list[Part]) -> tuple[str | None, ...]:
    """The file names of the attachments among ``parts`` (None for one without a name), bounded."""
    return tuple(bounded(part.filename) for part in attachment_parts(parts)[:MAX_ATTACHMENT_NAMES])


def snippet_of(text: str | None, chars: int) -> str | None:
    """The first ``chars`` characters of a message's text, its whitespace collapsed; None when empty."""
    return cut_snippet(collapse_whitespace(text or ""), chars)


def cut_snippet(collapsed: str, chars: int) -> str | None:
    """:func:`snippet_of` of text whose whitespace is collapsed already (as a FETCH prefix's snippet
    text is: collapsing 6 KB again cost 50 us a message)."""
    if not collapsed or chars <= 0:
        return None
    cut, _ = truncate(collapsed, chars)
    return cut


def first(headers: dict[str, list[str]], name: str) -> str | None:
    """The first value of header ``name`` (lower-case), None when absent."""
    values = headers.get(name)
    return values[0] if values else None


def iso_utc(moment: datetime | None) -> str | None:
    """``moment`` as ISO 8601 UTC (``...Z``); a naive one is taken as local time (as imapclient gives a
    server's time when its zone is unknown)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def bounded(value: str | None) -> str | None:
    """``value`` cut to :data:`MAX_SUMMARY_FIELD_CHARS`, marked with an ellipsis when cut."""
    if value is None:
        return None
    return bounded_to(value, MAX_SUMMARY_FIELD_CHARS)


def bounded_to(value: str, chars: int) -> str:
    """``value`` cut to ``chars`` characters, marked with an ellipsis when cut."""
    cut, truncated = truncate(value, chars)
    return cut + "…" if truncated else cut


def listed_addresses(values: list[str]) -> str | None:
    """The addresses of these header values, at most :data:`MAX_LISTED_ADDRESSES`, then ``(+N more)``;
    the values as they are when they hold no address."""
    addresses = [a for v in values for a in parse_address_list(v)]
    if not addresses:
        joined = ", ".join(v for v in values if v)
        return joined or None
    shown = [format_address(a) for a in addresses[:MAX_LISTED_ADDRESSES]]
    extra = len(addresses) - len(shown)
    return ", ".join(shown) + (f" (+{extra} more)" if extra > 0 else "")


def short_recipients(values: list[str], own: frozenset[str] = frozenset()) -> str | None:
    """All recipients in a few words: ``"me +2"`` when one is an address of ``own`` (lower-case),
    else the first one's name (or email), then '+N' for the others: ``"Bob Smith +2"``; ``""`` when
    the message went to ``own`` alone. An address named twice (To and Cc) counts once."""
    addresses = [a for v in values for a in parse_address_list(v)]
    if not addresses:
        return listed_addresses(values)
    mine = False
    seen: set[str] = set()
    others: list[Address] = []
    for address in addresses:
        email = (address.email or "").lower()
        mine = mine or email in own
        if email in own or (email and email in seen):
            continue
        seen.add(email)
        others.append(address)
    if mine:
        return f"me +{len(others)}" if others else ""
    more = len(others) - 1
    return _label(others[0]) + (f" +{more}" if more else "")


def _label(address: Address) -> str:
    label = address.name or address.email or ""
    if label.strip().lower() == "me":  # a stranger named "me" must not read as this account
        return address.email or label
    return label


@kept_when_short(maxsize=2048, max_chars=_KEPT_ADDRESS_CHARS)
def _address_field(values: tuple[str, ...]) -> str | None:
    return bounded(listed_addresses(list(values)))


@kept_when_short(maxsize=2048, max_chars=_KEPT_ADDRESS_CHARS)
def _short_recipients_field(values: tuple[str, ...], own: frozenset[str]) -> str | None:
    return bounded(short_recipients(list(values), own))


@kept_when_short(maxsize=2048, max_chars=_KEPT_ADDRESS_CHARS)
def _warnings_field(texts: tuple[str, ...]) -> tuple[SenderWarning, ...]:
    headers = {name: [text] for name, text in zip(SENDER_HEADERS, texts, strict=True) if text}
    found = sender_warnings(headers)
    return tuple(SenderWarning(w.code, bounded_to(w.message, MAX_WARNING_CHARS)) for w in found)
