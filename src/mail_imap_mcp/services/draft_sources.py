"""What imap_save_draft makes a draft from: the caller's text alone, a message answered (``in_reply_to``),
an invitation answered (``reply_to_invitation``, ``services/invitations.py``) or a message forwarded
(``forward_of``, ``services/forwards.py``); and the draft's bytes, built by ``mime/building.py``."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Protocol

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import address
from mail_imap_mcp.content.invitations import Answer
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.mime.building import build_message
from mail_imap_mcp.services.drafts import Original, build_draft, parse_own_id, read_original
from mail_imap_mcp.services.forwards import ForwardAs, forward_draft
from mail_imap_mcp.services.invitations import invitation_draft, read_invitation


class DraftRequest(Protocol):
    """What composing reads of imap_save_draft's arguments."""

    to: list[str]
    cc: list[str]
    subject: str | None
    body_text: str
    from_address: str | None
    reply_all: bool
    in_reply_to: str | None
    reply_to_invitation: str | None
    invitation_answer: Answer
    forward_of: str | None
    forward_as: ForwardAs


@dataclass
class Composed:
    """The draft, what the user should know of it, and what it was made from."""

    message: EmailMessage
    warnings: list[str]
    #: The message answered or forwarded: its text is a stranger's.
    original: Original | None = None
    #: The invitation's answer in words.
    invitation_reply: str | None = None
    #: The message forwarded in words ("'Invoice' of Acme <billing@acme.example>").
    forwarded: str | None = None
    #: The draft as saved (RFC 5322, CRLF).
    raw: bytes = b""


def compose(
    app: AppContext, connection: AccountConnection, account: AccountConfig, args: DraftRequest
) -> Composed:
    """The draft ``args`` ask for (nothing is saved here)."""
    if args.forward_of is None:
        composed = _compose(app, connection, account, args)
        composed.raw = composed.message.as_bytes()
        return composed
    ref = parse_own_id(app, connection.account_id, args.forward_of, "forward_of")
    with tempfile.TemporaryDirectory(prefix="mail-imap-mcp-forward-") as folder:
        forward = forward_draft(
            app, connection, account, ref, forward_as=args.forward_as, to=args.to, cc=args.cc,
            subject=args.subject, body_text=args.body_text, from_address=args.from_address, folder=Path(folder),
        )  # fmt: skip
        raw = build_message(forward.message, forward.attachments).to_bytes()
    return Composed(forward.message, forward.warnings, forward.original, forwarded=forward.shown, raw=raw)


def _compose(
    app: AppContext, connection: AccountConnection, account: AccountConfig, args: DraftRequest
) -> Composed:
    account_id = connection.account_id
    if args.reply_to_invitation is not None:
        ref = parse_own_id(app, account_id, args.reply_to_invitation, "reply_to_invitation")
        chosen = args.from_address
        identities = [address(chosen).addr_spec] if chosen else list(account.effective_addresses)
        invitation = read_invitation(app, connection, ref, args.invitation_answer, args.body_text, identities)
        message, warnings = invitation_draft(
            account, invitation, to=args.to, cc=args.cc, subject=args.subject, body_text=args.body_text
        )
        return Composed(message, warnings, invitation.original, invitation.reply.words)
    original = None
    if args.in_reply_to is not None:
        original = read_original(app, parse_own_id(app, account_id, args.in_reply_to, "in_reply_to"))
    message, warnings = build_draft(
        account,
        original,
        to=args.to,
        cc=args.cc,
        subject=args.subject,
        body_text=args.body_text,
        from_address=args.from_address,
        reply_all=args.reply_all,
    )
    return Composed(message, warnings, original)
