"""A draft as the user approves it: every part a recipient's mail client may display, rendered into the
generic :class:`~mail_imap_mcp.asking.review.Review` (the question a client shows); the approval page
(its renderer, ``services/send_page.py``) shows the same parts, read by :func:`displayed`.

Shown whole: each text part with its lines, each HTML part as a reader sees it (rendered to text), each
attachment's name, type, size and where it comes from (as the draft records it: ``mime/building.py``), each recipient on a line of its own (Bcc too), and Sender, In-Reply-To and References where it has them.
The route is a fixed rule (:func:`page_only`): the client's question only when it can hold everything
that leaves as a recipient's program may show it: the text at most
:data:`~mail_imap_mcp.asking.review.QUESTION_MAX_CHARS` characters, each HTML part plain (no style,
script, image, comment, title or hidden element: ``content/html_plain.py``) and saying nothing the text
does not (every word of its rendered text is in the text), no header field beyond those shown and the
message's frame, no MIME preamble or epilogue (``services/send_unshown.py``), no inline image (not marked
as an attachment: a recipient's program draws it in the message, and a question cannot); otherwise the page, which
renders the HTML and lists all of it, or a refusal where none opens. A part whose text cannot be read
cannot be shown, so the draft is refused rather than sent unseen.

The question shows text in the order it is written, so the route also asks that all of it be drawn in that
order (:func:`drawn_otherwise`): no table part out of its drawing order, no character that reorders text
in anything the question shows.
"""

from __future__ import annotations

import re
from collections import Counter
from html import unescape

from mail_imap_mcp.asking.review import QUESTION_MAX_CHARS, Review, ReviewContent, ReviewField, ReviewWords
from mail_imap_mcp.content.drawn_order import reordering_character, table_out_of_order
from mail_imap_mcp.content.html import html_to_text
from mail_imap_mcp.content.html_plain import not_plain
from mail_imap_mcp.mime.message_file import MessageFile
from mail_imap_mcp.services.send_parts import Displayed, displayed
from mail_imap_mcp.services.send_unshown import QUESTION_HEADERS, Unshown
from mail_imap_mcp.smtp.outgoing import Outgoing

_WORD = re.compile(r"\w+")
#: What the agent is told of a send the user did not approve.
SEND_WORDS = ReviewWords(
    asking="The user is asked to approve sending this message.",
    declined="The user did not approve sending ({decision}); nothing was sent.",
    declined_as="dont_send",  # a send's decline keeps the word its clients read
    cancelled="The send was cancelled (imap_cancel_operation) before the user decided; the approval page "
    "was closed and nothing was sent.",
    opened_twice="The approval page was opened a second time (a reload, a restored tab, or someone else "
    "with its address), which cancels it: the user did not decline, and nothing was sent. Send the draft "
    "again to show the user a new page.",
    unavailable="Sending needs the user's approval of this very message, and this client cannot ask the user "
    "(it does not support MCP elicitation) and no approval page could be shown: nothing was sent. The user "
    "can send the draft from their mail client, or use a client that supports elicitation.",
    page_only_unavailable="Sending needs the user's approval of this very message, shown whole: {reason}, so "
    "only the approval page can show it, and no approval page could be shown (it opens only for a stdio "
    "server, in the browser of the user's desktop): nothing was sent. The user can send the draft from "
    "their mail client.",
)


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.casefold()))


def page_only(found: Displayed, rendered_htmls: list[str]) -> str | None:
    """Why the message ``found`` (its HTML parts rendered to text: ``rendered_htmls``) cannot be approved
    in the client's question (see the module); None when it can."""
    texts = [text for _, text in found.texts + found.calendars]
    total = sum(len(text) for text in texts)
    if total > QUESTION_MAX_CHARS:
        return f"its text has {total:,} characters, more than a question shows ({QUESTION_MAX_CHARS:,})"
    for where, source in found.htmls:
        what = not_plain(source)
        if what is not None:
            return (
                f"its HTML part{where} holds {what}, which a mail program may show (or send unseen) and "
                "the question's text does not"
            )
    inline = [image for image in found.images if image.inline]
    if inline:
        image = found.attachments[inline[0].attachment]
        return (
            f"it holds an inline image ({image.name}, {image.content_type}), which a mail program shows in "
            "the message and the question cannot"
        )
    said = _words("\n".join(texts))
    for rendered in rendered_htmls:
        if _words(rendered) - said:
            return "its HTML part says more than its text part"
    if found.unshown.unknown:
        return f"it has a header field the question does not show ({found.unshown.unknown[0][0]})"
    if found.unshown.framing:
        return (
            f"it has text outside its parts ({found.unshown.framing[0][0]}), which the question does not show"
        )
    return None


