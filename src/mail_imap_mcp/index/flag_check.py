"""The flags a query tests, read from the server in one round trip, where STATUS cannot tell a change.

Without CONDSTORE (Courier), or in a ``NOMODSEQ`` folder, a flag change shows in no number STATUS
answers, so a query that tests flags (``is:unread``, ``flagged``, a keyword) cannot trust the stored
flags. Comparing every message's flags in every folder (a sync) took 2.95 s for such a query over every
folder of a Courier account where the server answered in 0.48 s. Instead every such folder answers, behind
its EXAMINE and in one round trip for all, a ``UID SEARCH`` of each flag the query tests; where a stored
message's flag differs from what the server says now, it is set as the server says. The query's answer is
then exact for the flags it tests, at about the cost of the server's own search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from mail_imap_mcp.imap import parsing
from mail_imap_mcp.imap.mailbox_state import MailboxState
from mail_imap_mcp.imap.pipeline import Command, MailboxRead, MailboxReply, read_each
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.store import FLAG_BITS, FolderState, flag_names
from mail_imap_mcp.index.sync import Indexer
from mail_imap_mcp.query import HasFlag, HasKeyword, Key, search_keys

FlagTest = HasFlag | HasKeyword


def check_flags(
    session: ImapSession,
    indexer: Indexer,
    folders: Sequence[str],
    stored: Mapping[str, FolderState],
    tests: Sequence[FlagTest],
    unsure: str | None = None,
) -> tuple[list[str], list[str]]:
    """Set the stored flags ``tests`` name as the server has them now, in every one of ``folders``
    (each stored), in one round trip: the folders whose flags changed, and those that could not be read
    or whose EXAMINE shows mail came or went (gone, recreated, or the selected mailbox whose STATUS came
    from a stale view, ``unsure``: a sync of theirs finds out). An index write that fails raises
    :class:`~mail_imap_mcp.index.store.IndexWriteFailed`."""
    wanted = list(dict.fromkeys(replace(test, present=True) for test in tests))
    searches = [[_token(key) for key in search_keys(test)] for test in wanted]
    # The folder whose STATUS may be stale is also asked for its UIDs from the stored UIDNEXT on: one
    # there is mail that came, whatever EXAMINE's count says (Courier's EXAMINE says no UIDNEXT). Each
    # SEARCH is a read of its own (its own EXAMINE, all in one round trip): Dovecot may answer two
    # pipelined SEARCHes of one mailbox side by side, their untagged answers mixed.
    if unsure is not None and unsure in folders:
        searches.append([b"UID", f"{stored[unsure].uidnext}:*".encode()])
    reads = [
        MailboxRead(name, [Command.search(tokens)], uidvalidity=stored[name].uidvalidity)
        for name in folders
        for tokens in searches[: len(wanted) + (name == unsure)]
    ]
    replies: dict[str, list[MailboxReply]] = {}
    for reply in read_each(session, indexer.account_id, reads):
        replies.setdefault(reply.mailbox, []).append(reply)
    changed: list[str] = []
    unread: list[str] = []
    for name, parts in replies.items():
        known = stored[name]
        answers = [parsing.search_uids(list(part.answers[0])) for part in parts if part.answers]
        failed = any(part.failure is not None or part.state is None for part in parts)
        came = not failed and name == unsure and any(uid >= known.uidnext for uid in answers.pop())
        if failed or came or any(_moved(part.state, known) for part in parts if part.state is not None):
            unread.append(name)  # EXAMINE says what STATUS may not have: mail came or went
            continue
        having = [set(uids) for uids in answers]
        updates = _differing(indexer.store.flags_of(name), wanted, having)
        if updates:
            indexer.store.update(known, flags=updates, removed=())
            changed.append(name)
    return changed, unread


def _moved(state: MailboxState, stored: FolderState) -> bool:
    """EXAMINE shows mail came or went since ``stored`` (a UIDNEXT of 0: EXAMINE said none)."""
    if (state.uidvalidity, state.exists) != (stored.uidvalidity, stored.messages):
        return True
    return bool(state.uidnext) and state.uidnext != stored.uidnext


def _token(key: Key) -> bytes:
    return key if isinstance(key, bytes) else str(key).encode("ascii")


def _differing(
    flags: Mapping[int, tuple[int, str]], tests: Sequence[FlagTest], having: Sequence[set[int]]
) -> dict[int, tuple[str, ...]]:
    """The new flags of each stored message (``flags``: bits and keywords) whose tested flags differ
    from what the server said (``having``: the UIDs with each of ``tests``)."""
    updates: dict[int, tuple[str, ...]] = {}
    for uid, (bits, keywords) in flags.items():
        now_bits, now_keywords = bits, keywords.split()
        for test, uids in zip(tests, having, strict=True):
            if isinstance(test, HasFlag):
                bit = FLAG_BITS[test.flag]
                now_bits = now_bits | bit if uid in uids else now_bits & ~bit
                continue
            kept = [word for word in now_keywords if word.casefold() != test.keyword.casefold()]
            now_keywords = [*kept, test.keyword] if uid in uids else kept
        if (now_bits, sorted(now_keywords)) != (bits, sorted(keywords.split())):
            updates[uid] = (*flag_names(now_bits), *now_keywords)
    return updates
