"""A message to send on the approval page: the renderer (:class:`MessageRenderer`) that shows a draft as
it will go out, already decoded to display text, in the page's generic frame (``asking/page_server/page.py``).

Headers one per line, each address with the name its domain is looked up by, the text with its lines,
each HTML part rendered as a recipient's program renders it, styles and images included (embedded
``data:`` ones, and ``cid:`` ones resolved to their part), but safely: in a sandboxed frame of its own
whose document is the part as sent, nothing added (``content/html_view.py``: only what would fetch made
inert), served under the view's policy (``asking/page_server/page.py`` ``VIEW_POLICY``: no script runs,
nothing loads from anywhere, no form posts, nothing opens), each attachment's name, type and size (an
image shown), the message a forward forwards and an invitation's answer in words. Then its source: every header field as it is sent,
any MIME preamble or epilogue, each address its HTML would load from (listed, never fetched) and the HTML
source whole (scripts as text). A message beyond the bounds below cannot be shown whole, so it cannot be
approved on the page: building it fails (pydantic's ValidationError) and the send is refused.
"""

from __future__ import annotations

import base64
import email.policy
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser
from html import escape

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.asking.page_server.page import address, shown, view_frame
from mail_imap_mcp.asking.page_server.request import DIGEST_PATTERN, PageWords
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.content.forwards import FORWARDED_HEADER
from mail_imap_mcp.content.html_plain import resources
from mail_imap_mcp.content.html_view import shown_copy
from mail_imap_mcp.mime.building import SOURCE_HEADER
from mail_imap_mcp.mime.message_file import MessageFile
from mail_imap_mcp.mime.stream_parts import part_message
from mail_imap_mcp.services.send_parts import AttachmentShown, Displayed, displayed
from mail_imap_mcp.services.send_review import FORWARDS

__all__ = [
    "MAX_ATTACHMENTS",
    "MAX_HTML_CHARS",
    "MAX_PICTURE_BYTES",
    "MAX_RECIPIENTS",
    "MAX_TEXT_CHARS",
    "MAX_VIEW_CHARS",
    "MessagePage",
    "MessageRenderer",
    "message_page",
]

