"""Answering an invitation with imap_save_draft (``reply_to_invitation``): its calendar part read from the
server (bounded), the REPLY written by ``content/invitations.py``, and whether a later message cancels or
supersedes it, asked with one ``UID SEARCH BODY <UID>`` in the invitation's mailbox and in INBOX (never a
scan); the few messages it finds have their calendar parts read and compared by UID, RECURRENCE-ID and
SEQUENCE, and count only when they are from the organizer (From or Sender, with their FROM and SENDER
fetched beside BODYSTRUCTURE). Nothing is changed here; the draft is built and saved as any other.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import (
    address,
    attach_calendar,
    compose_draft,
    message_id_domain,
    thread_headers,
)
from mail_imap_mcp.content.invitations import (
    Answer,
    EventKey,
    InvitationProblem,
    InvitationRefused,
    InvitationReply,
    answer_invitation,
    supersedes,
)
from mail_imap_mcp.imap.backend import ImapMail
from mail_imap_mcp.imap.bodystructure import parse_bodystructure
from mail_imap_mcp.imap.fetch import find_item
from mail_imap_mcp.imap.parts import read_part
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.directory import same_mailbox
from mail_imap_mcp.mail.draft_errors import SenderNotOwn
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.part_errors import PartError
from mail_imap_mcp.mail.parts import PartWindow
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.services.drafts import DraftText, Original, read_original
from mail_imap_mcp.services.message_read import MessageRead

#: The largest calendar part read (decoded); invitations are a few kilobytes.
MAX_CALENDAR_BYTES = 512 * 1024
#: How many other messages naming the event's UID are read, newest first, per mailbox.
MAX_LATER_CANDIDATES = 10
CALENDAR_TYPES = ("text/calendar", "application/ics")


@dataclass
class Invitation:
    """The invitation answered and its answer."""

    original: Original
    reply: InvitationReply


def _calendar_parts(parts: list[mime.Part]) -> list[mime.Part]:
    """The calendar parts, the one marked ``method=REQUEST`` (iMIP's) first."""
    found = [part for part in parts if part.content_type in CALENDAR_TYPES]
    return sorted(found, key=lambda part: part.params.get("method", "").upper() != "REQUEST")


def _decoded(data: bytes, part: mime.Part) -> str:
    try:
        return data.decode(part.charset or "utf-8")
    except (LookupError, UnicodeDecodeError):
        return data.decode("utf-8", "replace")


def read_invitation(
    app: Call,
    ref: MessageRef,
    answer: Answer,
    comment: str,
    identities: list[str],
) -> Invitation:
    """The invitation ``ref`` answered ``answer`` as the first of ``identities`` it invites;
    :class:`InvitationRefused` when it cannot be (see ``content/invitations.py``), or a later message in
    its mailbox or INBOX cancels or supersedes it."""
    original = read_original(app, ref)
    connection = app.connection(ref.account_id)
    assert isinstance(original.detail, MessageRead)
    parts = _calendar_parts(original.detail.attachments)
    if not parts:
        raise InvitationRefused(InvitationProblem.NO_CALENDAR)
    sink = io.BytesIO()
    window = PartWindow(MAX_CALENDAR_BYTES, source_bytes=app.config.server.max_text_part_bytes)
    ImapMail(connection).part(ref, parts[0].section, sink, window)
    text = _decoded(sink.getvalue(), parts[0])
    reply = answer_invitation(text, identities, answer, comment, datetime.now(UTC))
    later = connection.run(lambda session: _later(session, ref, reply.keys, reply.organizer))
    if later is not None:
        problem, later_ref = later
        refused = InvitationRefused(problem)
        refused.later = later_ref.message_id
        raise refused
    return Invitation(original, reply)


#: The bytes of a later message's From and Sender read at most: a stranger's message holding the event's
#: UID may carry fields of megabytes (an organizer's address is near their start).
MAX_AUTHOR_BYTES = 16_384
#: The header fields naming who a message is from: a later message counts only from the organizer.
_AUTHORS = f"BODY.PEEK[HEADER.FIELDS (FROM SENDER)]<0.{MAX_AUTHOR_BYTES}>"


def _authors(response: dict[bytes, Any]) -> list[str]:
    """The addresses of the From and Sender fields of a fetched message (``_AUTHORS``)."""
    fields = mime.parse_header_block(find_item(response, b"BODY[HEADER.FIELDS") or b"")
    values = fields.get("from", []) + fields.get("sender", [])
    return [found.email for value in values for found in mime.parse_address_list(value) if found.email]


def _later(
    session: ImapSession, ref: MessageRef, keys: tuple[EventKey, ...], organizer: str
) -> tuple[InvitationProblem, MessageRef] | None:
    """The newest message of the invitation's mailbox or INBOX, from ``organizer`` (its From or Sender),
    whose calendar cancels or supersedes ``keys``, and why; None when there is none."""
    uid = keys[0].uid
    charset = None if uid.isascii() else "UTF-8"
    mailboxes = [ref.mailbox, *([] if same_mailbox(ref.mailbox, INBOX) else [INBOX])]
    for mailbox in mailboxes:
        state = session.examine(mailbox)
        found = session.uid_search([b"BODY", uid], charset=charset)
        same = mailbox == ref.mailbox and state.uidvalidity == ref.uidvalidity
        candidates = [u for u in sorted(found) if not (same and u == ref.uid)][-MAX_LATER_CANDIDATES:]
        if not candidates:
            continue
        structures = session.fetch(candidates, ["BODYSTRUCTURE", _AUTHORS])
        for candidate in reversed(candidates):
            other = MessageRef(ref.account_id, mailbox, state.uidvalidity, candidate, ref.tag)
            try:
                parts = _calendar_parts(parse_bodystructure(structures[candidate][b"BODYSTRUCTURE"]))
            except (KeyError, ValueError):  # gone meanwhile, or a structure that cannot be read
                continue
            authors = _authors(structures[candidate])
            for part in parts[:1]:
                sink = io.BytesIO()
                try:
                    read_part(session, other, part.section, sink, PartWindow(MAX_CALENDAR_BYTES))
                except PartError:  # a part that cannot be read tells nothing
                    continue
                problem = supersedes(_decoded(sink.getvalue(), part), keys, organizer, authors)
                if problem is not None:
                    return problem, other
    return None


def invitation_draft(
    account: AccountConfig, invitation: Invitation, args: DraftText
) -> tuple[EmailMessage, list[str]]:
    """The draft of the answer: from the invited address, to the organizer (and ``to``, ``cc``), the
        answer in words with ``body_text`` (the comment) as its text, the REPLY as a ``text/calendar;
        method=REPLY`` alternative, threaded to the invitation; and warnings. ``args``: its recipients
    (``to`` besides the organizer, ``cc``, ``bcc``), subject and comment (``body_text``)."""
    reply = invitation.reply
    # The configured spelling, not the invitation's (``T-001@MAIL.TEST``): the From and Message-ID are
    # the account's own.
    own = next((a for a in account.effective_addresses if a.lower() == reply.attendee.lower()), None)
    if own is None:
        raise SenderNotOwn(account)
    sent_as = address(own)
    organizer = Address(display_name=reply.organizer_name or "", addr_spec=reply.organizer)
    others = (a for a in map(address, args.to) if a.addr_spec.lower() != reply.organizer.lower())
    comment = args.body_text.strip()
    text = reply.words + ".\n" + (f"\n{comment}\n" if comment else "")
    domain = message_id_domain(own, account.host)
    message, warnings = compose_draft(
        sent_as,
        [organizer, *others],
        [address(a) for a in args.cc],
        args.subject or reply.subject,
        text,
        domain,
        None,
        [address(a) for a in args.bcc],
    )
    parent, references = thread_headers(invitation.original.detail)
    if parent and references:
        message["In-Reply-To"] = parent
        message["References"] = references
    attach_calendar(message, reply.calendar, "REPLY")
    allowed = account.recipients_allowed
    if account.send_enabled and not allowed.allows(reply.organizer):
        warnings.append(
            f"The organizer {reply.organizer} is outside {account.setting('allowed_recipients')}: "
            "imap_send_draft will refuse this draft; the user may send it from their mail client."
        )
    return message, warnings
