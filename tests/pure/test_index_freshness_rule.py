"""Which folders the index's freshness check syncs before a query (issue 35): a folder is up to date
when STATUS says what the index stored, and a flag query trusts that only where HIGHESTMODSEQ tells
flag changes (CONDSTORE and a stored HIGHESTMODSEQ above 0)."""

from __future__ import annotations

from mail_imap_mcp.index.freshness import needs_sync
from mail_imap_mcp.index.store import FolderState
from mail_imap_mcp.mail.mailboxes import MailboxCounts


def status(modseq: int) -> MailboxCounts:
    return MailboxCounts(messages=4, unseen=None, uidvalidity=7, uidnext=5, highestmodseq=modseq)


def test_a_stored_highestmodseq_of_0_is_unknown_so_a_flag_query_syncs_the_folder() -> None:
    """A NOMODSEQ mailbox on a CONDSTORE server: STATUS says 0 before and after another client's flag
    change; only a text query may trust it."""
    stored = FolderState("INBOX", 7, uidnext=5, highestmodseq=0, messages=4, complete=True)
    assert needs_sync(stored, status(0), condstore=True, flags_tested=True)
    assert not needs_sync(stored, status(0), condstore=True, flags_tested=False)
    assert needs_sync(stored, status(0), condstore=False, flags_tested=True)


def test_a_stored_highestmodseq_tells_flag_changes_with_condstore() -> None:
    stored = FolderState("INBOX", 7, uidnext=5, highestmodseq=12, messages=4, complete=True)
    assert not needs_sync(stored, status(12), condstore=True, flags_tested=True)
    assert needs_sync(stored, status(13), condstore=True, flags_tested=True)
    assert needs_sync(stored, status(13), condstore=True, flags_tested=False)
    incomplete = FolderState("INBOX", 7, uidnext=5, highestmodseq=12, messages=4)
    assert needs_sync(incomplete, status(12), condstore=True, flags_tested=False)
