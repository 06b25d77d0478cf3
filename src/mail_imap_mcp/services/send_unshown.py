"""What a draft sends besides its parts' content: its header fields and the text around its parts (a
MIME preamble or epilogue), for ``services/send_review.py`` to show or route to the approval page.

A header field is *known* when the question shows it (the addresses, Subject, Message-ID, In-Reply-To,
References) or it is the message's frame the server writes or checks itself (Date, MIME-Version,
Content-Type and its kin, the draft's private records ``smtp/outgoing.py`` leaves out); any other (an
``X-Note:``) is data that leaves unseen, so only the page, which lists every header, may ask. Parts of a
forwarded message (an attached ``message/rfc822``) are that message's own, shown as an attachment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.message import Message

from mail_imap_mcp.content.forwards import FORWARDED_HEADER
from mail_imap_mcp.mime.building import SOURCE_HEADER

__all__ = ["QUESTION_HEADERS", "Unshown", "unshown"]

#: The header fields the question shows when the draft has them, beyond the address lines and Subject.
QUESTION_HEADERS = ("Sender", "In-Reply-To", "References")
_PART_FRAME = frozenset(
    {"content-type", "content-transfer-encoding", "content-disposition", "content-id", "mime-version"}
)
_TOP_KNOWN = _PART_FRAME | {
    "from",
    "reply-to",
    "to",
    "cc",
    "bcc",
    "subject",
    "message-id",
    "date",
    *(name.lower() for name in QUESTION_HEADERS),
    SOURCE_HEADER.lower(),
    FORWARDED_HEADER.lower(),
}
_QUESTION_NAMES = {name.lower(): name for name in QUESTION_HEADERS}
_FOLD = re.compile(r"\r?\n(?=[ \t])")


@dataclass
class Unshown:
    """A draft's header fields and MIME framing (see the module)."""

    #: (name, value) of each top-level header field, in order, its value unfolded as it is written.
    headers: list[tuple[str, str]] = field(default_factory=list)
    #: (its name, its value) of each field that is not known, the name prefixed by its part below the
    #: top ("part 2: X-Note").
    unknown: list[tuple[str, str]] = field(default_factory=list)
    #: (what it is, its text) of each preamble or epilogue holding more than blank lines.
    framing: list[tuple[str, str]] = field(default_factory=list)
    #: The values of each of :data:`QUESTION_HEADERS` it has, decoded as a recipient's program shows them
    #: (as written where they do not decode).
    shown: dict[str, list[str]] = field(default_factory=dict)


def _unfolded(value: str) -> str:
    return _FOLD.sub("", value).strip(" \t")


def _decoded(part: Message, name: str, raw: str) -> str:
    try:
        return str(part.policy.header_fetch_parse(name, raw))
    except Exception:  # a hostile value that does not decode is shown as written
        return raw


def _read(part: Message, section: str, found: Unshown) -> None:
    known = _TOP_KNOWN if not section else _PART_FRAME
    where = f"part {section}: " if section else ""
    for name, value in part.raw_items():
        text = _unfolded(str(value))
        if not section:
            found.headers.append((name, text))
            if name.lower() in _QUESTION_NAMES:
                found.shown.setdefault(_QUESTION_NAMES[name.lower()], []).append(_decoded(part, name, text))
        if name.lower() not in known:
            found.unknown.append((f"{where}{name}", text))
    if not part.is_multipart() or part.get_content_type() == "message/rfc822":
        return
    whose = f"part {section}" if section else "the message"
    for kind, framing in (("preamble", part.preamble), ("epilogue", part.epilogue)):
        if framing and framing.strip():
            found.framing.append((f"the MIME {kind} of {whose}", framing))
    payload = part.get_payload()
    children = [child for child in payload if isinstance(child, Message)] if isinstance(payload, list) else []
    for number, child in enumerate(children, start=1):
        _read(child, f"{section}.{number}" if section else str(number), found)


def unshown(message: Message) -> Unshown:
    """The header fields and framing of ``message`` (see the module)."""
    found = Unshown()
    _read(message, "", found)
    return found
