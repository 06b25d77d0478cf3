"""The parts of a draft a recipient's mail client may display, as the user approving it is shown them
(``services/send_review.py``, ``services/send_page.py``): each text part's text, each HTML part's source,
each attachment's name, type, decoded size and recorded source (and where each image is), each calendar part's text and each iMIP
reply in words, and the header fields and MIME framing it sends (``services/send_unshown.py``).

The draft is walked from its file (``mime/stream_parts.py``: its parts as the standard library's parser
finds them, without their bodies) and never held whole: an attachment's body is only counted, a piece at
a time; a text part shown is read whole, as it is shown whole. A part whose text cannot be read, or a
draft nested too deep to be read, cannot be shown, so the draft is refused rather than sent unseen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import Message

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.content.invitations import reply_words
from mail_imap_mcp.mime.building import SOURCE_HEADER, recorded_sources
from mail_imap_mcp.mime.message_file import HeaderBlockTooLarge, MessageFile
from mail_imap_mcp.mime.stream_parts import StreamPart, TooDeep, body_size, message_tree, part_message
from mail_imap_mcp.services.send_unshown import Unshown, unshown
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable


class AttachmentShown(BaseModel):
    """One attachment as the user is shown it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(max_length=1_000, description="The file name the recipient sees.")
    size: int = Field(ge=0, description="Its decoded size in bytes.")
    content_type: str = Field(default="", max_length=255, description="Its media type, e.g. application/pdf.")
    source: str = Field(
        default="",
        max_length=1_000,
        description='Where it comes from, as the draft records it ("the file Documents/report.pdf"); '
        "empty where it records none.",
    )


@dataclass(frozen=True)
class ImagePart:
    """An ``image/*`` part, which a recipient's program may draw: its place among the attachments, whether it
    is inline (not marked as an attachment: a program draws it in the message, by a ``cid:`` reference of
    the HTML or below the text), its Content-ID (without ``<>``; empty where it has none) and the part,
    whose body is read only to be shown (``services/send_page.py``)."""

    attachment: int
    inline: bool
    content_id: str
    part: StreamPart


@dataclass
class Displayed:
    """The parts of a message a recipient's client may display, in the message's order."""

    #: (where it is, its text) of each text part: text/plain and any other inline text/*.
    texts: list[tuple[str, str]] = field(default_factory=list)
    #: (where it is, its source) of each HTML part.
    htmls: list[tuple[str, str]] = field(default_factory=list)
    attachments: list[AttachmentShown] = field(default_factory=list)
    #: What each iMIP REPLY among its calendar parts answers, in words.
    invitation_replies: list[str] = field(default_factory=list)
    #: (where it is, its text) of each text/calendar part: the invitation answers as a calendar reads them.
    calendars: list[tuple[str, str]] = field(default_factory=list)
    #: Each image among its attachments.
    images: list[ImagePart] = field(default_factory=list)
    #: Its header fields and MIME framing.
    unshown: Unshown = field(default_factory=Unshown)


def _text_of(part: Message) -> str:
    try:
        content = part.get_content()  # type: ignore[attr-defined]
    except (LookupError, ValueError, AttributeError, TypeError, UnicodeError):
        content = None
    if not isinstance(content, str):
        charset = part.get_content_charset() or "us-ascii"
        raise DraftRefused(
            DraftUnsendable.MALFORMED,
            f"its {part.get_content_type()} part (charset {charset!r}) cannot be read, so it cannot be shown "
            "to the user",
        )
    return content


@dataclass
class _Walk:
    draft: MessageFile
    found: Displayed
    sources: dict[str, str]

    def part(self, part: StreamPart, where: str, section: str = "", top: bool = True) -> None:
        kind = part.get_content_type()
        if part.is_multipart() and kind != "message/rfc822":
            for number, child in enumerate(_children(part), start=1):
                self.part(child, where, f"{section}.{number}" if section else str(number), top)
            return
        if part.get_content_disposition() == "attachment" or not kind.startswith("text/"):
            found = self.found
            source = self.sources.get(section or "1", "") if top else ""
            size = body_size(self.draft, part)
            name = part.get_filename() or "(unnamed)"
            found.attachments.append(AttachmentShown(name=name, size=size, content_type=kind, source=source))
            if kind.startswith("image/"):
                content_id = str(part.get("Content-ID") or "").strip().removeprefix("<").removesuffix(">")
                inline = part.get_content_disposition() != "attachment"
                found.images.append(ImagePart(len(found.attachments) - 1, inline, content_id, part))
            if kind == "message/rfc822":  # a client may show a forwarded message inline
                for inner in _children(part):
                    self.part(inner, f"{where} in attachment {len(found.attachments)}", "", False)
            return
        text = _text_of(part_message(self.draft, part))
        if kind == "text/calendar":
            self.found.invitation_replies += reply_words(text)
            self.found.calendars.append((where, text))
        elif kind == "text/html":
            self.found.htmls.append((where, text))
        else:
            self.found.texts.append((where if kind == "text/plain" else f"{where} ({kind})", text))


def _children(part: StreamPart) -> list[StreamPart]:
    payload = part.get_payload()
    return [child for child in payload if isinstance(child, StreamPart)] if isinstance(payload, list) else []


def displayed(draft: MessageFile | bytes) -> Displayed:
    """Every part of ``draft`` a recipient's client may display (see the module)."""
    source = draft if isinstance(draft, MessageFile) else MessageFile.of(draft)
    try:
        tree = message_tree(source)
    except (HeaderBlockTooLarge, TooDeep) as exc:
        raise DraftRefused(DraftUnsendable.MALFORMED, f"{exc}, so it cannot be shown") from None
    walk = _Walk(
        source,
        Displayed(unshown=unshown(tree)),
        recorded_sources(map(str, tree.get_all(SOURCE_HEADER) or [])),
    )
    walk.part(tree, "")
    return walk.found
