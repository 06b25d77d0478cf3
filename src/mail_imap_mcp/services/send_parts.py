"""The parts of a draft a recipient's mail client may display, as the user approving it is shown them
(``services/send_review.py``, ``services/send_page.py``): each text part's text, each HTML part's source,
each attachment's name, type, decoded size and recorded source, each iMIP reply in words.

The draft is walked from its file (``mime/stream_parts.py``) and never held whole: an attachment's body is
only counted, a piece at a time; a text part shown is read whole, as it is shown whole. A part whose text
cannot be read cannot be shown, so the draft is refused rather than sent unseen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import Message

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.content.invitations import reply_words
from mail_imap_mcp.mime.building import SOURCE_HEADER, recorded_sources
from mail_imap_mcp.mime.message_file import HeaderBlockTooLarge, MessageFile
from mail_imap_mcp.mime.stream_parts import StreamPart, body_size, child_parts, part_message, read_part
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable

#: The most multiparts and messages within one another walked: a draft nested deeper is refused.
MAX_DEPTH = 40


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

    def part(self, part: StreamPart, where: str, section: str = "", depth: int = 0, top: bool = True) -> None:
        if depth > MAX_DEPTH:
            raise DraftRefused(
                DraftUnsendable.MALFORMED,
                f"its parts are nested more than {MAX_DEPTH} deep, so it cannot be shown",
            )
        headers = part.headers
        kind = headers.get_content_type()
        children = child_parts(self.draft, part) if kind != "message/rfc822" else None
        if children is not None:
            for number, child in enumerate(children, start=1):
                self.part(child, where, f"{section}.{number}" if section else str(number), depth + 1, top)
            return
        if headers.get_content_disposition() == "attachment" or not kind.startswith("text/"):
            found = self.found
            source = self.sources.get(section or "1", "") if top else ""
            found.attachments.append(
                AttachmentShown(
                    name=headers.get_filename() or "(unnamed)",
                    size=body_size(self.draft, part),
                    content_type=kind,
                    source=source,
                )
            )
            if kind == "message/rfc822":  # a client may show a forwarded message inline
                inner = read_part(self.draft, part.body_start, part.end)
                self.part(inner, f"{where} in attachment {len(found.attachments)}", "", depth + 1, False)
            return
        text = _text_of(part_message(self.draft, part))
        if kind == "text/calendar":
            self.found.invitation_replies += reply_words(text)
        if kind == "text/html":
            self.found.htmls.append((where, text))
        else:
            self.found.texts.append((where if kind == "text/plain" else f"{where} ({kind})", text))


def displayed(draft: MessageFile | bytes) -> Displayed:
    """Every part of ``draft`` a recipient's client may display (see the module)."""
    source = draft if isinstance(draft, MessageFile) else MessageFile.of(draft)
    try:
        top = read_part(source, 0, source.size)
        walk = _Walk(
            source, Displayed(), recorded_sources(map(str, top.headers.get_all(SOURCE_HEADER) or []))
        )
        walk.part(top, "")
    except HeaderBlockTooLarge as exc:
        raise DraftRefused(DraftUnsendable.MALFORMED, f"{exc}, so it cannot be shown") from None
    return walk.found
