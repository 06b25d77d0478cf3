"""Forwarding with imap_save_draft (``forward_of``, ``forward_as``): the original read, and the draft's
text and attachments made of it (``content/forwards.py`` for the text and headers, ``mime/building.py``
for the message).

``inline``: the original's header block and text below the caller's, its attachments carried as
attachments by reference are (``services/draft_attachments.py``: each part fetched part by part into a
private temporary file, attached decoded as it was with its type, name, disposition and Content-ID, each at
most ``max_attachment_bytes``). ``attachment``: the original whole as
``message/rfc822``, byte for byte as the server keeps it (7bit or 8bit, never re-encoded, RFC 2046
5.2.1), at most ``max_attachment_bytes``, copied a chunk at a time into a temporary file as the parts are
(never whole in memory until the draft itself is built), with its progress reported.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Literal, Protocol

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import address, compose_draft, message_id_domain, one_line
from mail_imap_mcp.content.forwards import (
    FORWARDED_HEADER,
    forward_subject,
    forward_text,
    forwarded_id,
    references,
)
from mail_imap_mcp.envelope.call_context import progress_reporter
from mail_imap_mcp.mail.attachment_errors import AttachmentTooLarge
from mail_imap_mcp.mail.draft_errors import AttachmentRefused, DraftTooLarge
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mime.building import Attachment
from mail_imap_mcp.services.draft_attachments import (
    PROGRESS_FROM_BYTES,
    SizeLimit,
    describe,
    take_attachments,
)
from mail_imap_mcp.services.drafts import DraftText, Original, read_original, sender
from mail_imap_mcp.services.message_read import MessageRead

ForwardAs = Literal["inline", "attachment"]
#: How much of the original's text an inline forward carries (characters).
FORWARD_MAX_CHARS = 200_000
_NAME_UNSAFE = str.maketrans(dict.fromkeys('/\\:*?"<>|', "_"))


class ForwardRequest(DraftText, Protocol):
    """What a forward reads of imap_save_draft's arguments: its text's, and how it carries the original."""

    @property
    def forward_as(self) -> ForwardAs: ...


@dataclass
class Forward:
    """A forward draft's text message and what it attaches, and the original it forwards."""

    message: EmailMessage
    attachments: list[Attachment]
    original: Original
    warnings: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """The forwarded message in words: "'Invoice 2026-11' of Acme <billing@acme.example>"."""
        detail = self.original.detail
        return f"{one_line(detail.subject) or '(no subject)'!r} of {one_line(detail.from_) or 'an unknown sender'}"


def _parts(app: Call, original: Original, stack: ExitStack, within: SizeLimit | None) -> list[Attachment]:
    """The original's attachments, each fetched part by part into a temporary file ``stack`` removes
    (``services/draft_attachments.py``, as an attachment by reference: its size limits, its progress, its
    source in words); a refusal names ``forward_of`` with the part's own problem."""
    assert isinstance(original.detail, MessageRead)
    items = [f"{original.ref.message_id}#{part.section}" for part in original.detail.attachments]
    try:
        account_id = original.ref.account_id
        return take_attachments(app, account_id, items, stack, within=within, parameter="forward_of")
    except DraftTooLarge as exc:
        raise AttachmentRefused("forward_of", exc) from None


def _eml_name(original: Original) -> str:
    """The file name of the original attached whole."""
    return (one_line(original.detail.subject) or "forwarded message")[:100].translate(_NAME_UNSAFE) + ".eml"


def carried(original: Original) -> frozenset[tuple[str, str]]:
    """The attachments a forward of ``original`` carries in either form, by name and type: its parts
    (inline) and itself whole (attachment); what a revision of a forward does not keep twice."""
    assert isinstance(original.detail, MessageRead)
    parts = {(p.filename or f"part-{p.section}", p.content_type.lower()) for p in original.detail.attachments}
    return frozenset({*parts, (_eml_name(original), "message/rfc822")})


def _whole(app: Call, original: Original, stack: ExitStack, within: SizeLimit | None) -> Attachment:
    """The original as it is kept, as a ``message/rfc822`` attachment: copied from the server a chunk at a
    time into a private temporary file ``stack`` removes (progress reported from ``PROGRESS_FROM_BYTES``),
    at most ``max_attachment_bytes``."""
    ref, limit = original.ref, app.config.server.max_attachment_bytes
    path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mim-forward-"))) / "original.eml"
    report = progress_reporter.get()

    def accept(total: int) -> None:
        if total > limit:
            part = mime.Part("", "message/rfc822", {}, "8bit", total, None, None, None, None)
            raise AttachmentTooLarge(part, limit, "max_attachment_bytes", size=total, exact=True)
        if within is not None:  # refused before it is read where the draft could not take it
            within.check(total)

    def told(done: int, total: int) -> None:
        if report is not None and total >= PROGRESS_FROM_BYTES:
            report(done, total, "reading the forwarded message")

    try:
        with path.open("w+b") as sink:
            size = app.mail(ref.account_id).source(ref, sink, accept, told)
            sink.seek(0)
            ascii_only = all(chunk.isascii() for chunk in iter(lambda: sink.read(1 << 20), b""))
    except (AttachmentTooLarge, DraftTooLarge) as exc:
        raise AttachmentRefused("forward_of", exc) from None
    detail = original.detail
    return Attachment(
        _eml_name(original),
        "message/rfc822",
        size,
        lambda: path.open("rb"),
        describe(one_line(detail.subject), one_line(detail.from_)),
        encoding="7bit" if ascii_only else "8bit",
    )


def forward_draft(
    app: Call,
    account: AccountConfig,
    ref: MessageRef,
    args: ForwardRequest,
    stack: ExitStack,
    within: SizeLimit | None,
) -> Forward:
    """The forward of ``ref`` (see the module); its attachments' files are removed by ``stack``, the draft
    must stay ``within``."""
    original = read_original(app, ref, FORWARD_MAX_CHARS)
    inline = args.forward_as == "inline"
    sent_as = sender(account, args.from_address, original)
    domain = message_id_domain(sent_as.addr_spec if sent_as else "", account.host)
    text = forward_text(args.body_text, original.detail if inline else None)
    to, cc = args.to, args.cc
    message, warnings = compose_draft(
        sent_as,
        [address(value) for value in to],
        [address(value) for value in cc],
        args.subject if args.subject is not None else forward_subject(original.detail.subject),
        text,
        domain,
        None,
        [address(value) for value in args.bcc],
    )
    chain, forwarded = references(original.detail), forwarded_id(original.detail)
    if chain:
        message["References"] = chain
    if forwarded is not None:
        message[FORWARDED_HEADER] = forwarded
    else:
        warnings.append("The original has no Message-ID: sending will not mark it $Forwarded.")
    if not to and not cc and not args.bcc:
        warnings.append("The forward has no recipient yet: add to (or cc).")
    if inline and original.detail.body_truncated:
        warnings.append(f"The original's text was cut at {FORWARD_MAX_CHARS:,} characters; forward_as "
                        "'attachment' carries it whole.")  # fmt: skip
    attachments = _parts(app, original, stack, within) if inline else [_whole(app, original, stack, within)]
    return Forward(message, attachments, original, warnings + original.warnings)
