"""The index brought up to date before it answers: one pipelined round trip asks the server about every
folder searched, and only the folders that changed are synced.

The round trip is ``LIST ... RETURN (STATUS (MESSAGES UIDNEXT UIDVALIDITY HIGHESTMODSEQ))`` where the
server has LIST-STATUS and the search covers every mailbox (the listing also says which mailboxes a search
of every mailbox covers, and which folders are gone), else one ``STATUS`` per folder, all sent at once. A
folder is up to date when its UIDVALIDITY, UIDNEXT, message count and (with CONDSTORE) HIGHESTMODSEQ
are what the index stored. Without CONDSTORE, or in a folder whose stored HIGHESTMODSEQ is 0 (a
``NOMODSEQ`` mailbox: the server keeps no MODSEQ there, whatever it advertises), a flag change shows in
none of them: when the query tests flags, every such folder searched is synced (its flags compared).
The selected mailbox, whose STATUS may come from the session's stale view, is kept open and asked with
NOOP in the same round trip, and synced when NOOP tells of a change (:mod:`mail_imap_mcp.imap.kept_open`; nothing
selected, INBOX is opened so). Syncing stops at the deadline: what is left is said, never hidden (:attr:`Freshness.stale`). The deadline is also checked inside a
folder's sync, before each round trip of its flag comparison and of its fetch of new messages (small
chunks, pipelined): one folder with much new mail cannot overrun it.

Where the account has a push view (``index_fresh_from_push``: :attr:`~.sync.Indexer.pushed`), its
listing, after one NOOP on its own NOTIFY connection, gives the counts instead: no STATUS, no LIST on the
session, for every folder the view knows; the others are asked as above.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mail_imap_mcp.imap.kept_open import changed_under, send_keep_open
from mail_imap_mcp.imap.mailboxes import list_with_message_counts
from mail_imap_mcp.imap.pipeline import status_each
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.flag_check import FlagTest, check_flags
from mail_imap_mcp.index.store import WRITER_WAIT_S, FolderState, IndexWriteFailed
from mail_imap_mcp.index.sync import Indexer, plan_of, sync_folder_now
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.errors import MailboxGone, MailboxMissing, MailError
from mail_imap_mcp.mail.mailboxes import MailboxCounts, MailboxInfo

#: New messages one search fetches into the index of a folder before it answers.
FRESH_LIMIT = 2000
#: UIDs per ``UID FETCH`` of new messages before a search answers: small rounds (:data:`~.sync.IN_FLIGHT`
#: of them pipelined), so the deadline is checked often inside a folder with much new mail.
FRESH_CHUNK = 50


@dataclass
class Freshness:
    """What the check found: the listing (where it listed), the folders synced, and those left behind."""

    boxes: list[MailboxInfo] | None = None
    synced: list[str] = field(default_factory=list)
    #: The folders synced whose copy in the index changed (a sync without MODSEQ may find none changed).
    altered: list[str] = field(default_factory=list)
    #: Folders not brought up to date within the deadline, and the messages they are behind by (at least).
    stale: dict[str, int] = field(default_factory=dict)
    round_trips: int = 0
    #: The counts came from the account's push view (one NOOP on its connection) instead of STATUS.
    pushed: bool = False
    #: Where some of the folders searched took the push view's counts: seconds since it last asked the
    #: STATUS of every folder (what the server told it since vouches for the rest).
    pushed_checked_s_ago: float | None = None
    #: Why the index could not be written (another process holding its write lock past the deadline, a
    #: full disk): the folders left are in :attr:`stale`, the answer is the index's as it was.
    write_failure: str | None = None
    #: Folders of a search of several that were gone (deleted by another client) when their sync opened
    #: them, and the error: left out of the page, which says so as a search by the server does.
    gone: dict[str, MailError] = field(default_factory=dict)
    #: Folders of a shared index another instance was syncing past the deadline (their lease held).
    held_elsewhere: list[str] = field(default_factory=list)
    #: Folders brought up to date though not searched (``also``) that were left behind as :attr:`stale`
    #: ones are: what the index holds of them is not known to be the server's.
    unsure: list[str] = field(default_factory=list)
    #: The background sync of this process held the index until the deadline: no folder was asked about
    #: (:attr:`stale` names every one searched); the next search, once it has let go, catches up.
    held_by_sync: bool = False


def status_items(session: ImapSession) -> bytes:
    modseq = b" HIGHESTMODSEQ" if session.profile.condstore else b""
    return b"(MESSAGES UIDNEXT UIDVALIDITY" + modseq + b")"


def _flags_known(stored: FolderState | None, condstore: bool) -> bool:
    """STATUS tells a flag change of the folder: the server has CONDSTORE and the index stored a
    HIGHESTMODSEQ of it (0: unknown, the mailbox keeps none)."""
    return condstore and stored is not None and stored.highestmodseq > 0


def needs_sync(
    stored: FolderState | None, counts: MailboxCounts | None, *, condstore: bool, flags_tested: bool
) -> bool:
    """The folder must be synced before the index answers: STATUS (``counts``) differs from what the
    index ``stored``, or the query tests flags and STATUS cannot tell a flag change (:func:`_flags_known`)."""
    if stored is None or counts is None or not stored.complete:
        return True
    flags_known = _flags_known(stored, condstore)
    if flags_tested and not flags_known:
        return True
    same = (
        counts.uidvalidity == stored.uidvalidity
        and counts.uidnext == stored.uidnext
        and counts.messages == stored.messages
    )
    return not same or (flags_known and (counts.highestmodseq or 0) != stored.highestmodseq)


def refresh(
    session: ImapSession,
    indexer: Indexer,
    folders: Sequence[str] | None,
    *,
    deadline: float,
    flags_tested: bool,
    scope: Callable[[list[MailboxInfo]], list[str]] | None = None,
    flag_tests: Sequence[FlagTest] = (),
    also: Sequence[str] = (),
) -> Freshness:
    """Bring ``folders`` up to date in ``indexer`` until ``deadline`` (``time.monotonic()``); ``folders``
    None: those ``scope`` picks from the listing (every folder the personality's plan keeps, without
    ``scope``), the folders outside the plan dropped. ``flags_tested``: the query tests flags or
    keywords; ``flag_tests``: those tests, where known, read from the server in one round trip in the
    folders whose counts are current but whose flags STATUS cannot tell. A write the index refuses (another process holding it past the deadline, a full disk)
    leaves the folders not synced yet as they are (:attr:`Freshness.write_failure`); a folder of several
    deleted before its sync is said in :attr:`Freshness.gone`. Once a folder was synced,
    :attr:`~.sync.Indexer.after_sync` is called (the vectors of what came in are made at once). ``also``:
    folders the index holds that are brought up to date as well though not searched (the mailbox of the
    message ``like`` names), asked in the same round trip; one gone from the server is dropped from the
    index."""
    try:
        fresh = _refresh(session, indexer, folders, deadline, flags_tested, scope, flag_tests, also)
    finally:  # each write of the search waited at most its remaining budget: later writes wait as usual
        indexer.store.wait_for_writers(WRITER_WAIT_S)
    if fresh.synced and indexer.after_sync is not None:
        indexer.after_sync()
    return fresh


def _refresh(
    session: ImapSession,
    indexer: Indexer,
    folders: Sequence[str] | None,
    deadline: float,
    flags_tested: bool,
    scope: Callable[[list[MailboxInfo]], list[str]] | None,
    flag_tests: Sequence[FlagTest],
    also: Sequence[str],
) -> Freshness:
    fresh = Freshness()
    condstore = session.profile.condstore
    trips = session.client.round_trips
    # STATUS of the selected mailbox may be answered from the session's view (Dovecot does), stale when
    # another client added mail: NOOP goes first, in the same round trip, and the mailbox is synced
    # whatever its STATUS says when NOOP told of a change (:mod:`mail_imap_mcp.imap.kept_open`: kept open, INBOX opened).
    kept = send_keep_open(session, folders, may_open=indexer.pushed is None)
    # A push view's listing, after one NOOP on its own connection (while the NOOP or EXAMINE above is on
    # its way): every folder it knows the counts of needs no STATUS (the module's docstring says when).
    pushed = indexer.pushed() if indexer.pushed is not None else None
    fresh.pushed = pushed is not None
    known = {box.name: box.counts for box in pushed.boxes if box.counts is not None} if pushed else {}
    if folders is None:
        boxes = (
            pushed.boxes if pushed is not None else list_with_message_counts(session, status_items(session))
        )
        counts = {box.name: box.counts for box in boxes if box.counts is not None}
        if pushed is not None or not session.profile.lists_with_status:
            asked = [box.name for box in boxes if box.selectable and box.name not in known]
            counts = {**counts, **status_each(session, asked, status_items(session))}
        fresh.boxes = indexer.listed[:] = boxes
        plan = plan_of(session, MailboxDirectory(boxes, {}))
        try:  # drops the folders gone: a write, bounded as the syncs are
            indexer.store.wait_for_writers(deadline - time.monotonic())
            indexer.adopt(plan)
        except IndexWriteFailed as exc:
            fresh.write_failure = str(exc)
        names = scope(boxes) if scope is not None else plan.always
    else:
        names = list(folders)
    searched = len(names)
    held = indexer.store.folders() if also else {}
    names += [name for name in dict.fromkeys(also) if name not in names and name in held]
    if folders is not None:
        counts = {name: known[name] for name in names if name in known}
        counts.update(
            status_each(session, [name for name in names if name not in known], status_items(session))
        )
    selected = changed_under(session, kept)
    fresh.round_trips = session.client.round_trips - trips
    if pushed is not None and any(name in known for name in names):
        fresh.pushed_checked_s_ago = pushed.checked_s_ago
    stored = indexer.store.folders()
    # Where the query's flag tests are known, a folder whose counts are current has them read from the
    # server (one round trip for all, :mod:`.flag_check`) instead of every flag compared by a sync.
    by_counts = flags_tested and bool(flag_tests)
    # The selected mailbox's STATUS may be stale (NOOP told of a change): it is synced, or its flags
    # checked, whose EXAMINE tells what STATUS may not.
    # A folder not searched (``also``) is synced where its messages changed, whatever its flags.
    changed = [
        name
        for number, name in enumerate(names)
        if (name == selected and not by_counts)
        or needs_sync(
            stored.get(name),
            counts.get(name),
            condstore=condstore,
            flags_tested=flags_tested and not by_counts and number < searched,
        )
    ]
    if by_counts:
        unknown = [
            name
            for name in names[:searched]
            if name not in changed and (name == selected or not _flags_known(stored[name], condstore))
        ]
        changed += _check_flags(session, indexer, unknown, stored, flag_tests, deadline, fresh, selected)
    for name in changed:
        now = time.monotonic()
        if now >= deadline or fresh.write_failure is not None:
            fresh.stale[name] = _behind(stored.get(name), counts.get(name))
            continue
        # A shared index's folder another instance is syncing: waited for within the deadline, then
        # answered as it is (that instance stores what it fetches).
        leases = indexer.folder_leases
        if leases is not None and not leases.hold(name, deadline):
            fresh.held_elsewhere.append(name)
            fresh.stale[name] = _behind(stored.get(name), counts.get(name))
            continue
        # Another process writing the file (a second server, ``mail-imap-mcp index``) is waited for
        # within the deadline only: past it the index answers as it is (IndexBusy).
        try:
            indexer.store.wait_for_writers(deadline - now)
            left, altered = sync_folder_now(
                session, indexer, name, limit=FRESH_LIMIT, deadline=deadline, chunk_size=FRESH_CHUNK
            )
        except IndexWriteFailed as exc:
            fresh.write_failure = str(exc)
            fresh.stale[name] = _behind(stored.get(name), counts.get(name))
            continue
        except (MailboxMissing, MailboxGone) as exc:
            if names.index(name) >= searched:  # not searched: the index no longer answers with its mail
                _drop_gone(indexer, name, fresh)
                continue
            if folders is not None and searched == 1:  # the one mailbox asked for: not_found
                raise
            fresh.gone[name] = exc
            continue
        finally:
            if leases is not None:
                leases.release(name)
        fresh.synced.append(name)
        if altered:
            fresh.altered.append(name)
        if left:
            fresh.stale[name] = left
    for name in names[searched:]:  # not searched: the page is not behind for them, said apart
        if fresh.stale.pop(name, None) is not None:
            fresh.unsure.append(name)
    return fresh


def _check_flags(
    session: ImapSession,
    indexer: Indexer,
    names: list[str],
    stored: dict[str, FolderState],
    tests: Sequence[FlagTest],
    deadline: float,
    fresh: Freshness,
    selected: str | None,
) -> list[str]:
    """The flags ``tests`` name brought up to date in ``names`` (:func:`~.flag_check.check_flags`); the
    folders it could not read, to be synced."""
    if not names:
        return []
    now = time.monotonic()
    if now >= deadline or fresh.write_failure is not None:
        fresh.stale.update(dict.fromkeys(names, 0))
        return []
    try:
        indexer.store.wait_for_writers(deadline - now)
        changed, unread = check_flags(session, indexer, names, stored, tests, unsure=selected)
    except IndexWriteFailed as exc:
        fresh.write_failure = str(exc)
        fresh.stale.update(dict.fromkeys(names, 0))
        return []
    fresh.synced += changed
    fresh.altered += changed
    return unread


def _drop_gone(indexer: Indexer, name: str, fresh: Freshness) -> None:
    """Drop folder ``name``, gone from the server, from the index (a write refused: said, and kept)."""
    try:
        indexer.store.drop_folder(name)
    except IndexWriteFailed as exc:
        fresh.write_failure = str(exc)
        fresh.stale[name] = 0


def _behind(stored: FolderState | None, counts: MailboxCounts | None) -> int:
    total = (counts.messages or 0) if counts is not None else 0
    return max(total - (stored.messages if stored is not None else 0), 0)
