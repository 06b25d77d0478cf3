"""A draft as imap_save_draft saves it: the text message (``services/draft_sources.py``: a new one, a reply,
a forward with what it carries, an invitation's answer) with its Bcc
and the attachments asked for (``services/draft_attachments``), built by ``mime/building.py``, checked
against the servers' size limits before it is saved. A revised draft (``replace_message_id``) keeps
the attachments of the draft it replaces unless ``attachments`` is given (``[]``: none); a revised forward
too, besides what the forward carries (read afresh, never kept twice)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Protocol

from mail_imap_mcp.call import Call
from mail_imap_mcp.content.drafts import one_line, text_of
from mail_imap_mcp.mime.building import BuiltMessage, build_message
from mail_imap_mcp.services.draft_attachments import Listed, listed, size_limit, take_attachments
from mail_imap_mcp.services.draft_sources import Source, SourceRequest, draft_source
from mail_imap_mcp.services.drafts import Original, Replaced


class ComposeRequest(SourceRequest, Protocol):
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
    #: What its message was made from (a forward's original, an invitation's answer).
    source: Source


def kept_attachments(replaced: Replaced | None, carried: frozenset[tuple[str, str]]) -> list[str]:
    """The parts of the draft ``replaced`` as items of ``attachments`` (kept by a revision), but those
    ``carried`` names (by file name, "" for none, and type: what the forward or invitation reply that
    revises it makes afresh)."""
    if replaced is None:
        return []
    return [
        f"{replaced.ref.message_id}#{part.section}"
        for part in replaced.detail.attachments
        if (part.filename or "", part.content_type.lower()) not in carried
    ]


def compose(
    app: Call,
    account_id: str,
    args: ComposeRequest,
    original: Original | None,
    replaced: Replaced | None,
    stack: ExitStack,
) -> Composed:
    """The draft ``args`` ask for (a reply to ``original``, a revision of ``replaced``); its attachments'
    contents are read into temporary files ``stack`` removes."""
    kept = args.attachments is None
    keeping = kept and replaced is not None and bool(replaced.detail.attachments)
    within = size_limit(app, account_id) if keeping or args.attachments or args.forward_of else None
    source = draft_source(app, account_id, args, original, stack, within)
    items = kept_attachments(replaced, source.carried) if kept else list(args.attachments or [])
    message = source.message
    text, header_id = text_of(message), str(message["Message-ID"])
    taken = take_attachments(app, account_id, items, stack, kept=kept, within=within) if items else []
    attachments = source.attachments + taken
    built = build_message(message, attachments)
    if within is not None:
        within.check(built.size)
    headers = {name: one_line(str(value)) for name, value in message.items()}
    return Composed(built, header_id, headers, text, listed(attachments), source.warnings, source)
