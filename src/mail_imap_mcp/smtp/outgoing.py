"""A saved draft as it goes out: its bytes with Date replaced, a Message-ID added where it has none and Bcc
left out of the transmitted copy (the Sent copy keeps it), and so are the lines recording where each attachment came
from (``mime/building.py``: for the approval, never for recipients); its envelope (the sender, every To, Cc and Bcc
address); and the header values the user is shown to approve it.

The bytes are the draft's own: header fields are removed or added as whole lines, nothing else is
rewritten. The draft is read as a hostile one may be (saved by any client): a header the user is shown
that appears twice, an address that does not parse or holds control characters, more than :data:`MAX_SEND_RECIPIENTS` recipients, or a From that is not the account's are refused.
"""

from __future__ import annotations

import email.policy
import email.utils
import hashlib
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser
from typing import TYPE_CHECKING

from mail_imap_mcp.content.forwards import FORWARDED_HEADER
from mail_imap_mcp.mime.building import SOURCE_HEADER
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable

if TYPE_CHECKING:
    from _hashlib import HASH as Hash

#: At most this many recipients (To, Cc and Bcc together) in one message.
MAX_SEND_RECIPIENTS = 100
#: Headers the user is shown or the envelope is made of: each at most once.
_SINGLE = (
    "From",
    "Sender",
    "Reply-To",
    "To",
    "Cc",
    "Bcc",
    "Subject",
    "Message-ID",
    "In-Reply-To",
    FORWARDED_HEADER,
)
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_FIELD_START = re.compile(rb"^([!-9;-~]+)[ \t]*:", re.MULTILINE)
#: Control characters, and those that reorder or hide text (bidi overrides, zero-width): refused in an
#: address, escaped in the words of a refusal.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_MESSAGE_ID = re.compile(r"<[!-;=?-~]{1,250}@[!-;=?-~]{1,250}>")


@dataclass(frozen=True)
class Outgoing:
    """What a draft sends: its envelope and the header values the user is shown, as written (the shown
    forms of addresses and the subject decoded, unescaped: ``services/send_review.py`` shows them)."""

    header_id: str
    #: The draft had no Message-ID: this one (from the draft's digest) was added.
    id_added: bool
    sender: str
    from_shown: str
    reply_to: tuple[str, ...]
    to: tuple[str, ...]
    cc: tuple[str, ...]
    bcc: tuple[str, ...]
    subject: str
    in_reply_to: str | None
    #: The Message-ID of the message it forwards (``content/forwards.py``'s record), if any.
    forwarded: str | None
    #: Every To, Cc and Bcc address (bare), each once: what RCPT TO names.
    recipients: tuple[str, ...]
    #: SHA-256 of the draft's bytes as approved (its Message-ID added): a changed draft has another.
    fingerprint: str


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escaped(text: str, limit: int = 300) -> str:
    """``text`` on one line: control characters (CR, LF among them) shown as ``\\xNN``, cut at ``limit``."""
    one = _CONTROL.sub(_escape, text)
    one = one.replace("\t", " ")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _header_end(raw: bytes) -> tuple[int, int]:
    """Where the header block ends and where the body starts (both ``len(raw)`` without a blank line);
    the body is never sliced out, so never copied."""
    end = _HEADER_END.search(raw)
    return (len(raw), len(raw)) if end is None else (end.start(), end.end())


def _fields(header: bytes) -> list[tuple[str, bytes]]:
    """The header block as (lower-cased name, the field's lines) in order, continuation lines kept."""
    fields: list[tuple[str, bytes]] = []
    for line in header.splitlines(keepends=True):
        match = _FIELD_START.match(line)
        if match is None and fields:
            name, text = fields[-1]
            fields[-1] = (name, text + line)
        else:
            name = match.group(1).decode("ascii").lower() if match else ""
            fields.append((name, line))
    return fields


def rewritten(raw: bytes, *, date: str, header_id: str | None, keep_bcc: bool) -> bytes:
    """``raw`` with its Date replaced by ``date``, ``Message-ID: header_id`` added (when given) and its Bcc
    and attachment sources kept or left out; every other byte as it was."""
    body_start = _header_end(raw)[1]
    head = rewritten_head(raw[:body_start], date=date, header_id=header_id, keep_bcc=keep_bcc)
    return b"".join([head, memoryview(raw)[body_start:]])


def rewritten_head(head: bytes, *, date: str, header_id: str | None, keep_bcc: bool) -> bytes:
    """The header block and blank line of :func:`rewritten` from a draft's own (``head``: its bytes up to
    where the body starts); the body follows them unchanged."""
    header_end = _header_end(head)[0]
    header, blank = head[:header_end], head[header_end:]
    newline = b"\n" if blank.startswith(b"\n") or (b"\n" in header and b"\r\n" not in header) else b"\r\n"
    drop = {"date"} | (set() if keep_bcc else {"bcc", SOURCE_HEADER.lower(), FORWARDED_HEADER.lower()})
    kept = [
        text if text.endswith(b"\n") else text + newline for name, text in _fields(header) if name not in drop
    ]
    added = [f"Date: {date}".encode() + newline]
    if header_id is not None:
        added.append(f"Message-ID: {header_id}".encode() + newline)
    return b"".join([*added, *kept, newline])


