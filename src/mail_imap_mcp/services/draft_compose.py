"""A draft as imap_save_draft saves it: the text message (``services/drafts.build_draft``) with its Bcc
and the attachments asked for (``services/draft_attachments``), built by ``mime/building.py``, checked
against the servers' size limits before it is saved. A revised draft (``replace_message_id``) keeps
the attachments of the draft it replaces unless ``attachments`` is given (``[]``: none)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Protocol

from mail_imap_mcp.call import Call
from mail_imap_mcp.content.drafts import one_line
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.mime.building import BuiltMessage, build_message
from mail_imap_mcp.services.draft_attachments import Listed, listed, size_limit, take_attachments
from mail_imap_mcp.services.drafts import DraftText, Original, Replaced, build_draft


class ComposeRequest(DraftText, Protocol):
    """What :func:`compose` reads of imap_save_draft's arguments: the text's, and the attachments."""

    @property
    def attachments(self) -> Sequence[str] | None: ...


@dataclass
class Composed:
    """The draft built: its bytes (as pieces, read out once), its headers decoded, its text, and each
    attachment as the user is shown it."""

    built: BuiltMessage
    header_id: str
    headers: dict[str, str]
    text: str
    attachments: list[Listed]
    warnings: list[str]


def kept_attachments(replaced: Replaced | None) -> list[str]:
    """The parts of the draft ``replaced`` as items of ``attachments`` (kept by a revision)."""
    if replaced is None:
        return []
    return [f"{replaced.ref.message_id}#{part.section}" for part in replaced.detail.attachments]


def compose(
    app: Call,
    connection: AccountConnection,
    args: ComposeRequest,
    original: Original | None,
    replaced: Replaced | None,
    stack: ExitStack,
) -> Composed:
    """The draft ``args`` ask for (a reply to ``original``, a revision of ``replaced``); its attachments'
    contents are read into temporary files ``stack`` removes."""
    message, warnings = build_draft(app.config.accounts[connection.account_id], original, args)
    text, header_id = message.get_content(), str(message["Message-ID"])
    kept = args.attachments is None
    items = kept_attachments(replaced) if kept else list(args.attachments or [])
    within = size_limit(app, connection) if items else None
    attachments = take_attachments(app, connection, items, stack, kept=kept, within=within) if items else []
    built = build_message(message, attachments)
    if within is not None:
        within.check(built.size)
    headers = {name: one_line(str(value)) for name, value in message.items()}
    return Composed(built, header_id, headers, text, listed(attachments), warnings)
