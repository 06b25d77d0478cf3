"""A draft as the user approves it: every part a recipient's mail client may display, rendered into the
generic :class:`~mail_imap_mcp.approval.review.Review` (the question a client shows); the approval page
(its renderer, ``services/send_page.py``) shows the same parts, read by :func:`displayed`.

Shown whole: each text part with its lines, each HTML part as a reader sees it (rendered to text), each
attachment's name, type, size and where it comes from (as the draft records it: ``mime/building.py``), each recipient on a line of its own (Bcc too). The route is a fixed rule
(:func:`page_only`): the client's question only when the text is at most
:data:`~mail_imap_mcp.approval.review.QUESTION_MAX_CHARS` characters and no HTML part says more than the
text (every word of its rendered text is in the text); otherwise the page, or a refusal where none opens.
A part whose text cannot be read cannot be shown, so the draft is refused rather than sent unseen.
"""

from __future__ import annotations

import re
from collections import Counter

from mail_imap_mcp.approval.review import QUESTION_MAX_CHARS, Review, ReviewContent, ReviewField, ReviewWords
from mail_imap_mcp.content.html import html_to_text
from mail_imap_mcp.mime.message_file import MessageFile
from mail_imap_mcp.services.send_parts import displayed
from mail_imap_mcp.smtp.outgoing import Outgoing

_WORD = re.compile(r"\w+")
#: What the agent is told of a send the user did not approve.
SEND_WORDS = ReviewWords(
    asking="The user is asked to approve sending this message.",
    declined="The user did not approve sending ({decision}); nothing was sent.",
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


def page_only(texts: list[str], rendered_htmls: list[str]) -> str | None:
    """Why the message cannot be approved in the client's question (see the module); None when it can."""
    total = sum(len(text) for text in texts)
    if total > QUESTION_MAX_CHARS:
        return f"its text has {total:,} characters, more than a question shows ({QUESTION_MAX_CHARS:,})"
    said = _words("\n".join(texts))
    for rendered in rendered_htmls:
        if _words(rendered) - said:
            return "its HTML part says more than its text part"
    return None


def _size(size: int) -> str:
    return f"{size:,} bytes"


def shown_attachment(name: str, content_type: str, size: int, source: str) -> str:
    """One attachment on a line: its name, type, size and, where recorded, where it comes from."""
    return f"{name} ({content_type}, {_size(size)})" + (f", {source}" if source else "")


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
    ]
    contents = [ReviewContent(label=f"Text{where}", text=text) for where, text in found.texts]
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
        page_only=page_only([text for _, text in found.texts], [text for _, text in rendered]),
        words=SEND_WORDS,
    )
