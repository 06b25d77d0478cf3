"""The attachments of a draft (imap_save_draft's ``attachments``), taken by reference, never as bytes in
the arguments: a part of a message of the account (``<message_id>#<part_id>``, as imap_get_message lists
its attachments, or the part's ``resource_uri``), fetched part by part into a private temporary file and
carried byte-exact with its type, name and disposition; or a file of the user's, read only from inside
``attachment_dirs`` (``local_files``). Each is at most ``max_attachment_bytes`` decoded; the whole draft
at most what the IMAP server's APPENDLIMIT and the submission server's SIZE take, counted encoded, checked
before it is saved. Every refusal names the item of ``attachments``.
"""

from __future__ import annotations

import io
import mimetypes
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, cast

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope.call_context import progress_reporter
from mail_imap_mcp.local_files import read_inside
from mail_imap_mcp.mail.attachment_errors import AttachmentTooLarge, InvalidPartId
from mail_imap_mcp.mail.draft_errors import AttachmentRefused, DraftTooLarge, ForeignMessage
from mail_imap_mcp.mail.ids import InvalidMessageId, MessageRef, parse_attachment_uri
from mail_imap_mcp.mail.part_errors import PartError, PartGone
from mail_imap_mcp.mail.parts import PartWindow, valid_part_id
from mail_imap_mcp.mime.building import Attachment, base64_size
from mail_imap_mcp.mime.parts import MESSAGE_TYPES
from mail_imap_mcp.services.attachment_fetch import estimated_size, too_large
from mail_imap_mcp.services.drafts import parse_own_id
from mail_imap_mcp.services.submission_server import submission_server
from mail_imap_mcp.smtp.client import advertised_size

#: What starts an item of ``attachments`` that names a part of a message (a message id, a resource_uri).
PART_PREFIX = "imap:"
#: Attachments larger than this report their progress to the client as they are read.
PROGRESS_FROM_BYTES = 4 * 1024 * 1024
#: What a message's description in a source keeps of its subject and sender (characters).
_SHOWN_CHARS = 80
_HEADERS = ("From", "Subject")


@dataclass(frozen=True)
class Listed:
    """An attachment as the user is shown it: name, type, decoded size and where it comes from."""

    name: str
    content_type: str
    size: int
    source: str


@dataclass(frozen=True)
class SizeLimit:
    """The most bytes a draft may have (encoded), and which server's limit that is."""

    limit: int
    limited_by: str

    def check(self, size: int) -> None:
        if size > self.limit:
            raise DraftTooLarge(size, self.limit, self.limited_by)


def listed(attachments: Sequence[Attachment]) -> list[Listed]:
    return [Listed(a.name, a.content_type, a.size, a.source) for a in attachments]


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def describe(subject: str, sender: str) -> str:
    """Where a part of a message comes from, in words: "from the message 'Invoice' of Acme"."""
    return f"from the message {_cut(subject) or '(no subject)'!r} of {_cut(sender) or 'an unknown sender'}"


def _message_words(app: Call, ref: MessageRef) -> str:
    """:func:`describe` of the message ``ref`` (its Subject and From's name, else address)."""
    headers = app.mail(ref.account_id).header_fields(ref, _HEADERS)
    if headers is None:
        raise PartGone()
    senders = mime.parse_address_list((headers.get("from") or [""])[0])
    sender = (senders[0].name or senders[0].email or "") if senders else ""
    return describe(mime.decode_header_value((headers.get("subject") or [""])[0]), sender)


class _Counted(io.FileIO):
    """A temporary file that reports the bytes written to it as progress."""

    def __init__(self, path: Path, report: Callable[[int], None]) -> None:
        super().__init__(path, "w+b")
        self._report = report

    def write(self, data: bytes) -> int:  # type: ignore[override]
        written = super().write(data)
        self._report(self.tell())
        return written if written is not None else 0


def _progress(index: int, count: int) -> Callable[[mime.Part, int], None]:
    """A reporter of attachment ``index``'s bytes read, when its part is large enough to be worth it."""
    report = progress_reporter.get()

    def told(part: mime.Part, done: int) -> None:
        total = estimated_size(part)
        if report is not None and total >= PROGRESS_FROM_BYTES:
            report(done, total, f"reading attachment {index + 1} of {count} (part {part.section})")

    return told


def _part_attachment(part: mime.Part, size: int, path: Path, source: str) -> Attachment:
    kind = part.content_type.lower()
    params = {k: v for k, v in part.params.items() if k.lower() not in {"name", "boundary"} and "*" not in k}
    return Attachment(
        name=part.filename or f"part-{part.section}",
        content_type=kind,
        size=size,
        read=lambda: path.open("rb"),
        source=source,
        disposition="inline" if part.disposition == "inline" else "attachment",
        # RFC 2046 5.2.1: a message/rfc822 body is never base64; it goes as it is.
        encoding="8bit" if kind in MESSAGE_TYPES else "base64",
        params=params,
        content_id=f"<{part.content_id}>" if part.content_id else None,
    )


