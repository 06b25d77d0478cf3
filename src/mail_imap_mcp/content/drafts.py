"""A plain-text draft (optionally a quoted reply) as an RFC 5322 message; pure, no IMAP.

The message is built by the stdlib email package (UTF-8, RFC 2047 headers, CRLF, quoted-printable where
needed, a new Message-ID with the sender's domain); every header value is checked for control
characters first, so no argument can add a header line.
"""

from __future__ import annotations

import email.errors
import email.policy
import email.utils
import re
from collections.abc import Mapping, Sequence
from email.headerregistry import Address, AddressHeader, HeaderRegistry
from email.message import EmailMessage
from typing import Protocol

MAX_RECIPIENTS = 100
MAX_BODY_BYTES = 1024 * 1024
#: References kept from the original (the first and the latest, RFC 5322 3.6.4 allows trimming).
MAX_REFERENCES = 20
#: A message id as RFC 5322 writes it (``<left@right>``, printable ASCII, bounded); threads match on it too.
MESSAGE_ID = re.compile(r"<[!-;=?-~]{1,250}@[!-;=?-~]{1,250}>")
#: UTF-8, RFC 2047 encoded words, CRLF line ends.
_POLICY = email.policy.SMTP
# C0 controls (CR, LF, NUL, TAB...), DEL, C1 and the Unicode line separators: never inside a header.
_HEADER_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# In the body: line ends and tabs are text; NUL and the other C0 controls are not.
_BODY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
#: Reply prefixes mail clients write, in many languages (Re, German AW, Nordic SV, Finnish VS, Dutch
#: Antw, Polish Odp, Italian R/RIF, Portuguese RES, Turkish YNT, Croatian Odg, Greek, Chinese...), with
#: a count such as ``Re[2]:`` or ``Re(2):``, and the fullwidth colon; all of them stand for one ``Re:``.
_REPLY_WORDS = (
    "re|aw|sv|vs|antw|antwort|odp|r|rif|res|ref|ynt|odg|atb|vá|bls|απ|σχετ|回复|回覆|答复|答覆|返信|回信"
)
_REPLY_PREFIXES = re.compile(
    rf"^(?:\s*(?:{_REPLY_WORDS})\s*(?:\[\d{{1,4}}\]|\(\d{{1,4}}\))?\s*[:：])+\s*", re.IGNORECASE
)
#: The longest References line kept (RFC 5322 2.1.1: a line is at most 998 characters).
MAX_REFERENCES_CHARS = 900
_DOMAIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


class RepliedMessage(Protocol):
    """What a reply takes from the message it answers (a read message's detail)."""

    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def from_(self) -> str | None: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def date(self) -> str | None: ...
    @property
    def body_text(self) -> str | None: ...
    @property
    def body_truncated(self) -> bool: ...


def parse_address(value: str) -> Address | None:
    """``value`` as exactly one address (no group, no defect), or None."""
    try:
        header = HeaderRegistry()("to", value)
    except Exception:  # the parser raises on some malformed input (e.g. "a@")
        return None
    if not isinstance(header, AddressHeader) or header.defects or len(header.groups) != 1:
        return None
    group = header.groups[0]
    if group.display_name is not None or len(group.addresses) != 1:
        return None
    address = group.addresses[0]
    return address if address.username and address.domain else None


def check_address(value: str) -> str:
    """``value`` when it is one ASCII address without control characters; else ValueError saying why."""
    if _HEADER_CONTROL.search(value):
        raise ValueError("must not contain control characters (CR/LF would add header lines)")
    address = parse_address(value)
    if address is None:
        raise ValueError(f"not one email address like 'Name <user@example.com>': {value[:100]!r}")
    if not address.addr_spec.isascii():
        raise ValueError("the address itself must be ASCII (use the punycode form of the domain)")
    return value


def check_header_text(value: str) -> str:
    if _HEADER_CONTROL.search(value):
        raise ValueError("must not contain control characters (CR/LF would add header lines)")
    return value


def check_body(value: str) -> str:
    if _BODY_CONTROL.search(value):
        raise ValueError("must not contain NUL or other control characters (line breaks and tabs are fine)")
    if len(value.encode("utf-8")) > MAX_BODY_BYTES:
        raise ValueError(f"is larger than {MAX_BODY_BYTES} bytes (UTF-8)")
    return value


