"""The nodes of a search query: what to match, with no word of how a server or an index is asked.

Text is kept in Unicode NFC: decomposed input ("u" + U+0308 for "ü") would match differently per server,
since only some normalise search strings themselves. Keywords are IMAP atoms, validated by the caller.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Literal

TextField = Literal["text", "from", "to", "cc", "bcc", "subject", "body"]
SystemFlag = Literal["seen", "answered", "flagged", "deleted", "draft"]

#: Senders whose mail expects no answer (a substring of From, as IMAP's FROM search matches).
AUTOMATED_SENDERS = ("noreply", "no-reply", "mailer-daemon")
#: Precedence values of bulk mail (RFC 2076; RFC 3834 2 asks responders to skip them).
BULK_PRECEDENCE = ("bulk", "list", "junk")


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@dataclass(frozen=True)
class Contains:
    """``value`` appears in ``field`` (a substring, as IMAP matches; ``text``: headers or body)."""

    field: TextField
    value: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _nfc(self.value))


@dataclass(frozen=True)
class Header:
    """Header ``name`` contains ``value``; an empty ``value``: the message has that header at all."""

    name: str
    value: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _nfc(self.value))


@dataclass(frozen=True)
class HasFlag:
    """A system flag is set (``present``) or not."""

    flag: SystemFlag
    present: bool = True


@dataclass(frozen=True)
class HasKeyword:
    """A keyword (an IMAP atom such as ``$Important``) is set (``present``) or not."""

    keyword: str
    present: bool = True


@dataclass(frozen=True)
class DateBound:
    """Received on or after (``since``) or before (``before``) ``day``: the server's arrival date, by
    day, disregarding time and zone (as IMAP's SINCE and BEFORE)."""

    bound: Literal["since", "before"]
    day: date


@dataclass(frozen=True)
class SizeBound:
    """Larger or smaller than ``octets`` (the whole message's size)."""

    bound: Literal["larger", "smaller"]
    octets: int


@dataclass(frozen=True)
class HasAttachment:
    """The message has an attachment: a part with a file name or ``Content-Disposition: attachment``
    (as :func:`mail_imap_mcp.mime.parts.attachment_parts` counts them). IMAP SEARCH has no key for it:
    without an index it is answered from each candidate's BODYSTRUCTURE."""


@dataclass(frozen=True)
class Filename:
    """An attachment's file name contains ``value`` (case-insensitively; ``"pdf"`` matches
    ``report.PDF``). IMAP SEARCH has no key for it either (see :class:`HasAttachment`)."""

    value: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _nfc(self.value))


@dataclass(frozen=True)
class Label:
    """The message carries Gmail label ``name`` (X-GM-LABELS spelling: a user's label, or a system one
    such as ``\\Important``). Only Gmail's search answers it (``label:``, ``is:important``)."""

    name: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _nfc(self.name))


#: Gmail's inbox categories (``category:``).
CATEGORIES = ("primary", "social", "promotions", "updates", "forums", "reservations", "purchases")


@dataclass(frozen=True)
class Category:
    """The message is in Gmail's inbox category ``name`` (one of :data:`CATEGORIES`). Only Gmail's search
    answers it."""

    name: str


#: The tests only a server with labels answers (Gmail's own search), never IMAP SEARCH keys.
GMAIL_TESTS = (Label, Category)

#: The tests answered from a message's MIME structure, never by IMAP SEARCH keys.
STRUCTURE_TESTS = (HasAttachment, Filename)


@dataclass(frozen=True)
class NeedsReply:
    """Mail that may await the user's answer: not answered, not from a list, an automated sender or
    one of ``own_addresses``, not bulk (RFC 3834). A backend that knows more (a Sent index) may answer
    it better; every other one matches :meth:`expanded`."""

    own_addresses: frozenset[str] = frozenset()

    def expanded(self) -> AllOf:
        parts: list[Query] = [
            HasFlag("answered", present=False),
            Not(Header("List-Id")),
            # RFC 3834: Auto-Submitted other than "no" starts with "auto-".
            Not(Header("Auto-Submitted", "auto-")),
            *(Not(Header("Precedence", value)) for value in BULK_PRECEDENCE),
            *(Not(Contains("from", sender)) for sender in (*AUTOMATED_SENDERS, *sorted(self.own_addresses))),
        ]
        return AllOf(tuple(parts))


@dataclass(frozen=True)
class AllOf:
    """Every part matches; no parts: every message."""

    parts: tuple[Query, ...] = ()


@dataclass(frozen=True)
class AnyOf:
    """At least one part matches."""

    parts: tuple[Query, ...]

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("AnyOf needs at least one part (none would match nothing)")


@dataclass(frozen=True)
class Not:
    """The part does not match."""

    part: Query


Query = (
    Contains
    | Header
    | HasFlag
    | HasKeyword
    | DateBound
    | SizeBound
    | HasAttachment
    | Filename
    | Label
    | Category
    | NeedsReply
    | AllOf
    | AnyOf
    | Not
)

#: The query every message matches.
EVERYTHING = AllOf()


def all_of(*parts: Query | None) -> Query:
    """The conjunction of ``parts`` (None left out), nested conjunctions flattened; one part is itself."""
    flat: list[Query] = []
    for part in parts:
        if isinstance(part, AllOf):
            flat.extend(part.parts)
        elif part is not None:
            flat.append(part)
    return flat[0] if len(flat) == 1 else AllOf(tuple(flat))


def nodes(query: Query) -> Iterator[Query]:
    """``query`` and every node below it, parents first."""
    yield query
    if isinstance(query, AllOf | AnyOf):
        for part in query.parts:
            yield from nodes(part)
    elif isinstance(query, Not):
        yield from nodes(query.part)
    elif isinstance(query, NeedsReply):
        yield from nodes(query.expanded())


def is_everything(query: Query) -> bool:
    """Whether ``query`` matches every message by its form (a conjunction of nothing)."""
    return isinstance(query, AllOf) and all(is_everything(part) for part in query.parts)


def needs_utf8(query: Query) -> bool:
    """Whether any text of ``query`` is beyond ASCII (a server is then told the charset): words, headers,
    file names and labels (Gmail's search gets these in its own string)."""
    for node in nodes(query):
        if isinstance(node, Contains | Filename) and not node.value.isascii():
            return True
        if isinstance(node, Header) and not (node.value + node.name).isascii():
            return True
        if isinstance(node, Label) and not node.name.isascii():
            return True
    return False