def _part_named(app: Call, account_id: str, item: str, parameter: str) -> tuple[MessageRef, str]:
    """The message and part id an item of ``attachments`` names: ``<message_id>#<part_id>`` or the
    part's ``resource_uri``; of the account ``account_id``, else ``invalid_input`` naming ``parameter``."""
    if item.startswith("imap://"):
        ref, part_id = parse_attachment_uri(item, app.caller, parameter)
        if app.resolve_account(ref.account_id) != account_id:
            raise ForeignMessage(parameter, ref.account_id, account_id)
        return ref, part_id
    message_id, hash_sign, part_id = item.rpartition("#")
    if not hash_sign:
        raise InvalidMessageId("a part of a message is '<message_id>#<part_id>'", parameter)
    return parse_own_id(app, account_id, message_id, parameter), part_id


def message_part(
    app: Call,
    account_id: str,
    index: int,
    item: str,
    count: int,
    folder: Path,
    within: SizeLimit | None = None,
    so_far: int = 0,
    parameter: str | None = None,
) -> Attachment:
    """Item ``index`` of ``attachments``, a part of a message of the account (``<message_id>#<part_id>``
    or its ``resource_uri``), decoded into a file of ``folder`` (at most ``max_attachment_bytes``); with
    ``so_far`` encoded bytes of attachments before it, the draft must stay ``within``. A refusal names
    ``parameter`` (by default the item, ``attachments[<index>]``)."""
    parameter = parameter or f"attachments[{index}]"
    ref, part_id = _part_named(app, account_id, item, parameter)
    if not valid_part_id(part_id):
        raise AttachmentRefused(parameter, InvalidPartId(part_id))
    limit = app.config.server.max_attachment_bytes
    found: list[mime.Part] = []

    def accept(part: mime.Part, head: bytes) -> None:
        if estimated_size(part) > limit * 1.02:  # base64 line ends: the estimate is a little over
            raise too_large(part, limit, "max_attachment_bytes")
        if within is not None:  # refused before it is read where the draft could not take it
            within.check(so_far + base64_size(estimated_size(part)))
        found.append(part)

    told = _progress(index, count)
    path = folder / f"attachment-{index}"
    try:
        source = _message_words(app, ref)
        with _Counted(path, lambda done: told(found[0], done) if found else None) as sink:
            window = PartWindow(limit, accept=accept, source_bytes=app.config.server.max_text_part_bytes)
            read = app.mail(account_id).part(ref, part_id, cast(BinaryIO, sink), window)
        if not read.complete:
            raise too_large(read.part, limit, "max_attachment_bytes", size=read.decoded_end)
    except (PartError, AttachmentTooLarge) as exc:
        raise AttachmentRefused(parameter, exc) from None
    return _part_attachment(read.part, read.written, path, source)


def file_attachment(app: Call, index: int, path: str) -> Attachment:
    """Item ``index`` of ``attachments``, a file read only from inside ``attachment_dirs``
    (``local_files``: its refusals name the item), at most ``max_attachment_bytes``."""
    server = app.config.server
    found = read_inside(
        path, server.attachment_dirs, max_bytes=server.max_attachment_bytes, parameter=f"attachments[{index}]"
    )
    kind = mimetypes.guess_type(found.name, strict=False)[0] or "application/octet-stream"
    return Attachment.of_bytes(found.data, found.name, kind, source=f"the file {found.shown}")


#: The source of an attachment a revised draft keeps from the draft it replaces.
KEPT = "kept from the draft it replaces"


def take_attachments(
    app: Call,
    account_id: str,
    items: Sequence[str],
    stack: ExitStack,
    *,
    kept: bool = False,
    within: SizeLimit | None = None,
    parameter: str | None = None,
) -> list[Attachment]:
    """The attachments ``items`` ask for (each a part's ``resource_uri`` or a file's path), in order, parts
    read into a temporary folder ``stack`` removes (``kept``: the parts of the draft a revision replaces).
    Where the attachments taken so far, with the next part as its structure says, pass ``within``, the
    draft is refused before that part is read. A refusal names ``parameter`` (by default the item)."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mim-draft-")))
    taken: list[Attachment] = []
    for i, item in enumerate(items):
        if item.startswith(PART_PREFIX):
            so_far = sum(attachment.encoded_size for attachment in taken)
            taken.append(
                message_part(app, account_id, i, item, len(items), folder, within, so_far, parameter)
            )
        else:
            taken.append(file_attachment(app, i, item))
    return [replace(attachment, source=KEPT) for attachment in taken] if kept else taken


def sending_limit(account: AccountConfig, max_send_bytes: int) -> SizeLimit:
    """The most bytes a draft of ``account`` may have to be sent, for saving and sending alike: its
    submission server's SIZE where it says one, else ``max_send_bytes`` (the setting)."""
    server = submission_server(account)
    sendable = advertised_size(server) if server is not None else None
    if sendable:
        return SizeLimit(sendable, "the submission server's SIZE")
    return SizeLimit(max_send_bytes, "the setting max_send_bytes")


def size_limit(app: Call, account_id: str) -> SizeLimit | None:
    """The smaller of the IMAP server's APPENDLIMIT (where advertised) and, where the account sends, the
    limit of :func:`sending_limit`; None where neither applies."""
    limits: list[SizeLimit] = []
    appendable = app.mail(account_id).append_limit()
    if appendable is not None:
        limits.append(SizeLimit(appendable, "the IMAP server's APPENDLIMIT"))
    account = app.config.accounts[account_id]
    if account.send_enabled:
        limits.append(sending_limit(account, app.config.server.max_send_bytes))
    return min(limits, key=lambda found: found.limit, default=None)
