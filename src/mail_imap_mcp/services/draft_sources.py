"""What imap_save_draft makes a draft's message from: the caller's text alone or a reply to the message
answered (``services/drafts.build_draft``), an invitation answered (``reply_to_invitation``,
``services/invitations.py``) or a message forwarded (``forward_of``, ``services/forwards.py``, which brings
the attachments it carries). ``services/draft_compose.py`` adds the attachments asked for and builds it."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Protocol

from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import address
from mail_imap_mcp.content.invitations import Answer
from mail_imap_mcp.mime.building import Attachment
from mail_imap_mcp.services.draft_attachments import SizeLimit
from mail_imap_mcp.services.drafts import Original, build_draft, parse_own_id
from mail_imap_mcp.services.forwards import ForwardRequest, carried, forward_draft
from mail_imap_mcp.services.invitations import invitation_draft, read_invitation

#: An invitation reply's own part: the REPLY, a ``text/calendar`` part without a file name.
_CALENDAR_REPLY = frozenset({("", "text/calendar")})


class SourceRequest(ForwardRequest, Protocol):
    """What choosing a draft's source reads of imap_save_draft's arguments, besides its text's."""

    @property
    def reply_to_invitation(self) -> str | None: ...
    @property
    def invitation_answer(self) -> Answer: ...
    @property
    def forward_of(self) -> str | None: ...


@dataclass
class Source:
    """A draft's message, what the user should know of it, and what it was made from."""

    message: EmailMessage
    warnings: list[str]
    #: What a forward carries (the original's attachments, or the original whole).
    attachments: list[Attachment] = field(default_factory=list)
    #: The message forwarded or the invitation answered: its text, in the draft, is a stranger's (what the
    #: user should know of reading it is in ``warnings``).
    made_of: Original | None = None
    #: The invitation's answer in words.
    invitation_reply: str | None = None
    #: The message forwarded in words ("'Invoice' of Acme <billing@acme.example>").
    forwarded: str | None = None
    #: The parts this source makes afresh, by file name ("" for none) and type, which a revision does not
    #: keep from the draft it replaces: what a forward carries in either form (``forwards.carried``), an
    #: invitation reply's calendar part.
    carried: frozenset[tuple[str, str]] = frozenset()


def draft_source(
    app: Call,
    account_id: str,
    args: SourceRequest,
    original: Original | None,
    stack: ExitStack,
    within: SizeLimit | None,
) -> Source:
    """The message ``args`` ask for (a reply to ``original`` when given); a forward's attachments are read
    into temporary files ``stack`` removes, within the draft's size limit."""
    account: AccountConfig = app.config.accounts[account_id]
    if args.forward_of is not None:
        ref = parse_own_id(app, account_id, args.forward_of, "forward_of")
        forward = forward_draft(app, account, ref, args, stack, within)
        return Source(
            forward.message,
            forward.warnings,
            forward.attachments,
            forward.original,
            None,
            forward.shown,
            carried(forward.original),
        )
    if args.reply_to_invitation is not None:
        ref = parse_own_id(app, account_id, args.reply_to_invitation, "reply_to_invitation")
        chosen = args.from_address
        identities = [address(chosen).addr_spec] if chosen else list(account.effective_addresses)
        invitation = read_invitation(app, ref, args.invitation_answer, args.body_text, identities)
        message, warnings = invitation_draft(account, invitation, args)
        warnings += invitation.original.warnings
        return Source(
            message,
            warnings,
            made_of=invitation.original,
            invitation_reply=invitation.reply.words,
            carried=_CALENDAR_REPLY,
        )
    message, warnings = build_draft(account, original, args)
    return Source(message, warnings)
