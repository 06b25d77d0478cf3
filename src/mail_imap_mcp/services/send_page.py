"""A message to send on the approval page: the renderer (:class:`MessageRenderer`) that shows a draft as
it will go out, already decoded to display text, in the page's generic frame (``approval/page.py``).

Headers one per line, each address with the name its domain is looked up by, the text with its lines,
each HTML part sanitised (no script, style, form, frame or remote resource:
:func:`mail_imap_mcp.content.html.sanitize_html`) with its whole source beside it, each attachment's name,
type and size, the message a forward forwards and an invitation's answer in words. A message beyond the bounds below cannot be shown whole, so it cannot be approved on the
page: building it fails (pydantic's ValidationError) and the send is refused.
"""

from __future__ import annotations

import email.policy
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.approval.page import address, shown
from mail_imap_mcp.approval.request import DIGEST_PATTERN, PageWords
from mail_imap_mcp.approval.review import Review
from mail_imap_mcp.content.html import sanitize_html
from mail_imap_mcp.mime.message_file import MessageFile
from mail_imap_mcp.services.send_parts import AttachmentShown, displayed
from mail_imap_mcp.services.send_review import FORWARDS

__all__ = [
    "MAX_ATTACHMENTS",
    "MAX_HTML_CHARS",
    "MAX_RECIPIENTS",
    "MAX_TEXT_CHARS",
    "MessagePage",
    "MessageRenderer",
    "message_page",
]

MAX_TEXT_CHARS = 1_000_000
MAX_HTML_CHARS = 2_000_000
MAX_RECIPIENTS = 10_000
MAX_ATTACHMENTS = 1_000
_ADDRESS_CHARS = 2_000
#: What separates two parts of one kind (two text parts) where the page shows them in one box.
_NEXT_PART = "\n\n──── next part ────\n\n"

SEND_WORDS = PageWords(
    heading="Send this message?",
    note="Your assistant asks mail-imap-mcp to send the message below. It is sent only if you press "
    "<b>Send</b>, and only as shown here.",
    approve="Send",
    decline="Don't send",
    declined="Not sent",
    nothing_done="Nothing was sent.",
    nothing_happens="nothing is sent",
    approved="mail-imap-mcp sends the message now; your assistant tells you the outcome. You can close "
    "this tab.",
    ask_again="Ask your assistant again if you want to send the message.",
    waiting="Waiting for the user to approve the message in their browser",
)


def _size(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit} ({size:,} bytes)"
    return f"{size:,} bytes"


def _addresses(label: str, key: str, values: list[str]) -> str:
    if not values:
        return ""
    items = "".join(f"<li>{address(value)}</li>" for value in values)
    return f'<tr><th>{label}</th><td><ul id="{key}" class="plain">{items}</ul></td></tr>'


