"""The mailbox a session has open, kept open and asked with NOOP where a call asks the counts of folders.

A server opens a mailbox to answer its STATUS unless it keeps the counts elsewhere: Dovecot keeps them
in its mailbox list index for every folder but INBOX (``mailbox_list_index_include_inbox`` is off by
default), so on Maildir each STATUS of INBOX reads its whole ``dovecot-uidlist`` (10-29 ms of Dovecot's
CPU at 25,000 messages in INBOX; docs/benchmarks.md). A mailbox the session has open is answered from its
view instead. So a call that asks counts (the freshness check, :func:`counts_keeping_open`) keeps the
selection open and sends ``NOOP`` first, in the same round trip as the STATUS of the folders (where
``UNSELECT`` went): NOOP makes every server tell the session what changed under its view. The selected
mailbox's STATUS, which Dovecot answers from the view as it stood before that NOOP (it runs the two in
parallel) and RFC 3501 advises against, is taken only when NOOP told of no change: the view was then the
mailbox as it is. Where nothing is open and the call covers INBOX, INBOX is EXAMINEd (never SELECTed:
nothing is marked) in the same round trip, its STATUS then answered from the mailbox as it is, once:
the calls after it find it open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mail_imap_mcp.imap.mailboxes import list_with_message_counts
from mail_imap_mcp.imap.pipeline import status_each
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.mailboxes import MailboxCounts, MailboxInfo

INBOX = "INBOX"

#: The STATUS items of a listing's counts (imap_list_mailboxes, a mailbox resource).
COUNT_ITEMS = b"(MESSAGES UNSEEN UIDVALIDITY UIDNEXT)"
#: The counts of a mailbox whose STATUS was refused.
NO_COUNTS = MailboxCounts(None, None, None, None)


@dataclass(frozen=True)
class KeptOpen:
    """The command sent on the open mailbox ``name``: NOOP, or the EXAMINE that opened it."""

    name: str
    tag: bytes
    examined: bool


def send_keep_open(session: ImapSession, folders: Sequence[str] | None, *, may_open: bool) -> KeptOpen | None:
    """Send NOOP on the selected mailbox, or (nothing selected, ``may_open`` and ``folders`` covering
    INBOX: None is every folder) EXAMINE INBOX, to be answered after the round trip's other commands;
    None: neither. ``may_open`` False: the counts may come from elsewhere (a push view), with no round
    trip of the session's for EXAMINE to ride along with."""
    selected = session.selected_mailbox
    if selected is not None:
        return KeptOpen(selected, session.client.send("NOOP"), examined=False)
    if may_open and (folders is None or any(name.upper() == INBOX for name in folders)):
        return KeptOpen(INBOX, session.client.send_examine(INBOX), examined=True)
    return None


def changed_under(session: ImapSession, kept: KeptOpen | None) -> str | None:
    """Read the answer of :func:`send_keep_open`'s command: the open mailbox whose STATUS may be stale
    (NOOP told of a change), to be synced whatever it says; None: every STATUS is of now."""
    if kept is None:
        return None
    if kept.examined:  # opened in this round trip: its STATUS is of the mailbox as it is
        session.adopt_sent_examine(kept.name, kept.tag)
        return None
    return kept.name if session.view_changed(kept.tag) else None


def counts_keeping_open(
    session: ImapSession,
    mailboxes: Sequence[str],
    items: bytes = COUNT_ITEMS,
    refused: dict[str, str] | None = None,
) -> dict[str, MailboxCounts]:
    """STATUS ``items`` of every one of ``mailboxes`` in one round trip, the open mailbox kept open (or
    INBOX opened) and asked with NOOP in it; a mailbox whose STATUS is refused is left out (the server's
    words in ``refused``, where given). When NOOP
    told of a change under the open mailbox (one of ``mailboxes``), its STATUS is asked again behind a
    new EXAMINE of it, in one more round trip: answered from the mailbox as it is, on every server."""
    if not mailboxes:
        return {}
    kept = send_keep_open(session, mailboxes, may_open=True)
    counts = status_each(session, mailboxes, items, refused)
    stale = changed_under(session, kept)
    if stale is not None and stale in mailboxes:
        reopened = KeptOpen(stale, session.client.send_examine(stale), examined=True)
        counts.pop(stale, None)
        if refused is not None:
            refused.pop(stale, None)
        counts.update(status_each(session, [stale], items, refused))
        changed_under(session, reopened)
    return counts


def mailbox_counts(session: ImapSession, name: str) -> MailboxCounts:
    """The counts of one mailbox (:func:`counts_keeping_open`; :data:`NO_COUNTS` when STATUS is refused)."""
    return counts_keeping_open(session, [name]).get(name, NO_COUNTS)


def listing_inbox_open(session: ImapSession) -> list[MailboxInfo]:
    """Every folder with its counts from the listing (LIST-STATUS), for a search of every mailbox, which
    opens INBOX anyway: INBOX is EXAMINEd in the listing's round trip, so Dovecot answers its STATUS from
    that view rather than by reading a closed INBOX's whole uidlist, and the search reads it without
    another EXAMINE (:attr:`~.session.ImapSession.examined_now`). Left as before where the server lists
    without counts, where an earlier call left INBOX open (its counts may be of that older view: the
    search opens it whatever they say) and where a search of every mailbox reads one (Gmail)."""
    if (
        not session.profile.lists_with_status
        or session.personality.every_mailbox_is_one
        or session.selected_mailbox == INBOX
    ):
        return list_with_message_counts(session)
    kept = KeptOpen(INBOX, session.client.send_examine(INBOX), examined=True)
    boxes = list_with_message_counts(session)
    changed_under(session, kept)
    inbox = next((box for box in boxes if box.name == INBOX), None)
    if inbox is not None and inbox.counts is None and session.examined_now == INBOX:
        # A server may leave the selected mailbox out of LIST-STATUS (RFC 5819): EXAMINE counted it.
        opened = session.examine(INBOX)
        inbox.counts = MailboxCounts(opened.exists, None, opened.uidvalidity, opened.uidnext)
    return boxes
