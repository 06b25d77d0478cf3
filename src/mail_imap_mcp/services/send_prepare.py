"""A saved draft read and checked before the user is asked to send it (``services/send_draft.py`` says the
order of a send): in Drafts, within the size the account sends (the submission server's SIZE, else
``max_send_bytes``: :func:`~mail_imap_mcp.services.draft_attachments.sending_limit`), its From one of the
account's, its recipients allowed.

The draft is fetched a chunk at a time into a :class:`~mail_imap_mcp.mime.message_file.MessageFile` (an
anonymous temporary file, 0600), never held whole: what the user approves (``services/send_review.py``,
``services/send_page.py``), its fingerprint, the bytes transmitted and the copy filed in Sent
(:func:`copy_of`) all come from that one file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain

from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import message_id_domain
from mail_imap_mcp.mail.directory import MailboxDirectory, same_mailbox
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import ALL, DRAFTS, INBOX, SENT, TRASH
from mail_imap_mcp.mime.message_file import SEND_PIECE_BYTES, HeaderBlockTooLarge, MessageFile
from mail_imap_mcp.services.draft_attachments import sending_limit
from mail_imap_mcp.services.drafts import mailbox_directory
from mail_imap_mcp.services.send_claim import carries_claim
from mail_imap_mcp.services.send_marks import original_words
from mail_imap_mcp.smtp.outgoing import Outgoing, outgoing_of, rewritten_head
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable, RecipientsNotAllowed

#: How many mailboxes are searched for the message a reply answers (INBOX, All Mail, then LIST order).
MAX_ANSWER_MAILBOXES = 20


@dataclass
class Prepared:
    """A draft read and checked, ready to be approved and sent; :meth:`close` lets go of its file."""

    account_id: str
    account: AccountConfig
    ref: MessageRef
    #: The draft's bytes as read, and where its body starts in them.
    draft: MessageFile
    body_start: int
    outgoing: Outgoing
    sent_mailbox: str | None
    trash_mailbox: str | None
    #: Where the message replied to or forwarded is looked for, in order (empty: the draft is neither).
    reply_mailboxes: tuple[str, ...] = ()
    #: The draft carries the claim of a send (``services/send_claim.py``) when it was read.
    claimed: bool = False
    #: The message it forwards as the user is shown it (None: it forwards none, or it was not found).
    forwarded_shown: str | None = None

    def close(self) -> None:
        self.draft.close()


def prepare(app: Call, account_id: str, ref: MessageRef) -> Prepared:
    """Read the draft ``ref`` and check everything that needs no approval (see the module); raises the
    refusal of the first check that fails. Changes nothing."""
    account = app.config.accounts[account_id]
    mail = app.mail(account_id)
    directory = mailbox_directory(app, account_id)
    drafts = directory.require(DRAFTS, account_id)
    if not same_mailbox(ref.mailbox, drafts):
        raise DraftRefused(
            DraftUnsendable.NOT_IN_DRAFTS,
            f"only a draft of {drafts!r} is sent; this one is in {ref.mailbox!r}",
        )
    stored = mail.stored(ref)
    _check_size(account, app.config.server.max_send_bytes, stored.size)
    draft = mail.source_file(ref)  # a chunk at a time, never held whole
    try:
        try:
            body_start = draft.header_end()[1]
        except HeaderBlockTooLarge as exc:
            raise DraftRefused(DraftUnsendable.MALFORMED, str(exc)) from None
        domain = message_id_domain(next(iter(account.effective_addresses), ""), account.host)
        message = outgoing_of(draft.read_at(0, body_start), draft.sha256(), account.own_addresses, domain)
        allowed = account.recipients_allowed
        outside = [address for address in message.recipients if not allowed.allows(address)]
        if outside:
            raise RecipientsNotAllowed(account_id, account.setting("allowed_recipients"), outside)
        sent, trash = directory.special_use(SENT), directory.special_use(TRASH)
        replied = _reply_mailboxes(directory) if message.in_reply_to or message.forwarded else ()
        shown = original_words(mail, replied, message.forwarded) if message.forwarded else None
    except BaseException:
        draft.close()
        raise
    claimed = carries_claim(stored.flags)
    return Prepared(
        account_id, account, ref, draft, body_start, message, sent, trash, replied, claimed, shown
    )


def _check_size(account: AccountConfig, max_send_bytes: int, size: int) -> None:
    """:class:`DraftRefused` when a draft of ``size`` bytes is over the limit saving checks too
    (:func:`sending_limit`); the submission server is asked its SIZE only for a draft over the setting."""
    if size <= max_send_bytes:
        return
    limit = sending_limit(account, max_send_bytes)
    if size > limit.limit:
        raise DraftRefused(
            DraftUnsendable.TOO_LARGE,
            f"it has {size:,} bytes, more than {limit.limited_by} takes ({limit.limit:,})",
        )


def _reply_mailboxes(directory: MailboxDirectory) -> tuple[str, ...]:
    """Where the message a reply answers may be: INBOX, All Mail (Gmail-like servers keep every message
    there), then the other mailboxes a search of all covers (no Drafts), at most
    :data:`MAX_ANSWER_MAILBOXES`."""
    drafts = directory.special_use(DRAFTS)
    found: list[str] = []
    for name in (directory.inbox() or INBOX, *directory.with_role(ALL)[:1], *directory.searchable()):
        if drafts is not None and same_mailbox(name, drafts):
            continue
        if not any(same_mailbox(name, seen) for seen in found):
            found.append(name)
    return tuple(found[:MAX_ANSWER_MAILBOXES])


def still_as_approved(app: Call, prepared: Prepared) -> None:
    """Raise :class:`MessageGone` unless the draft is still in Drafts exactly as it was read: an approval
    on a page may take the user minutes, during which another client may replace (or send) the draft."""
    again = prepare(app, prepared.account_id, prepared.ref)
    again.close()
    if again.draft.sha256().digest() != prepared.draft.sha256().digest():
        raise MessageGone(prepared.ref)


def copy_of(
    prepared: Prepared, *, date: str, header_id: str | None, keep_bcc: bool
) -> Callable[[], Iterable[bytes]]:
    """The draft as it goes out (``smtp/outgoing.py``'s :func:`~mail_imap_mcp.smtp.outgoing.rewritten`),
    given afresh in pieces on each call: its rewritten header block, then its body from the file."""
    draft, body_start = prepared.draft, prepared.body_start
    head = rewritten_head(draft.read_at(0, body_start), date=date, header_id=header_id, keep_bcc=keep_bcc)
    return lambda: chain([head], draft.chunks(body_start, size=SEND_PIECE_BYTES))