def address(value: str) -> Address:
    """A checked address (see :func:`check_address`) as an ``Address``."""
    parsed = parse_address(value)
    assert parsed is not None
    return Address(display_name=parsed.display_name, addr_spec=parsed.addr_spec)


def one_line(text: str | None) -> str:
    """``text`` with control characters as spaces, for a header."""
    return _HEADER_CONTROL.sub(" ", text or "").strip()


def header_addresses(value: str | None) -> list[Address]:
    """The valid addresses of an address header's value (a mailbox list), in order."""
    found = []
    for display, addr in email.utils.getaddresses([one_line(value)]):
        try:
            found.append(Address(display_name=one_line(display), addr_spec=check_address(addr)))
        except (ValueError, email.errors.HeaderParseError, IndexError):
            continue
    return found


def _key(address: Address) -> str:
    return address.addr_spec.lower()


def _distinct(addresses: Sequence[Address], left_out: set[str]) -> list[Address]:
    """``addresses`` without those whose address (case-insensitive) is in ``left_out`` or came before;
    ``left_out`` grows by those kept."""
    kept = []
    for address in addresses:
        if _key(address) not in left_out:
            left_out.add(_key(address))
            kept.append(address)
    return kept


def reply_recipients(
    headers: Mapping[str, str], own: frozenset[str], *, everyone: bool
) -> tuple[list[Address], list[Address]]:
    """To and Cc of a reply to a message with these headers: To is its Reply-To, else its From (a list's
    Reply-To is the list); with ``everyone`` (reply-all) Cc is its To and Cc. Never one of ``own`` (the
    account's addresses, lower-case), never an address twice; a reply to one's own message goes to its
    recipients. Only addresses of those headers, unbounded (the caller cuts)."""
    seen = set(own)
    recipients = header_addresses(headers.get("To"))
    copied = header_addresses(headers.get("Cc"))
    to = _distinct(header_addresses(headers.get("Reply-To")), seen) or _distinct(
        header_addresses(headers.get("From")), seen
    )
    if not to:  # the message is the user's own: the reply goes to whom it went to
        to = _distinct(recipients, seen)
        recipients = []
    cc = _distinct([*recipients, *copied], seen) if everyone else []
    return to, cc


def reply_subject(theirs: str | None) -> str:
    """``Re: `` and the original's subject without its reply prefixes (``Re: Re:``, ``AW:``, ``SV:``...):
    exactly one ``Re:``."""
    text = one_line(theirs)
    return f"Re: {_REPLY_PREFIXES.sub('', text)}".rstrip()


def quote(original: RepliedMessage) -> str:
    """The original's text quoted (``> ``), after an attribution line."""
    when = one_line(original.headers.get("Date")) or original.date or "an unknown date"
    who = one_line(original.from_) or "the sender"
    text = (original.body_text or "").rstrip()
    lines = [f"> {line}" if line else ">" for line in text.split("\n")]
    if original.body_truncated:
        lines.append("> [...]")
    return f"On {when}, {who} wrote:\n" + "\n".join(lines) + "\n"


def thread_headers(original: RepliedMessage) -> tuple[str | None, str | None]:
    """In-Reply-To and References (RFC 5322 3.6.4) from the original's Message-ID and References."""
    own = MESSAGE_ID.findall(original.headers.get("Message-ID", ""))
    if not own:
        return None, None
    earlier = original.headers.get("References") or original.headers.get("In-Reply-To", "")
    chain = list(dict.fromkeys(i for i in MESSAGE_ID.findall(earlier) if i != own[0]))
    # Trimmed as RFC 5322 3.6.4 allows, keeping the thread's first id and the latest ones (RFC 5537
    # 3.4.4 does so for netnews), to at most MAX_REFERENCES ids on one header line.
    if len(chain) >= MAX_REFERENCES:
        chain = chain[:1] + chain[-(MAX_REFERENCES - 2) :]
    while len(chain) > 1 and len(" ".join([*chain, own[0]])) > MAX_REFERENCES_CHARS:
        del chain[1]
    if len(" ".join([*chain, own[0]])) > MAX_REFERENCES_CHARS:
        chain = []
    return own[0], " ".join([*chain, own[0]])


def message_id_domain(sender: str, host: str) -> str:
    """The domain of a new Message-ID: the sender's, else the server's host name."""
    domain = sender.rpartition("@")[2] if sender else host
    return domain if _DOMAIN.match(domain) else "mail-imap-mcp.invalid"


