"""One message as read, whatever the backend: what a reader asks for (:class:`ReadOptions`), which
headers it shows, and the record made of a message's headers, summary and decoded body
(:func:`message_record`). ``imap/read.py`` fetches the parts with bounded FETCHes; a backend holding the
whole message parses it."""

from __future__ import annotations

from dataclasses import dataclass, field

from mail_imap_mcp import mime
from mail_imap_mcp.mail.records import BodyFormat, MessageRecord, SummaryRecord
from mail_imap_mcp.mime.authentication import TrustedServers

DEFAULT_HEADER_ALLOWLIST = (
    "date",
    "from",
    "to",
    "cc",
    "reply-to",
    "subject",
    "message-id",
    "in-reply-to",
    "references",
    "list-id",
    "list-unsubscribe",
)
#: The headers that say who sent a message (its sender's warnings and authentication are read from them),
#: and how many of each are kept (a message may carry hundreds of forged Authentication-Results).
SENDER_HEADERS = ("from", "sender", "reply-to", "authentication-results")
MAX_SENDER_HEADERS = 20
MAX_LISTED_ATTACHMENTS = 100
MAX_HEADER_VALUE_CHARS = 4000


@dataclass
class ReadOptions:
    """What a reader asks of one message: the body's format and length, which headers, how much of a
    text part is read, and whose authentication results count."""

    body_max_chars: int
    body_format: BodyFormat
    include_headers: bool
    include_all_headers: bool
    max_text_part_bytes: int
    #: Leave quoted replies and the signature out of the body (text and markdown).
    new_text_only: bool = False
    #: Whose Authentication-Results count as the sender's authentication (none by default).
    trusted_servers: TrustedServers = field(default_factory=TrustedServers)
    #: Each header value is cut at this many characters (a reply reads its original's whole To and Cc).
    max_header_value_chars: int = MAX_HEADER_VALUE_CHARS


def select_headers(headers: dict[str, list[str]], options: ReadOptions) -> dict[str, str]:
    """The headers ``options`` show, each value cut at ``max_header_value_chars``."""
    if not (options.include_headers or options.include_all_headers):
        return {}
    names = headers if options.include_all_headers else [n for n in DEFAULT_HEADER_ALLOWLIST if n in headers]
    out = {}
    for name in names:
        value = "\n".join(headers[name])
        out[_canonical(name)] = value[: options.max_header_value_chars]
    return out


def _canonical(name: str) -> str:
    special = {"message-id": "Message-ID", "list-id": "List-ID", "mime-version": "MIME-Version"}
    return special.get(name, "-".join(p.capitalize() for p in name.split("-")))


@dataclass(frozen=True)
class Body:
    """What a read found of a message's body: the decoded text and HTML parts it has, whether the text
    was cut at the fetch cap, and its attachment parts."""

    text: str | None
    html: str | None
    fetch_truncated: bool
    attachments: list[mime.Part]


def message_record(
    summary: SummaryRecord,
    headers: dict[str, list[str]],
    body: Body,
    options: ReadOptions,
    warnings: list[str],
) -> MessageRecord:
    """The record of a message read: the headers ``options`` show, those that say who sent it, and at most
    :data:`MAX_LISTED_ATTACHMENTS` attachments (more are said in ``warnings``)."""
    attachments = body.attachments
    if len(attachments) > MAX_LISTED_ATTACHMENTS:
        warnings.append(
            f"Only the first {MAX_LISTED_ATTACHMENTS} of {len(attachments)} attachment parts are listed."
        )
    return MessageRecord(
        summary=summary,
        headers=select_headers(headers, options),
        text=body.text,
        html=body.html,
        fetch_truncated=body.fetch_truncated,
        attachments=attachments[:MAX_LISTED_ATTACHMENTS],
        sender_headers={
            name: headers[name][:MAX_SENDER_HEADERS] for name in SENDER_HEADERS if name in headers
        },
    )