class MessagePage(BaseModel):
    """A message shown for approval, exactly as it will be sent, and the digest that binds the approval
    (a :class:`~mail_imap_mcp.approval.request.PageRequest`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    digest: str = Field(
        pattern=DIGEST_PATTERN,
        description="What the approval is bound to: the caller's digest of what is shown and of the call's "
        "arguments; an approval carries it back and binds to nothing else.",
    )
    from_: str = Field(
        alias="from", max_length=_ADDRESS_CHARS, description="The From header as it will go out."
    )
    to: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    cc: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    bcc: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    reply_to: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    subject: str = Field(default="", max_length=10_000)
    text: str | None = Field(default=None, max_length=MAX_TEXT_CHARS, description="The text/plain body.")
    html: str | None = Field(
        default=None,
        max_length=MAX_HTML_CHARS,
        description="The text/html body; the page shows it sanitised (no script, style or remote resource).",
    )
    attachments: list[AttachmentShown] = Field(default=[], max_length=MAX_ATTACHMENTS)
    forwards: str | None = Field(
        default=None, max_length=10_000, description="The message it forwards, as found in the account."
    )
    invitation_replies: list[str] = Field(
        default=[], max_length=MAX_ATTACHMENTS, description="Each invitation answer it carries, in words."
    )

    @property
    def words(self) -> PageWords:
        return SEND_WORDS

    def body_html(self) -> str:
        """The message as it will go out: its headers, its text, its HTML and its attachments."""
        headers = (
            f"<tr><th>From</th><td>{address(self.from_, 'from')}</td></tr>"
            + _addresses("To", "to", self.to)
            + _addresses("Cc", "cc", self.cc)
            + _addresses("Bcc", "bcc", self.bcc)
            + _addresses("Reply-To", "reply-to", self.reply_to)
            + f'<tr><th>Subject</th><td><bdi id="subject">{shown(self.subject)}</bdi></td></tr>'
            + (
                f'<tr><th>Forwards</th><td><bdi id="forwards">{shown(self.forwards)}</bdi></td></tr>'
                if self.forwards
                else ""
            )
            + "".join(
                f'<tr><th>Invitation reply</th><td><bdi class="invitation-reply">{shown(words)}</bdi></td></tr>'
                for words in self.invitation_replies
            )
        )
        parts = [f"<table>{headers}</table>"]
        if self.text is not None:
            parts.append(
                f'<h2>Text</h2><div class="body"><pre id="text">{shown(self.text, keep_lines=True)}</pre></div>'
            )
        if self.html is not None:
            parts.append(
                "<h2>HTML</h2>"
                '<p class="note">As a mail program shows it, without scripts and without loading remote images. '
                "What a reader does not see (hidden text, comments, attributes, link addresses) is not shown "
                "here but is sent: the source below is all of it.</p>"
                f'<div class="body" id="html">{sanitize_html(self.html)}</div>'
                f"<details><summary>The HTML as it is sent: its source ({len(self.html):,} characters)</summary>"
                f'<div class="body"><pre id="html-source">{shown(self.html, keep_lines=True)}</pre></div></details>'
            )
        if self.attachments:
            items = "".join(
                f'<li><bdi class="name">{shown(item.name)}</bdi> <span class="size">{_size(item.size)}</span>'
                + (f' <span class="type">· {shown(item.content_type)}</span>' if item.content_type else "")
                + (f' <span class="source">· {shown(item.source)}</span>' if item.source else "")
                + "</li>"
                for item in self.attachments
            )
            parts.append(f'<h2>Attachments ({len(self.attachments)})</h2><ul id="attachments">{items}</ul>')
        else:
            parts.append('<h2>Attachments</h2><p id="attachments">None.</p>')
        return "".join(parts)


def _header_addresses(message: EmailMessage, name: str) -> list[str]:
    header = message.get(name)
    return [str(item) for item in getattr(header, "addresses", ())] if header is not None else []


def message_page(digest: str, message: MessageFile | bytes, forwards: str | None = None) -> MessagePage:
    """The page of the draft ``message`` (parsed by the same rules the send checked it with), bound to
    ``digest``: every part a recipient's client may display (``send_review``), parts of one kind in one
    box, told apart by a line, the message it ``forwards`` (as the review found it) and each invitation
    answer in words. Raises ``ValueError`` when it cannot be shown whole."""
    draft = message if isinstance(message, MessageFile) else MessageFile.of(message)
    parsed = BytesParser(policy=email.policy.default).parsebytes(draft.read_at(0, draft.header_end()[1]))
    assert isinstance(parsed, EmailMessage)
    found = displayed(draft)
    texts = [text for _, text in found.texts]
    htmls = [source for _, source in found.htmls]
    return MessagePage(
        digest=digest,
        from_=", ".join(_header_addresses(parsed, "From")),
        to=_header_addresses(parsed, "To"),
        cc=_header_addresses(parsed, "Cc"),
        bcc=_header_addresses(parsed, "Bcc"),
        reply_to=_header_addresses(parsed, "Reply-To"),
        subject=str(parsed.get("Subject") or ""),
        text=_NEXT_PART.join(texts) if texts else None,
        html="<hr>".join(htmls) if htmls else None,
        attachments=found.attachments,
        forwards=forwards,
        invitation_replies=found.invitation_replies,
    )


@dataclass(frozen=True)
class MessageRenderer:
    """The page's :data:`~mail_imap_mcp.approval.request.Renderer` of the draft ``message``: the message as
    it will go out (the review's text is what elicitation would show; the page shows the same parts in
    their own form)."""

    message: MessageFile | bytes

    def __call__(self, review: Review, digest: str) -> MessagePage:
        forwards = next((field.values[0] for field in review.fields if field.label == FORWARDS), None)
        return message_page(digest, self.message, forwards)