def drawn_otherwise(
    htmls: list[tuple[str, str]], fields: list[ReviewField], contents: list[ReviewContent]
) -> str | None:
    """Why a question that shows the text as it is written would show it in another order than a mail
    program draws it (``content/drawn_order.py``): a table part of an HTML part of ``htmls`` (where it is,
    its source) out of its drawing order, or a character that reorders text anywhere the question shows
    text (each value of ``fields``, each text of ``contents``, each HTML part's source with its character
    references decoded); None when all is drawn as written."""
    for where, source in htmls:
        what = table_out_of_order(source)
        if what is not None:
            return f"its HTML part{where} holds {what}, so the question would show its text in another order"
    shown = [(field.label, value) for field in fields for value in field.values]
    shown += [(content.label, content.text) for content in contents]
    # The source too: a rendering may leave out a mark (U+061C) that a browser draws by.
    shown += [(f"HTML part{where}", unescape(source)) for where, source in htmls]
    for label, text in shown:
        char = reordering_character(text)
        if char is not None:
            return (
                f"its text holds characters that reorder it as it is drawn ({char} in {label}), so a mail "
                "program shows it in another order than it is written"
            )
    return None


def _size(size: int) -> str:
    return f"{size:,} bytes"


def shown_attachment(name: str, content_type: str, size: int, source: str) -> str:
    """One attachment on a line: its name, type, size and, where recorded, where it comes from."""
    return f"{name} ({content_type}, {_size(size)})" + (f", {source}" if source else "")


def _shown_headers(found: Unshown, names: tuple[str, ...]) -> list[ReviewField]:
    """A field for each header of ``names`` the draft has (its values as a recipient's program shows them)."""
    return [ReviewField(label=name, values=found.shown[name]) for name in names if name in found.shown]


#: The review's line naming the message a draft forwards (the page shows it too).
FORWARDS = "Forwards"


def _forwards(message: Outgoing, shown: str | None) -> str:
    if shown is not None:
        return f"the message {shown}"
    return f"the message {message.forwarded} (not found in the account: it will not be marked $Forwarded)"


def review(
    message: Outgoing, raw: MessageFile | bytes, account_id: str, forwarded: str | None = None
) -> Review:
    """The question the user approves ``message`` (the draft ``raw``) by; see the module. ``forwarded``:
    the message it forwards, as found in the account (its subject and sender)."""
    found = displayed(raw)
    rendered = [(where, html_to_text(source)) for where, source in found.htmls]
    attachments = [
        shown_attachment(item.name, item.content_type, item.size, item.source) for item in found.attachments
    ]
    fields = [
        ReviewField(label="From", values=[message.from_shown]),
        *_shown_headers(found.unshown, QUESTION_HEADERS[:1]),
        *([ReviewField(label="Reply-To", values=list(message.reply_to))] if message.reply_to else []),
        ReviewField(label="To", values=list(message.to)),
        ReviewField(label="Cc", values=list(message.cc)),
        ReviewField(label="Bcc", values=list(message.bcc)),
        ReviewField(label="Subject", values=[message.subject], empty="(no subject)"),
        ReviewField(label="Attachments", values=attachments, empty="none"),
        *(
            [ReviewField(label="Forwards", values=[_forwards(message, forwarded)])]
            if message.forwarded
            else []
        ),
        *(
            [ReviewField(label="Invitation reply", values=found.invitation_replies)]
            if found.invitation_replies
            else []
        ),
        ReviewField(
            label="Message-ID",
            values=[message.header_id + (" (added to the draft)" if message.id_added else "")],
        ),
        *_shown_headers(found.unshown, QUESTION_HEADERS[1:]),
    ]
    contents = [ReviewContent(label=f"Text{where}", text=text) for where, text in found.texts]
    contents += [
        ReviewContent(label=f"Text{where} (text/calendar)", text=text) for where, text in found.calendars
    ]
    contents += [
        ReviewContent(label=f"HTML part{where} as a mail program shows it", text=text)
        for where, text in rendered
    ]
    if not contents:
        contents = [ReviewContent(label="Text", text="")]
    return Review(
        title=f"send this message from account {account_id!r}:",
        fields=fields,
        contents=contents,
        closing=f"Send it (fingerprint {message.fingerprint[:16]})",
        page_only=page_only(found, [text for _, text in rendered])
        or drawn_otherwise(found.htmls, fields, contents),
        words=SEND_WORDS,
    )
