"""What imap_save_draft makes a draft from: the caller's text alone, a message answered (``in_reply_to``),
or an invitation answered (``reply_to_invitation``, ``services/invitations.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from typing import Protocol

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import address
from mail_imap_mcp.content.invitations import Answer
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.services.drafts import Original, build_draft, parse_own_id, read_original
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


@dataclass
class Composed:
    """The draft, what the user should know of it, and what it was made from."""

    message: EmailMessage
    warnings: list[str]
    #: The message answered (a reply's or an invitation's): its text is a stranger's.
    original: Original | None = None
    #: The invitation's answer in words.
    invitation_reply: str | None = None


def compose(
    app: AppContext, connection: AccountConnection, account: AccountConfig, args: DraftRequest
) -> Composed:
    """The draft ``args`` ask for (nothing is saved here)."""
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
