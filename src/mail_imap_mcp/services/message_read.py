"""One message read by id and shaped for the model: its body rendered in the format asked for (plain text,
Markdown or sanitised HTML), cut to its limit, inside the full message shape."""

from __future__ import annotations

import html as html_escaping

from mail_imap_mcp.content.quotes import new_text
from mail_imap_mcp.content.text import collapse_whitespace, truncate
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.ids import MessageRef
from mail_imap_mcp.imap.read import ReadOptions, read_message
from mail_imap_mcp.imap.records import BodyFormat, MessageRecord
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mime.authentication import TrustedServers, authentication_results, sender_warnings
from mail_imap_mcp.presentation.shapes import (
    SUMMARY_FIELDS,
    Authentication,
    MessageDetail,
    Omitted,
    SenderWarning,
    attachment_info,
)
from mail_imap_mcp.services.message_lookup import examine_for

_BODY_FIELDS: dict[BodyFormat, str] = {"text": "body_text", "markdown": "body_markdown", "html": "body_html"}


def read_checked(
    connection: AccountConnection, ref: MessageRef, options: ReadOptions
) -> tuple[MessageDetail, list[str]]:
    """Read one message by id: ``conflict`` when its mailbox changed, ``not_found`` when it is gone."""

    def work(session: ImapSession) -> tuple[MessageDetail, list[str]]:
        examine_for(session, ref)
        return read_detail(session, ref, options)  # MessageGone: the registry says it, naming ref

    return connection.run(work)


def read_detail(
    session: ImapSession, ref: MessageRef, options: ReadOptions
) -> tuple[MessageDetail, list[str]]:
    """Read one message (``MessageGone`` when it is not there) and shape it: body, headers, attachments."""
    record, warnings = read_message(session, ref, options)
    return message_detail(record, ref, options, warnings), warnings


def message_detail(
    record: MessageRecord, ref: MessageRef, options: ReadOptions, warnings: list[str]
) -> MessageDetail:
    """The full message shape of ``record``; what was cut is added to ``warnings``."""
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
    attachments = [attachment_info(ref, part) for part in record.attachments]
    summary = {name: getattr(record.summary, name) for name in SUMMARY_FIELDS}
    detail = MessageDetail(
        **{**summary, "snippet": snippet or None, "has_attachments": bool(attachments)},
        headers=record.headers,
        body_format=options.body_format,
        body_truncated=cut or record.fetch_truncated,
        body_source=source,
        body_omitted=omitted or None,
        attachments=attachments,
    )
    _add_sender_facts(detail, record, options.trusted_servers)
    setattr(detail, _BODY_FIELDS[options.body_format], body)
    return detail


def _add_sender_facts(detail: MessageDetail, record: MessageRecord, trusted: TrustedServers) -> None:
    """The sender's authentication results (from a trusted server only) and warnings, from the headers
    that say who sent it."""
    found = record.sender_headers
    verdict = authentication_results(found.get("authentication-results", []), trusted)
    results = verdict.trusted
    if results is not None:
        detail.authentication = Authentication(
            authserv_id=results.authserv_id, spf=results.spf, dkim=results.dkim, dmarc=results.dmarc
        )
    facts = sender_warnings(found, verdict)
    detail.sender_warnings = [SenderWarning(code=f.code, message=f.message) for f in facts] or None


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
