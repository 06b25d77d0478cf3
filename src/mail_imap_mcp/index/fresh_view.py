"""The mailbox a session has open, through the freshness round trip: kept open and asked with NOOP.

A server opens a mailbox to answer its STATUS unless it keeps the counts elsewhere: Dovecot keeps them
in its mailbox list index for every folder but INBOX (``mailbox_list_index_include_inbox`` is off by
default), so on Maildir each STATUS of INBOX reads its whole ``dovecot-uidlist``, and the round trip
grew with the INBOX (15-18 ms at 25,000 messages in INBOX, 1,000,000 over 40 folders, against 5-7 with
INBOX open; docs/benchmarks.md). A mailbox the session has open is answered from its view instead.

So the check keeps the selection open and sends ``NOOP`` first, in the same round trip as the STATUS
of the folders (where ``UNSELECT`` went): NOOP makes every server tell the session what changed under
its view. The selected mailbox's STATUS, which Dovecot answers from the view as it stood before that
NOOP (it runs the two in parallel), is taken only when NOOP told of no change: the view was then the
mailbox as it is. Anything told (new or removed messages, flags, a warning) and the mailbox is synced,
as a mailbox with a stale STATUS is. Where nothing is open and the check covers INBOX, INBOX is
EXAMINEd in the same round trip (its STATUS then answered from the mailbox as it is), once: the checks
after it find it open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mail_imap_mcp.imap.session import ImapSession

INBOX = "INBOX"


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
