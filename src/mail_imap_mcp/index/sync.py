"""Bringing one account's index up to date over IMAP, folder by folder, in bounded steps.

A folder's sync (:class:`FolderSync`) first asks what changed since the index's state of it through the
changes machinery (:func:`mail_imap_mcp.imap.changes.changes_since`, with a token made from that state):
with QRESYNC the expunged messages (``VANISHED``) and flag changes since the stored HIGHESTMODSEQ; with
CONDSTORE alone the flag changes and which indexed UIDs remain; without either, every indexed message's
flags compared with the stored ones. It applies them, then fetches the messages at or above the stored
UIDNEXT in chunks of :data:`CHUNK` UIDs, :data:`IN_FLIGHT` chunks pipelined per round trip
(:func:`~mail_imap_mcp.index.document.index_items`: metadata and ``BODY.PEEK`` only), each chunk stored
in one transaction with the folder's new UIDNEXT, so a killed run loses at most the chunks in flight and
the next one continues from there. Memory holds one round trip's chunks, whatever the folder's size.
With ``index_attachments`` a chunk's messages with document attachments are fetched again for those
parts (:mod:`.attachments`: bounded per message and per round trip) before the chunk is stored.

Which folders are synced is the personality's answer (:meth:`~mail_imap_mcp.imap.personality.Personality.
index_plan`: every folder; on Gmail All Mail, and Spam and Trash once a search asked for them). Where the
server has labels, each message's labels are read with it and read again for every message whose flags
changed (a label change raises its MODSEQ as a flag change does): one more ``UID FETCH`` of those alone.

A changed UIDVALIDITY drops the folder's rows and indexes it again; a folder no longer listed (or no longer
in the plan) is dropped (:meth:`Indexer.prune`).
"""

from __future__ import annotations

import threading
import time
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import NamedTuple

from mail_imap_mcp.content.sandbox_worker import SandboxWorker
from mail_imap_mcp.imap.changes import changes_since, start
from mail_imap_mcp.imap.changes_token import ChangesToken, ChangesTokenError
from mail_imap_mcp.imap.fetch import expunged
from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.personality.standard import IndexPlan
from mail_imap_mcp.imap.push_view import PushListing
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.attachments import AttachmentReading
from mail_imap_mcp.index.document import message_flags
from mail_imap_mcp.index.lease import FolderLeases
from mail_imap_mcp.index.store import FolderState, IndexStore, flag_bits, flag_names
from mail_imap_mcp.index.sync_chunks import IN_FLIGHT, ChunkIndexing, OnProgress
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.mailboxes import MailboxInfo

#: UIDs per ``UID FETCH``.
#: Whom the sync's changes tokens are fitted to: nobody (they stay in this process, never sealed).
NOBODY = ""
CHUNK = 250
#: UIDs per ``UID FETCH (FLAGS)`` of the flag comparison where the folder keeps no MODSEQ.
FLAG_CHUNK = 1000


def _flags_from(bits: int, keywords: str) -> tuple[str, ...]:
    """Stored flags as the changes machinery compares them (sorted, as the server spells them)."""
    return tuple(sorted([*flag_names(bits), *keywords.split()]))


def indexable(session: ImapSession) -> IndexPlan:
    """The folders an index keeps, as the server's personality plans them from one LIST."""
    boxes = list_mailboxes(session)
    return plan_of(session, MailboxDirectory(boxes, {}))


def plan_of(session: ImapSession, directory: MailboxDirectory) -> IndexPlan:
    """The personality's plan for the folders of ``directory``."""
    selectable = [box.name for box in directory.boxes if box.selectable]
    return session.personality.index_plan(directory, selectable)


