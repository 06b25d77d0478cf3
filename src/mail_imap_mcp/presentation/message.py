"""One message read (``services.message_read.MessageRead``) in the full message shape the model reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.records import BodyFormat, MessageRecord
from mail_imap_mcp.mime.authentication import AuthenticationResults
from mail_imap_mcp.mime.authentication import SenderWarning as SenderFact
from mail_imap_mcp.presentation.result_size import (
    DATA_MAX_CHARS,
    ELLIPSIS,
    RESULT_MAX_CHARS,
    attribute_texts,
    fit,
    mapping_texts,
)
from mail_imap_mcp.presentation.sender_shapes import Authentication, shown_warnings
from mail_imap_mcp.presentation.shapes import (
    SUMMARY_FIELDS,
    MessageDetail,
    Omitted,
    attachment_info,
    summary_values,
)

_BODY_FIELDS: dict[BodyFormat, str] = {"text": "body_text", "markdown": "body_markdown", "html": "body_html"}


class ReadMessage(Protocol):
    """What is read of a message read and rendered (``services.message_read.MessageRead``)."""

    @property
    def ref(self) -> MessageRef: ...
    @property
    def record(self) -> MessageRecord: ...
    @property
    def body_format(self) -> BodyFormat: ...
    @property
    def body(self) -> str: ...
    @property
    def body_source(self) -> str | None: ...
    @property
    def body_truncated(self) -> bool: ...
    @property
    def body_omitted(self) -> list[Omitted]: ...
    @property
    def snippet(self) -> str | None: ...
    @property
    def authentication(self) -> AuthenticationResults | None: ...
    @property
    def sender_facts(self) -> list[SenderFact]: ...


def message_detail(read: ReadMessage) -> MessageDetail:
    """The full message shape of ``read``: summary, headers, body, attachments and what says who sent it."""
    record = read.record
    attachments = [attachment_info(read.ref, part) for part in record.attachments]
    summary = summary_values(record.summary, SUMMARY_FIELDS)
    detail = MessageDetail(
        **{**summary, "snippet": read.snippet, "has_attachments": bool(attachments)},
        headers=record.headers,
        body_format=read.body_format,
        body_truncated=read.body_truncated,
        body_source=read.body_source,
        body_omitted=read.body_omitted or None,
        attachments=attachments,
    )
    results = read.authentication
    if results is not None:
        detail.authentication = Authentication(
            authserv_id=results.authserv_id, spf=results.spf, dkim=results.dkim, dmarc=results.dmarc
        )
    detail.sender_warnings = shown_warnings(read.sender_facts)
    setattr(detail, _BODY_FIELDS[read.body_format], read.body)
    return detail


def fit_message(message: MessageDetail, size: Callable[[], int], warnings: list[str]) -> None:
    """Keep the answer of ``message`` (``size()``: its characters with ``warnings``) within a result's bound:
    the attachments' extracted texts are cut first, then long headers, then the body, each said in
    ``warnings`` with where the rest is read."""
    limit = DATA_MAX_CHARS - 900
    if size() <= limit:
        return
    within = f"to keep this answer within {RESULT_MAX_CHARS:,} characters"
    extracted = [attachment for attachment in message.attachments if attachment.extracted_text]
    before = [len(attachment.extracted_text or "") for attachment in extracted]
    if fit(size, attribute_texts(extracted, ("extracted_text",)), limit):
        for attachment, length in zip(extracted, before, strict=True):
            attachment.extracted_text_truncated |= len(attachment.extracted_text or "") < length
        warnings.append(
            f"Attachment texts were cut {within}; imap_get_attachment reads each on from offset = the "
            "length of its extracted_text."
        )
    if fit(size, mapping_texts(message.headers), limit, mark=ELLIPSIS):
        warnings.append(
            f"Long headers were shortened ({ELLIPSIS}) {within}; imap_get_message_raw reads them whole."
        )
    if fit(size, attribute_texts([message], [_BODY_FIELDS[message.body_format]]), limit):
        message.body_truncated = True
        warnings.append(f"The body was cut {within}; imap_get_message_raw reads the message's source whole.")