MAX_TEXT_CHARS = 1_000_000
MAX_HTML_CHARS = 2_000_000
MAX_RECIPIENTS = 10_000
MAX_ATTACHMENTS = 1_000
#: The images' bytes the page shows at most, together (each as a ``data:`` address): a message whose
#: inline images hold more cannot be shown whole.
MAX_PICTURE_BYTES = 25 << 20
#: The characters of the HTML parts' views together, their images drawn (a ``cid:`` reference is its
#: image's whole ``data:`` address): room for each image up to four times over its sources.
MAX_VIEW_CHARS = MAX_HTML_CHARS + 4 * (MAX_PICTURE_BYTES * 4 // 3)
_ADDRESS_CHARS = 2_000
#: Header fields the draft keeps for itself (``smtp/outgoing.py`` leaves them out of what is sent).
_NOT_SENT = frozenset({"bcc", SOURCE_HEADER.lower(), FORWARDED_HEADER.lower()})
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
    (a :class:`~mail_imap_mcp.asking.page_server.request.PageRequest`)."""

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
        default=None, max_length=MAX_HTML_CHARS, description="The source of its HTML parts, as sent."
    )
    views: list[str] = Field(
        default=[],
        max_length=MAX_ATTACHMENTS,
        description="Each HTML part as the page's frame shows it (``content/html_view.py``).",
    )
    attachments: list[AttachmentShown] = Field(default=[], max_length=MAX_ATTACHMENTS)
    pictures: dict[int, str] = Field(
        default={}, description="The ``data:`` address of each image among the attachments, by its place."
    )
    forwards: str | None = Field(
        default=None, max_length=10_000, description="The message it forwards, as found in the account."
    )
    invitation_replies: list[str] = Field(
        default=[], max_length=MAX_ATTACHMENTS, description="Each invitation answer it carries, in words."
    )
    calendar: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="Its text/calendar parts (an invitation answer as the organizer's calendar reads it).",
    )
    why: str | None = Field(
        default=None, max_length=10_000, description="Why only this page may ask (the review's page_only)."
    )
    headers: list[tuple[str, str]] = Field(
        default=[], max_length=MAX_RECIPIENTS, description="(name, value) of each header field it sends."
    )
    framing: list[tuple[str, str]] = Field(
        default=[], max_length=MAX_ATTACHMENTS, description="(what, text) of each MIME preamble or epilogue."
    )

    @property
    def words(self) -> PageWords:
        return SEND_WORDS

    def view(self, number: int) -> str | None:
        """HTML part ``number`` (from 1) as the page's frame shows it."""
        return self.views[number - 1] if 0 < number <= len(self.views) else None

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
        parts = [
            f'<p class="note" id="page-only">Shown here, not in your assistant\'s question, because '
            f"{shown(self.why)}.</p>"
            if self.why
            else "",
            f"<table>{headers}</table>",
        ]
        if self.text is not None:
            parts.append(
                f'<h2>Text</h2><div class="body"><pre id="text">{shown(self.text, keep_lines=True)}</pre></div>'
            )
        if self.views:
            parts.append(
                "<h2>HTML</h2>"
                '<p class="note">As a mail program shows it, with its styles and embedded images; here no '
                "script runs and nothing is loaded from the network (what it would load is listed under "
                "Source). What a reader does not see (hidden text, comments, its title, link addresses) is "
                "sent too: the source below is all of it.</p>"
                + "".join(
                    view_frame(number, "The HTML as a mail program shows it", "html" if number == 1 else "")
                    for number in range(1, len(self.views) + 1)
                )
            )
        if self.attachments:
            items = "".join(
                f'<li><bdi class="name">{shown(item.name)}</bdi> <span class="size">{_size(item.size)}</span>'
                + (f' <span class="type">· {shown(item.content_type)}</span>' if item.content_type else "")
                + (f' <span class="source">· {shown(item.source)}</span>' if item.source else "")
                + (
                    f'<br><img class="picture" alt="" src="{escape(self.pictures[number], quote=True)}">'
                    if number in self.pictures
                    else ""
                )
                + "</li>"
                for number, item in enumerate(self.attachments)
            )
            parts.append(f'<h2>Attachments ({len(self.attachments)})</h2><ul id="attachments">{items}</ul>')
        else:
            parts.append('<h2>Attachments</h2><p id="attachments">None.</p>')
        return "".join(parts) + self._source_html()

    def _source_html(self) -> str:
        """Everything it sends beyond what the sections above show: its header fields, any MIME preamble
        or epilogue, the addresses its HTML would load from, and the HTML source."""
        lines = "\n".join(f"{name}: {value}" for name, value in self.headers)
        parts = [
            "<h2>Source</h2><p>Every header field as it is sent (Date is set when it is sent):</p>"
            f'<div class="body"><pre id="headers">{shown(lines, keep_lines=True)}</pre></div>'
        ]
        if self.calendar is not None:
            parts.append(
                "<p>The invitation reply as the organizer's calendar program reads it (text/calendar; the "
                "Invitation reply line above says it in words):</p>"
                f'<div class="body"><pre id="calendar">{shown(self.calendar, keep_lines=True)}</pre></div>'
            )
        parts += [
            f'<p>{shown(what[:1].upper() + what[1:])}, which mail programs do not show:</p><div class="body">'
            f'<pre class="framing">{shown(text, keep_lines=True)}</pre></div>'
            for what, text in self.framing
        ]
        loads = resources(self.html) if self.html is not None else []
        if loads:
            items = "".join(f"<li><bdi>{shown(url)}</bdi></li>" for url in loads)
            parts.append(
                "<p>Addresses its HTML would load from (a recipient's program may; nothing is loaded here):"
                f'</p><ul id="resources">{items}</ul>'
            )
        if self.html is not None:
            parts.append(
                f"<details><summary>The HTML as it is sent: its source ({len(self.html):,} characters, "
                "scripts included, never run here)</summary>"
                f'<div class="body"><pre id="html-source">{shown(self.html, keep_lines=True)}</pre></div></details>'
            )
        return "".join(parts)


def _header_addresses(message: EmailMessage, name: str) -> list[str]:
    header = message.get(name)
    return [str(item) for item in getattr(header, "addresses", ())] if header is not None else []


def _pictures(draft: MessageFile, found: Displayed) -> dict[int, str]:
    """The ``data:`` address of each image of ``found``, by its place among the attachments: the inline
    ones first, then those marked as attachments while :data:`MAX_PICTURE_BYTES` lasts (one beyond it is
    shown by name, type and size, as any file is)."""
    pictures: dict[int, str] = {}
    total = 0
    for image in sorted(found.images, key=lambda image: not image.inline):
        size = found.attachments[image.attachment].size  # decoded, counted without holding it
        if total + size > MAX_PICTURE_BYTES:
            if image.inline:
                raise ValueError(f"its images hold more than the page shows ({MAX_PICTURE_BYTES >> 20} MB)")
            continue
        total += size
        body = part_message(draft, image.part).get_payload(decode=True)
        encoded = base64.b64encode(body if isinstance(body, bytes) else b"").decode("ascii")
        pictures[image.attachment] = f"data:{image.part.get_content_type()};base64,{encoded}"
    return pictures


def _views(htmls: list[str], images: dict[str, str]) -> list[str]:
    """Each HTML part as the page's frame shows it (``content/html_view.py``), at most
    :data:`MAX_VIEW_CHARS` together (``ValueError`` beyond: the message cannot be shown whole)."""
    views: list[str] = []
    for source in htmls:
        views.append(shown_copy(source, images, MAX_VIEW_CHARS - sum(map(len, views))))
    return views


def message_page(
    digest: str, message: MessageFile | bytes, forwards: str | None = None, why: str | None = None
) -> MessagePage:
    """The page of the draft ``message`` (parsed by the same rules the send checked it with), bound to
    ``digest``: every part a recipient's client may display (``send_review``), parts of one kind in one
    box, told apart by a line, the message it ``forwards`` (as the review found it), each invitation
    answer in words, ``why`` only the page may ask, and its source. Raises ``ValueError`` when it cannot be
    shown whole."""
    draft = message if isinstance(message, MessageFile) else MessageFile.of(message)
    parsed = BytesParser(policy=email.policy.default).parsebytes(draft.read_at(0, draft.header_end()[1]))
    assert isinstance(parsed, EmailMessage)
    found = displayed(draft)
    texts = [text for _, text in found.texts]
    calendars = [text for _, text in found.calendars]
    htmls = [source for _, source in found.htmls]
    pictures = _pictures(draft, found)
    by_id = {
        image.content_id: pictures[image.attachment]
        for image in found.images
        if image.content_id and image.attachment in pictures  # an attached one beyond the bound is named
    }
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
        views=_views(htmls, by_id),
        attachments=found.attachments,
        pictures=pictures,
        forwards=forwards,
        invitation_replies=found.invitation_replies,
        calendar=_NEXT_PART.join(calendars) if calendars else None,
        why=why,
        headers=[
            (name, "(set when it is sent)" if name.lower() == "date" else value)
            for name, value in found.unshown.headers
            if name.lower() not in _NOT_SENT
        ],
        framing=found.unshown.framing,
    )


@dataclass(frozen=True)
class MessageRenderer:
    """The page's :data:`~mail_imap_mcp.asking.page_server.request.Renderer` of the draft ``message``: the message as
    it will go out (the review's text is what elicitation would show; the page shows the same parts in
    their own form)."""

    message: MessageFile | bytes

    def __call__(self, review: Review, digest: str) -> MessagePage:
        forwards = next((field.values[0] for field in review.fields if field.label == FORWARDS), None)
        return message_page(digest, self.message, forwards, review.page_only)