class FolderSync(ChunkIndexing):
    """One folder brought up to date: :meth:`begin` applies the changes and finds the new messages,
    :meth:`fetch` indexes them a bounded step at a time."""

    def __init__(
        self,
        store: IndexStore,
        account_id: str,
        name: str,
        text_bytes: int,
        attachments: AttachmentReading | None = None,
        *,
        keyed: bool = False,
        worker: SandboxWorker | None = None,
        skipped: Counter[str] | None = None,
        lock: threading.RLock | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        self.store = store
        self.account_id = account_id
        self.keyed = keyed
        self.name = name
        self.text_bytes = text_bytes
        self.attachments = attachments
        #: Where attachments are read (a child of their own each without one), and what was not, by reason.
        self.worker = worker
        self.skipped = skipped
        #: Held while a chunk is stored (not while it is fetched or its attachments read), so the other
        #: syncs of the file in this process wait a chunk's write at most; :meth:`_store_chunk`.
        self.lock = lock or threading.RLock()
        #: Asked before each chunk and each message's attachments: True stops the sync there.
        self.stop = stop or (lambda: False)
        self.pending: array[int] = array("Q")
        self.state: FolderState | None = None
        self.server_uidnext = 1
        self.server_messages = 0
        #: Stored messages whose flags the last :meth:`begin` could not compare within its deadline.
        self.unchecked = 0
        #: Messages indexed without their attachments' text, to index again (:meth:`plan_backfill`).
        self.unread: array[int] = array("Q")
        #: The last :meth:`begin` found something to store: an expunge, a flag change, new messages, or
        #: a new UIDVALIDITY (False: the index held the folder as the server has it).
        self.altered = False

    def begin(self, session: ImapSession, deadline: float | None = None) -> int:
        """Apply the folder's expunges and flag changes; the number of messages left to fetch. Where the
        folder keeps no MODSEQ its stored flags are compared with the server's a bounded round at a
        time, until ``deadline`` (``time.monotonic()``): :attr:`unchecked` counts those not compared."""
        view = session.examine(self.name)
        session.settle()
        view = session.refresh_counts(view)
        state = self.store.start_folder(self.name, view.uidvalidity)
        self.server_uidnext, self.server_messages = view.uidnext, view.exists
        # A folder stored without MODSEQs (seen NOMODSEQ once) whose SELECT now keeps them: read the
        # server's HIGHESTMODSEQ before the full flag comparison below, and track MODSEQs from it on.
        modseq_now = 0
        if state.highestmodseq == 0 and session.profile.condstore and (state.uidnext == 1 or view.modseqs):
            modseq_now = start(session, self.account_id, self.name, NOBODY).modseq
            if state.uidnext == 1:
                state = replace(state, highestmodseq=modseq_now)
        try:
            changes = changes_since(session, self._token(session, state), NOBODY)
        except (UidValidityChanged, ChangesTokenError):
            self.store.drop_folder(self.name)
            left = self.begin(session, deadline)
            self.altered = True
            return left
        state = replace(state, highestmodseq=changes.token.modseq if changes.token.modseq else 0)
        changed, removed = dict(changes.changed), list(changes.expunged)
        if not state.highestmodseq:
            changed, removed = self._compare_flags(session, deadline)
            if modseq_now and not self.unchecked:  # every flag compared as of modseq_now
                state = replace(state, highestmodseq=modseq_now)
        labels = self._labels(session, list(changed)) if changed else None
        self.store.update(state, flags=changed, removed=removed, labels=labels)
        self.state = state
        self.pending = array("Q", sorted(changes.new))
        self.altered = bool(changed or removed or self.pending)
        if not self.pending:
            self._finish()
        return len(self.pending)

    def _labels(self, session: ImapSession, uids: list[int]) -> dict[int, tuple[str, ...]] | None:
        """The labels of the messages ``uids`` now (None: the server has no labels)."""
        personality = session.personality
        if not personality.has_labels:
            return None
        items = list(personality.index_items)
        wanted = set(uids)
        labels: dict[int, tuple[str, ...]] = {}
        # In chunks, as the build fetches: a mass archive changes the labels of thousands at once.
        for first in range(0, len(uids), CHUNK * IN_FLIGHT):
            batch = uids[first : first + CHUNK * IN_FLIGHT]
            answers = session.fetch_each([(batch[i : i + CHUNK], items) for i in range(0, len(batch), CHUNK)])
            labels.update(
                {uid: personality.stored_labels(answer) for uid, answer in answers.items() if uid in wanted}
            )
        return labels

    def _token(self, session: ImapSession, state: FolderState) -> ChangesToken:
        modseq = state.highestmodseq
        common = (self.account_id, self.name, state.uidvalidity, state.uidnext, modseq, 0)
        if modseq and session.qresync:
            return ChangesToken(*common)
        uids = tuple(self.store.uids(self.name))
        if modseq and session.profile.condstore:
            return ChangesToken(*common, uids=uids)
        # No MODSEQ: the token asks for the new messages alone; :meth:`_compare_flags` compares the rest.
        return ChangesToken(*common[:4], 0, 0, uids=(), flags=())

    def _compare_flags(
        self, session: ImapSession, deadline: float | None
    ) -> tuple[dict[int, tuple[str, ...]], list[int]]:
        """The stored messages' flags compared with the server's (a folder without MODSEQ): those that
        changed (with their flags now) and those gone, ``UID FETCH (FLAGS)`` in chunks of
        :data:`FLAG_CHUNK`, :data:`IN_FLIGHT` per round trip, until ``deadline``."""
        stored = self.store.flags_of(self.name)
        uids = sorted(stored)
        changed: dict[int, tuple[str, ...]] = {}
        removed: list[int] = []
        step = FLAG_CHUNK * IN_FLIGHT
        self.unchecked = len(uids)
        for first in range(0, len(uids), step):
            if deadline is not None and time.monotonic() >= deadline:
                break
            batch = uids[first : first + step]
            # RFC822.SIZE too: a message another session expunged is answered with its flags alone.
            answers = session.fetch_each(
                [
                    (batch[i : i + FLAG_CHUNK], ["FLAGS", "RFC822.SIZE"])
                    for i in range(0, len(batch), FLAG_CHUNK)
                ]
            )
            for uid in batch:
                answer = answers.get(uid)
                if answer is None or expunged(answer):
                    removed.append(uid)
                    continue
                now = _flags_from(*flag_bits(message_flags(answer)))
                if now != _flags_from(*stored[uid]):
                    changed[uid] = now
            self.unchecked -= len(batch)
        return changed, removed

    def _finish(self) -> None:
        assert self.state is not None
        with self.lock:
            stored = self.store.folders().get(self.name)
            if stored is None or stored.uidvalidity != self.state.uidvalidity:
                return  # dropped or indexed again meanwhile
            uidnext = max(stored.uidnext, self.state.uidnext, self.server_uidnext)
            self.state = replace(stored, uidnext=uidnext, complete=True)
            self.store.update(self.state, flags={}, removed=())

    def _resume(self) -> bool:
        """Go on from the folder's state as stored now, not as this sync last wrote it: another sync of
        the folder between two steps (a search's freshness check between two steps of the background
        sync) may have gone further, and writing the older state back would lower its UIDNEXT below
        messages the index holds (VANISHED names only UIDs below it: their expunge would go unseen).
        The pending messages below the stored UIDNEXT were looked at by that sync. False: the folder
        was dropped or indexed again meanwhile, and this sync stores nothing more."""
        assert self.state is not None
        stored = self.store.folders().get(self.name)
        if stored is None or stored.uidvalidity != self.state.uidvalidity:
            self.pending = array("Q")
            return False
        self.state = stored
        del self.pending[: bisect_left(self.pending, stored.uidnext)]
        return True

    def fetch(
        self,
        session: ImapSession,
        limit: int,
        on_progress: OnProgress | None = None,
        *,
        deadline: float | None = None,
        chunk_size: int = CHUNK,
    ) -> int:
        """Index up to ``limit`` of the pending messages (chunks of ``chunk_size``, :data:`IN_FLIGHT` per
        round trip) and none after ``deadline`` (``time.monotonic()``: checked before each round trip);
        the number left."""
        assert self.state is not None
        if not self._resume():
            return 0
        if not self.pending:
            self._finish()
            return 0
        session.examine(self.name)
        session.settle()
        taken = self.pending[: max(limit, 1)]
        chunks = [list(taken[i : i + chunk_size]) for i in range(0, len(taken), chunk_size)]
        done = self._index_chunks(session, chunks, on_progress, deadline)
        del self.pending[:done]
        if not self.pending:
            self._finish()
        return len(self.pending)

    def plan_backfill(self) -> int:
        """With ``index_attachments``: find the messages indexed without their attachments' text (while
        it was off), to index again with it (:meth:`backfill`); how many."""
        self.unread = array("Q", self.store.unread_attachments(self.name) if self.attachments else ())
        return len(self.unread)

    def backfill(self, session: ImapSession, limit: int, on_progress: OnProgress | None = None) -> int:
        """Index up to ``limit`` of the messages :meth:`plan_backfill` found again, their attachments read
        (each chunk one transaction: a killed run goes on where it stopped); the number left."""
        stored = self.store.folders().get(self.name)
        if stored is None or self.state is None or stored.uidvalidity != self.state.uidvalidity:
            self.unread = array("Q")  # dropped or indexed again meanwhile: read with the new messages
            return 0
        self.state = stored
        session.examine(self.name)
        session.settle()
        taken = self.unread[: max(limit, 1)]
        chunks = [sorted(taken[i : i + CHUNK]) for i in range(0, len(taken), CHUNK)]
        del self.unread[: self._index_chunks(session, chunks, on_progress)]
        return len(self.unread)


class Indexer:
    """The index of one account kept up to date: the folders listed, each synced in steps."""

    def __init__(
        self,
        store: IndexStore,
        account_id: str,
        text_bytes: int,
        *,
        lock: threading.RLock | None = None,
        attachments: AttachmentReading | None = None,
        stop: Callable[[], bool] | None = None,
        folder_leases: FolderLeases | None = None,
    ) -> None:
        self.store = store
        self.account_id = account_id
        self.text_bytes = text_bytes
        #: A shared index's folder leases, taken by a search before it syncs a folder and by the background
        #: sync for each folder it works on (None: not shared).
        self.folder_leases = folder_leases
        #: Every mailbox's counts as a push view was told them (:class:`~mail_imap_mcp.imap.push_view.PushView`),
        #: asked by a search instead of the server's STATUS (None: not used, or it cannot vouch now).
        self.pushed: Callable[[], PushListing | None] | None = None
        #: Called once a search's freshness check stored what changed (the pass that gives the new
        #: messages vectors; None: nothing follows a sync of the words).
        self.after_sync: Callable[[], None] | None = None
        #: How attachments are read into the index (None: they are not, ``index_attachments`` off).
        self.attachments = attachments
        #: The sandboxed child that reads them, one document after another: started by the first
        #: document of a sync, stopped at its end (:meth:`rest`), so no idle child waits between syncs.
        self.worker = SandboxWorker() if attachments is not None else None
        #: Attachments not read, by reason (``extract_timeout_s``, ``memory``, ``extract_failed``, ...).
        self.skipped_attachments: Counter[str] = Counter()
        #: Held while a folder is synced, so the background sync and a search's freshness check of the
        #: same process (each with an indexer of its own, sharing this lock) do not interleave.
        self.lock = lock or threading.RLock()
        #: Asked between chunks: True stops a sync (the server shutting down).
        self.stop = stop
        #: Messages are keyed by the server's own id (the last plan adopted said so).
        self.keyed = False
        #: The mailboxes as the last freshness check of every mailbox listed them (empty: none yet): what
        #: a search of every mailbox covers, guessed before the check lists them again. Held in place,
        #: so that a copy of this indexer (a search ranked by meaning) keeps it for the next search.
        self.listed: list[MailboxInfo] = []

    def adopt(self, plan: IndexPlan) -> list[str]:
        """Follow the personality's ``plan``: key messages as it says, and drop the folders it no longer
        keeps (their names)."""
        self.keyed = plan.one_row_per_message
        return self.prune(plan.kept)

    def prune(self, listed: Sequence[str]) -> list[str]:
        """Drop the folders not in ``listed`` (deleted or renamed on the server, or no longer planned);
        their names."""
        kept = set(listed)
        gone = [name for name in self.store.folders() if name not in kept]
        for name in gone:
            self.store.drop_folder(name)
        return gone

    def folder(self, name: str) -> FolderSync:
        return FolderSync(
            self.store,
            self.account_id,
            name,
            self.text_bytes,
            self.attachments,
            keyed=self.keyed,
            worker=self.worker,
            skipped=self.skipped_attachments,
            lock=self.lock,
            stop=self.stop,
        )

    def rest(self) -> None:
        """Stop the attachment reader's child, if one runs (the next document starts a fresh one)."""
        if self.worker is not None:
            self.worker.close()


class FolderSynced(NamedTuple):
    """What :func:`sync_folder_now` did: the messages ``left`` behind, and whether it ``altered`` the
    index (a folder synced where nothing changed is as the store held it: a page searched before stands)."""

    left: int
    altered: bool


def sync_folder_now(
    session: ImapSession,
    indexer: Indexer,
    name: str,
    *,
    limit: int,
    on_progress: OnProgress | None = None,
    deadline: float | None = None,
    chunk_size: int = CHUNK,
) -> FolderSynced:
    """Bring one folder up to date on ``session`` (fetching at most ``limit`` new messages, in chunks of
    ``chunk_size``, nothing more after ``deadline``): how many new messages, and messages whose flags
    were not compared, are left (0: up to date), and whether the index's copy changed."""
    with indexer.lock:
        sync = indexer.folder(name)
        left = sync.begin(session, deadline)
        if left:
            try:
                left = sync.fetch(session, limit, on_progress, deadline=deadline, chunk_size=chunk_size)
            finally:
                indexer.rest()
        return FolderSynced(left + sync.unchecked, sync.altered)