def draft_recipients(
    to: Sequence[Address],
    cc: Sequence[Address],
    original: Mapping[str, str] | None,
    own: frozenset[str],
    *,
    reply_all: bool = False,
) -> tuple[list[Address], list[Address], list[str]]:
    """To and Cc of a draft, and warnings. ``to`` and ``cc`` are the caller's; a reply (``original``: its
    headers) goes to :func:`reply_recipients` unless ``to`` is given, and ``cc`` is added to a reply-all's
    Cc. No address twice; what a reply takes from the original is cut at :data:`MAX_RECIPIENTS` in all.
    ValueError: the caller's own ``to`` and ``cc`` are more than that."""
    if len(to) + len(cc) > MAX_RECIPIENTS:
        raise ValueError(f"at most {MAX_RECIPIENTS} recipients in to and cc together.")
    warnings: list[str] = []
    if original is None:
        return list(to), list(cc), warnings
    theirs_to, theirs_cc = reply_recipients(original, own, everyone=reply_all)
    seen: set[str] = set()
    final_to = _distinct(to or theirs_to, seen)
    final_cc = _distinct([*cc, *theirs_cc], seen)
    if not final_to and not to:
        warnings.append("The original has no usable Reply-To or From address: add the recipients.")
    room = MAX_RECIPIENTS - len(final_to)
    if len(final_cc) > room:
        warnings.append(
            f"The original names {len(final_to) + len(final_cc)} recipients; the draft keeps the first "
            f"{MAX_RECIPIENTS} (To first, then Cc)."
        )
        final_to, final_cc = final_to[:MAX_RECIPIENTS], final_cc[: max(room, 0)]
    return final_to, final_cc, warnings


def compose_draft(
    sender: Address | None,
    to: Sequence[Address],
    cc: Sequence[Address],
    subject: str | None,
    body_text: str,
    domain: str,
    original: RepliedMessage | None,
    bcc: Sequence[Address] = (),
) -> tuple[EmailMessage, list[str]]:
    """The draft to ``to``, ``cc`` and ``bcc`` (see :func:`draft_recipients`), and warnings for what it
    lacks. A reply (``original``) gets 'Re:' and the original's subject unless ``subject`` is given,
    In-Reply-To and References, and the original quoted below. Bcc stays in the draft and its Sent copy;
    sending leaves it out of what is transmitted (``smtp/outgoing.py``)."""
    warnings: list[str] = []
    message = EmailMessage(policy=_POLICY)
    if sender is not None:
        message["From"] = sender
    else:
        warnings.append(
            "No From header (the login name is not an email address, and the account sets no addresses): "
            "your mail client sets it."
        )
    if to:
        message["To"] = to
    if cc:
        message["Cc"] = cc
    if bcc:
        message["Bcc"] = bcc
    if subject is None and original is not None:
        subject = reply_subject(original.subject)
    if subject:
        message["Subject"] = subject
    message["Date"] = email.utils.formatdate(localtime=True)
    message["Message-ID"] = email.utils.make_msgid(domain=domain)
    body = body_text.replace("\r\n", "\n").replace("\r", "\n")
    if original is not None:
        parent, references = thread_headers(original)
        if parent and references:
            message["In-Reply-To"] = parent
            message["References"] = references
        else:
            warnings.append("The original has no Message-ID: the draft is not threaded to it.")
        body = (body.rstrip("\n") + "\n\n" if body.strip() else "") + quote(original)
    ascii_lines = body.isascii() and all(len(line) <= 900 for line in body.split("\n"))
    message.set_content(body, charset="utf-8", cte="7bit" if ascii_lines else "quoted-printable")
    return message, warnings


def attach_calendar(message: EmailMessage, calendar: str, method: str) -> None:
    """Add ``calendar`` to the draft as its ``text/calendar; method=...`` alternative (iMIP, RFC 6047 2.4):
    7bit when it is ASCII (its lines are folded), else base64."""
    message.add_alternative(
        calendar,
        subtype="calendar",
        charset="utf-8",
        cte="7bit" if calendar.isascii() else "base64",
        params={"method": method},
    )


def text_of(message: EmailMessage) -> str:
    """The draft's text part as it reads."""
    body = message.get_body(("plain",))
    return str(body.get_content()) if body is not None else ""