def _addresses(message: EmailMessage, name: str) -> tuple[list[str], list[str]]:
    """The bare addresses of header ``name`` and their shown forms; :class:`DraftRefused` when it does not
    parse cleanly."""
    try:
        value = message.get(name)
        if value is None:
            return [], []
        found = list(value.addresses)
    except (AttributeError, ValueError, TypeError, IndexError):  # a name or address holding CR/LF...
        raise DraftRefused(DraftUnsendable.MALFORMED, f"its {name} header does not parse") from None
    bad = bool(getattr(value, "defects", None)) or not (found or getattr(value, "groups", None))
    bare = [a.addr_spec for a in found]
    if bad or any(not a or _CONTROL.search(a) or " " in a or a.count("@") != 1 for a in bare):
        raise DraftRefused(
            DraftUnsendable.MALFORMED, f"its {name} header holds an address that does not parse"
        )
    return bare, [str(a) for a in found]


def _subject(message: EmailMessage) -> str:
    try:
        return str(message.get("Subject") or "")
    except (ValueError, TypeError, IndexError):
        raise DraftRefused(DraftUnsendable.MALFORMED, "its Subject header does not parse") from None


def outgoing(raw: bytes, own_addresses: frozenset[str], id_domain: str) -> Outgoing:
    """Read the draft ``raw`` as it would go out (see the module); ``own_addresses`` lower-cased."""
    return outgoing_of(raw[: _header_end(raw)[1]], hashlib.sha256(raw), own_addresses, id_domain)


def outgoing_of(head: bytes, digest: Hash, own_addresses: frozenset[str], id_domain: str) -> Outgoing:
    """:func:`outgoing` of a draft from its header block (``head``, up to where its body starts) and the
    SHA-256 of all its bytes (``digest``, left as it is): the body (megabytes of attachments) is not read."""
    message = BytesParser(policy=email.policy.default).parsebytes(head)
    assert isinstance(message, EmailMessage)
    present = [key.lower() for key in message]  # counted unparsed: a hostile value raises on parse
    for name in _SINGLE:
        if present.count(name.lower()) > 1:
            raise DraftRefused(DraftUnsendable.REPEATED_HEADER, f"it has more than one {name} header")
    senders, from_shown = _addresses(message, "From")
    if len(senders) != 1 or senders[0].lower() not in own_addresses:
        raise DraftRefused(
            DraftUnsendable.SENDER_NOT_OWN,
            f"its From ({_escaped(', '.join(from_shown)) or 'none'}) must be exactly one of the account's addresses",
        )
    sender_field, _ = _addresses(message, "Sender")
    if any(address.lower() not in own_addresses for address in sender_field):
        raise DraftRefused(
            DraftUnsendable.SENDER_NOT_OWN, "its Sender header is not one of the account's addresses"
        )
    to, to_shown = _addresses(message, "To")
    cc, cc_shown = _addresses(message, "Cc")
    bcc, bcc_shown = _addresses(message, "Bcc")
    _, reply_to = _addresses(message, "Reply-To")
    recipients = tuple({a.lower(): a for a in (*to, *cc, *bcc)}.values())
    count = len(recipients)
    if count == 0:
        raise DraftRefused(DraftUnsendable.NO_RECIPIENTS, "it has no recipient in To, Cc or Bcc")
    if count > MAX_SEND_RECIPIENTS:
        raise DraftRefused(
            DraftUnsendable.TOO_MANY_RECIPIENTS, f"it has {count} recipients; at most {MAX_SEND_RECIPIENTS}"
        )
    header_id = str(message.get("Message-ID") or "").strip()
    id_added = not _MESSAGE_ID.fullmatch(header_id)
    if id_added:  # the same draft always gets the same one: the key of its single send
        header_id = f"<{digest.hexdigest()[:32]}@{id_domain}>"
    approved = digest.copy()
    if id_added:
        approved.update(header_id.encode())
    replied = str(message.get("In-Reply-To") or "").strip()
    forwarded = str(message.get(FORWARDED_HEADER) or "").strip()
    return Outgoing(
        header_id=header_id,
        id_added=id_added,
        sender=senders[0],
        from_shown=from_shown[0],
        reply_to=tuple(reply_to),
        to=tuple(to_shown),
        cc=tuple(cc_shown),
        bcc=tuple(bcc_shown),
        subject=_subject(message),
        in_reply_to=replied if _MESSAGE_ID.fullmatch(replied) else None,
        forwarded=forwarded if _MESSAGE_ID.fullmatch(forwarded) else None,
        recipients=recipients,
        fingerprint=approved.hexdigest(),
    )


def now_date() -> str:
    """An RFC 5322 date of now, in UTC."""
    return email.utils.formatdate(usegmt=True)
