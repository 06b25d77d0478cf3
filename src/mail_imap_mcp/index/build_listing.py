"""The listing a build starts from: the personality's plan of the folders and, where the server has
LIST-STATUS, every folder's STATUS from the same round trip, so a folder that did not change is left
alone. Its sync would EXAMINE it (on Dovecot with Maildir, a read of the folder's whole uidlist) and ask
what changed (nothing), 4 commands in 2 round trips, holding the indexer's lock, for which a search of
this process waits: the first background sync of a server over 1,000,000 unchanged messages in 40
folders made a search wait up to a folder's EXAMINE.

A folder is left alone only where STATUS tells every change: CONDSTORE, and a HIGHESTMODSEQ the index
stored (:func:`~.freshness.needs_sync` with the flags tested), the folder complete, and not the mailbox
the session has open (its STATUS may be of the session's older view).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mail_imap_mcp.imap.mailboxes import list_with_message_counts
from mail_imap_mcp.imap.personality.standard import IndexPlan
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.freshness import needs_sync, status_items
from mail_imap_mcp.index.store import FolderState
from mail_imap_mcp.index.sync import indexable, plan_of
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.mailboxes import MailboxCounts


@dataclass
class Listing:
    """The plan, and the counts of the folders whose STATUS came with it (none: every folder is synced)."""

    plan: IndexPlan
    counts: dict[str, MailboxCounts] = field(default_factory=dict)
    condstore: bool = False

    def unchanged(self, stored: FolderState | None, name: str) -> bool:
        """Nothing changed in ``name`` since the index ``stored`` it, as its STATUS tells."""
        counts = self.counts.get(name)
        return counts is not None and not needs_sync(
            stored, counts, condstore=self.condstore, flags_tested=True
        )


def listed_with_counts(session: ImapSession) -> Listing:
    """The folders to index (:func:`~.sync.indexable`), with their STATUS where LIST-STATUS is offered."""
    if not session.profile.lists_with_status:
        return Listing(indexable(session))
    boxes = list_with_message_counts(session, status_items(session))
    counts = {box.name: box.counts for box in boxes if box.counts is not None}
    selected = session.selected_mailbox
    if selected is not None:
        counts.pop(selected, None)
    return Listing(plan_of(session, MailboxDirectory(boxes, {})), counts, session.profile.condstore)
