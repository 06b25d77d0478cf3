"""A hit's summary from what the index keeps, built as a FETCH answer's is (``mime.summarise``): the same
fields and message id, with no round trip. Used where the freshness check made the stored flags current
(a server with CONDSTORE: a flag change raises HIGHESTMODSEQ, and the folder is synced)."""

from __future__ import annotations

from datetime import UTC, datetime

from mail_imap_mcp.index.snippets import snippet_around
from mail_imap_mcp.index.store import KEPT_HEADERS, TEXT_COLUMNS, Hit
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.mime.summary import iso_utc, snippet_of, summarise

_HEADERS = {
    "subject": "subject",
    "sender": "from",
    "recipients_to": "to",
    "recipients_cc": "cc",
    "message_id": "message-id",
}


def summary_of(
    account_id: str,
    hit: Hit,
    *,
    tag: str,
    own: frozenset[str],
    snippet_chars: int,
    words: list[str],
    labels: list[str] | None = None,
) -> SummaryRecord:
    """The summary of ``hit``: its snippet where ``words`` are in what the sender wrote, else its start;
    ``labels``: its labels as a summary shows them (None: the server has none); ``tag``: the caller's in
    its id (:func:`~mail_imap_mcp.mail.ids.user_tag`)."""
    headers = {
        header: [text]
        for column, text in zip(TEXT_COLUMNS, hit.texts, strict=True)
        if (header := _HEADERS.get(column)) and text
    }
    headers.update({name: [text] for name, text in zip(KEPT_HEADERS, hit.kept or (), strict=False) if text})
    snippet = None
    if snippet_chars > 0:
        snippet = snippet_around(hit.body, words, snippet_chars) or snippet_of(hit.body, snippet_chars)
    sent = datetime.fromtimestamp(hit.sent, UTC) if hit.sent else None
    found = summarise(headers, arrived=sent, snippet=snippet, own=own)
    ref = MessageRef(account_id, hit.folder, hit.uidvalidity, hit.uid, tag)
    uri = ref.message_uri
    return SummaryRecord(
        message_id=ref.message_id,
        message_uri=uri,
        message_raw_uri=uri + "/raw",
        mailbox=hit.folder,
        uidvalidity=hit.uidvalidity,
        uid=hit.uid,
        date=found.date,
        from_=found.from_,
        to=found.to,
        cc=found.cc,
        subject=found.subject,
        flags=list(hit.flags),
        size_bytes=hit.size,
        has_attachments=hit.has_attachment,
        snippet=found.snippet,
        short_recipients=found.short_recipients,
        header_message_id=found.header_message_id,
        sender_warnings=found.sender_warnings,
        arrived=iso_utc(datetime.fromtimestamp(hit.arrival, UTC)) if hit.arrival else None,
        labels=labels,
    )
