"""A folder's new messages indexed a chunk at a time (:class:`ChunkIndexing`, what
:class:`~mail_imap_mcp.index.sync.FolderSync` does with them): :data:`IN_FLIGHT` chunks fetched per round
trip, each chunk's attachments read where ``index_attachments`` says so, each chunk stored in one
transaction unless another sync of the folder stored first."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mail_imap_mcp.content.sandbox_worker import SandboxWorker
from mail_imap_mcp.imap.fetch import expunged
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.attachments import (
    AttachmentReading,
    PartRead,
    attachment_plan,
    attachment_text,
    rounds,
)
from mail_imap_mcp.index.document import index_items, indexed_message, message_parts
from mail_imap_mcp.index.store import FolderState, IndexedMessage, IndexStore

#: ``UID FETCH`` commands sent before the first answer is read.
IN_FLIGHT = 4

#: Called with (folder, messages indexed now, bytes of their answers).
OnProgress = Callable[[str, int, int], None]


class ChunkIndexing:
    """Fetching, reading and storing chunks of one folder's messages; the folder's sync holds the state."""

    store: IndexStore
    name: str
    text_bytes: int
    keyed: bool
    attachments: AttachmentReading | None
    worker: SandboxWorker | None
    skipped: Counter[str] | None
    lock: threading.RLock
    stop: Callable[[], bool]
    state: FolderState | None

    def _index_chunks(
        self,
        session: ImapSession,
        chunks: list[list[int]],
        on_progress: OnProgress | None,
        deadline: float | None = None,
    ) -> int:
        """Fetch and store the messages of ``chunks`` (ascending UIDs each), :data:`IN_FLIGHT` chunks per
        round trip, each chunk one transaction; the messages of the leading chunks stored before
        ``deadline``, a stop (:attr:`stop`), or another sync of the folder storing first (the chunk is
        then left to the next step, fetched again from the state that sync left)."""
        assert self.state is not None
        personality = session.personality
        items = index_items(self.text_bytes, personality.index_items)
        done = 0
        for round_start in range(0, len(chunks), IN_FLIGHT):
            if (deadline is not None and time.monotonic() >= deadline) or self.stop():
                break
            batch = chunks[round_start : round_start + IN_FLIGHT]
            answers = session.fetch_each([(chunk, items) for chunk in batch])
            for chunk in batch:
                if self.stop():
                    return done
                found = {}
                for uid in chunk:
                    response = answers.get(uid)
                    if response is None or expunged(response):
                        continue  # gone meanwhile: VANISHED or the UID comparison says so next time
                    found[uid] = response
                size = sum(len(v) for r in found.values() for v in r.values() if isinstance(v, bytes))
                try:
                    texts, read = self._attachment_texts(session, found)
                except _Stopped:
                    return done
                messages = [
                    indexed_message(
                        uid,
                        r,
                        texts.get(uid, ""),
                        global_id=personality.identity_of(r) if self.keyed else None,
                        labels=personality.stored_labels(r),
                        attachments_read=self.attachments is not None,
                    )
                    for uid, r in found.items()
                ]
                size += read
                if not self._store_chunk(chunk[-1] + 1, messages):
                    return done
                if on_progress is not None:
                    on_progress(self.name, len(chunk), size)
                done += len(chunk)
        return done

    def _store_chunk(self, uidnext: int, messages: list[IndexedMessage]) -> bool:
        """Store a chunk's ``messages`` (the folder's UIDNEXT raised to ``uidnext``) under :attr:`lock`,
        unless another sync of the folder stored something since this one last did (its state no longer
        the one stored): the chunk was fetched before that sync's changes (an expunge, new flags) and
        would undo them. False: not stored."""
        assert self.state is not None
        with self.lock:
            stored = self.store.folders().get(self.name)
            if stored != self.state:
                return False
            self.store.put(replace(stored, uidnext=max(stored.uidnext, uidnext)), messages)
            self.state = self.store.folders()[self.name]
        return True

    def _attachment_texts(
        self, session: ImapSession, found: dict[int, dict[bytes, Any]]
    ) -> tuple[dict[int, str], int]:
        """The text of the attachments of ``found`` (by UID; none unless ``index_attachments``), and the
        bytes fetched for it."""
        reading = self.attachments
        if reading is None:
            return {}, 0
        plans: dict[int, list[PartRead]] = {}
        for uid, response in found.items():
            plan = attachment_plan(message_parts(response), reading.fetch_bytes)
            if plan:
                plans[uid] = plan
        texts, size = {}, 0
        try:
            for requests in rounds(plans):
                answers = session.fetch_each(requests)
                for (uid, *_), _ in requests:
                    if self.stop():  # a document may take seconds to read
                        raise _Stopped
                    answer = answers.get(uid)
                    if answer is None or expunged(answer):
                        continue
                    size += sum(len(v) for v in answer.values() if isinstance(v, bytes))
                    texts[uid] = attachment_text(answer, plans[uid], reading, self.worker, self.skipped)
        finally:
            # The child holds one of the few sandbox slots: kept between two chunks (IMAP round trips,
            # pauses, folders without attachments) it left a build of hours holding it, and the user's
            # own attachment reads waited for a slot until they failed.
            if self.worker is not None:
                self.worker.close()
        return texts, size


class _Stopped(Exception):
    """The sync was asked to stop (:attr:`ChunkIndexing.stop`) between two messages' attachments."""
