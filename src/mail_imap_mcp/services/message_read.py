"""One message read by id: its body rendered in the format asked for (plain text, Markdown or sanitised
HTML) and cut to its limit, with what says who sent it, as a record (:class:`MessageRead`);
``presentation/message.py`` puts it into the full message shape."""

from __future__ import annotations

import html as html_escaping
from dataclasses import dataclass
from typing import Literal

from mail_imap_mcp.content.quotes import new_text
from mail_imap_mcp.content.text import collapse_whitespace, truncate
from mail_imap_mcp.mail.backend import MailReading
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.reading import ReadOptions
from mail_imap_mcp.mail.records import BodyFormat, MessageRecord
from mail_imap_mcp.mime import Part
from mail_imap_mcp.mime.authentication import (
    AuthenticationResults,
    SenderWarning,
    authentication_results,
    sender_warnings,
)

Omitted = Literal["quoted_reply", "signature"]


@dataclass
class MessageRead:
    """One message as read and rendered: what imap_get_message shows and a reply quotes."""

    ref: MessageRef
    record: MessageRecord
    body_format: BodyFormat
    #: The body in ``body_format``, cut to ``body_max_chars``.
    body: str
    #: Which part type the body came from (text/plain, text/html or None).
    body_source: str | None
    #: Cut at ``body_max_chars`` or at the fetch cap.
    body_truncated: bool
    #: What ``new_text_only`` left out.
    body_omitted: list[Omitted]
    #: The start of what the sender wrote (text bodies only).
    snippet: str | None
    #: The sender's authentication results, from a receiving server the account trusts only.
    authentication: AuthenticationResults | None
    #: Facts about the sender worth a second look.
    sender_facts: list[SenderWarning]

    @property
    def headers(self) -> dict[str, str]:
        return self.record.headers

    @property
    def from_(self) -> str | None:
        return self.record.summary.from_

    @property
    def subject(self) -> str | None:
        return self.record.summary.subject

    @property
    def date(self) -> str | None:
        return self.record.summary.date

    @property
    def flags(self) -> list[str]:
        return self.record.summary.flags

    @property
    def attachments(self) -> list[Part]:
        return self.record.attachments

    @property
    def has_attachments(self) -> bool:
        return bool(self.record.attachments)

    @property
    def body_text(self) -> str | None:
        return self.body if self.body_format == "text" else None

    @property
    def body_markdown(self) -> str | None:
        return self.body if self.body_format == "markdown" else None

    @property
    def body_html(self) -> str | None:
        return self.body if self.body_format == "html" else None


def read_checked(mail: MailReading, ref: MessageRef, options: ReadOptions) -> tuple[MessageRead, list[str]]:
    """Read one message by id and render it (body, sender facts): ``conflict`` when its mailbox changed,
    ``not_found`` when it is gone."""
    record, warnings = mail.message(ref, options)
    return rendered(record, ref, options, warnings), warnings


def rendered(
    record: MessageRecord, ref: MessageRef, options: ReadOptions, warnings: list[str]
) -> MessageRead:
    """``record`` with its body rendered as ``options`` ask; what was cut is added to ``warnings``."""
    body, source = render_body(record.text, record.html, options.body_format)
    body = body.replace("\r\n", "\n")
    omitted: list[Omitted] = []
    if options.new_text_only:
        fresh = new_text(body)
        body = fresh.text
        if fresh.dropped_quote:
            omitted.append("quoted_reply")
        if fresh.dropped_signature:
            omitted.append("signature")
    body, cut = truncate(body, options.body_max_chars)
    if cut:
        warnings.append(
            f"Body truncated to {options.body_max_chars} characters; call again with a larger body_max_chars "
            "or read imap_get_message_raw for the source."
        )
    if record.fetch_truncated:
        warnings.append("The text part is larger than the fetch cap; only its beginning was read.")
    snippet, _ = (
        truncate(collapse_whitespace(new_text(body).text), 200)
        if options.body_format == "text"
        else ("", False)
    )
    # Who sent it: authentication results from a trusted server only, and the warnings of the headers
    # that say who sent it.
    found = record.sender_headers
    verdict = authentication_results(found.get("authentication-results", []), options.trusted_servers)
    return MessageRead(
        ref=ref,
        record=record,
        body_format=options.body_format,
        body=body,
        body_source=source,
        body_truncated=cut or record.fetch_truncated,
        body_omitted=omitted,
        snippet=snippet or None,
        authentication=verdict.trusted,
        sender_facts=sender_warnings(found, verdict),
    )


def render_body(text: str | None, html: str | None, body_format: BodyFormat) -> tuple[str, str | None]:
    """The body in ``body_format``, and which part type it came from (text/plain, text/html or None)."""
    # Imported on first use: the HTML renderer is a tenth of the server's own import time at startup.
    from mail_imap_mcp.content import html as html_convert

    if body_format == "html":
        if html is not None:
            return html_convert.sanitize_html(html), "text/html"
        return (html_convert.sanitize_html(_preformatted(text)) if text else ""), (
            "text/plain" if text else None
        )
    if body_format == "markdown" and html is not None:
        return html_convert.html_to_markdown(html), "text/html"
    if text is not None and (text.strip() or html is None):
        return text, "text/plain"
    if html is not None:
        return html_convert.html_to_text(html), "text/html"
    return "", None


def _preformatted(text: str) -> str:
    return "<pre>" + html_escaping.escape(text) + "</pre>"
