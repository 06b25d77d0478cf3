"""The pass behind the words index that gives its messages vectors (search by meaning, issue 80).

After each sync of the words of an account whose index keeps vectors (``index_meaning``), a thread of its
own (:class:`VectorKeeper`) asks the store for messages without vectors of the model
(:meth:`~.vectors.VectorStore.vectors_todo`, newest first), makes their passages, embeds them and keeps
them (:meth:`~.vectors.VectorStore.put_vectors`) with their densities against the index's reference
(:mod:`.densities`: hubness reduced at no cost to a search), a batch of :data:`BATCH` messages per
transaction, until none is left, then finds again the densities of an older reference, resting after each batch so it takes at most ``[index] meaning_cpu_share`` of a core,
at the lowest priority. It never holds the indexer's lock and writes in short transactions, so a sync of the
words or a search never waits on an embedding; stopped anywhere, what has vectors keeps them and the next
pass goes on with the rest (an index built before vectors existed gains them so). A model that cannot run
here (:class:`~mail_imap_mcp.meaning.model.MeaningUnavailable`) stops it, said by :attr:`VectorKeeper.
unavailable`; an engine without vectors is left alone.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast

from mail_imap_mcp.index.densities import DensityKeeper
from mail_imap_mcp.index.engine import IndexLocation
from mail_imap_mcp.index.heap import give_back_heap
from mail_imap_mcp.index.passages import passages
from mail_imap_mcp.index.store import IndexPermissions, IndexStore, IndexUnusable, IndexWriteFailed
from mail_imap_mcp.index.vectors import VectorCounts, VectorStore, VectorTodo
from mail_imap_mcp.meaning.model import MeaningUnavailable, TextModel
from mail_imap_mcp.meaning.unavailable import fatal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger("mail_imap_mcp.index")
Built = TypeVar("Built")

#: Messages embedded and kept per transaction.
BATCH = 256
#: Seconds the pass pauses between two batches (the searches and the words' sync run meanwhile).
BATCH_PAUSE_S = 0.01
#: Seconds the pass beside a build waits for more of its words once it has given vectors to what is stored.
BESIDE_WAIT_S = 0.5
#: Seconds before a pass that could not write (another process's lock, a full disk) is tried again.
RETRY_S = 30.0


class CpuShare:
    """How long the pass rests after a batch so that, over time, it takes at most ``share`` of one core:
    the processor time the server's process spent since the pass last rested, times ``1 / share - 1``
    (at least :data:`BATCH_PAUSE_S`). The process's, not the thread's: the multilingual model may run its
    products on more threads (``[index] meaning_threads``), and what else ran meanwhile (a search) only
    makes the pass rest longer."""

    def __init__(self, share: float, clock: Callable[[], float] = time.process_time) -> None:
        self.share = share
        self._clock = clock
        self._since = clock()

    def rest(self) -> float:
        """Seconds to rest now, the processor time counted afresh from here."""
        now = self._clock()
        used, self._since = now - self._since, now
        return max(BATCH_PAUSE_S, used * (1 / self.share - 1))


def lowest_priority() -> bool:
    """Put the calling thread at the lowest scheduling priority (nice 19), so a search's thread wins a
    busy core; whether it could. Linux alone: there a thread's id names it to ``setpriority``; elsewhere
    the same call would name a process."""
    if sys.platform != "linux":
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except OSError:
        return False
    return True


def embedded(model: TextModel, todo: Sequence[VectorTodo]) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
    """Each message's passages' vectors (:func:`~mail_imap_mcp.index.passages.passages`)."""
    per_message = [passages(message.texts) for message in todo]
    vectors = model.embed([text for texts in per_message for text in texts])
    found: dict[tuple[str, int], npt.NDArray[np.float32]] = {}
    start = 0
    for message, texts in zip(todo, per_message, strict=True):
        found[(message.folder, message.uid)] = vectors[start : start + len(texts)]
        start += len(texts)
    return found


def vector_store(store: IndexStore) -> VectorStore | None:
    """``store`` as a :class:`VectorStore`, None for an engine that keeps no vectors."""
    return cast(VectorStore, store) if hasattr(store, "put_vectors") else None


def fill_vectors(
    store: VectorStore,
    model: TextModel,
    stop: Callable[[], bool],
    *,
    batch: int = BATCH,
    pause: Callable[[], object] = lambda: None,
) -> int:
    """Give vectors of ``model`` to every message of ``store`` that has none, a batch per transaction,
    until none is left or ``stop`` says so (asked before each batch; ``pause`` runs after each one), then
    bring the vectors a store keeps in an earlier layout to its own (``repack_vectors``, where it has
    any); the number of messages given vectors. Each batch's densities are found against the reference
    of the moment and kept with its vectors, the reference drawn again where due; then the densities of
    an older reference (or none) are found again (:class:`~.densities.DensityKeeper`)."""
    done = 0
    densities = DensityKeeper(store, model.name)
    while not stop():
        todo = store.vectors_todo(model.name, batch)
        if not todo:
            break
        densities.refresh()
        made = embedded(model, todo)
        store.put_vectors(model.name, made, densities.of(made))
        densities.gave(len(made))
        done += len(todo)
        give_back_heap()
        pause()
    if not stop():
        densities.fill(stop, lambda: (give_back_heap(), pause()), done)
    densities.reference = None  # held only while the pass runs
    give_back_heap()
    repack: Callable[[], int] | None = getattr(store, "repack_vectors", None)
    while repack is not None and not stop() and repack():
        pause()
    return done


def build_beside(
    open_store: Callable[[], IndexStore], model: Callable[[], TextModel], words: Callable[[], Built]
) -> tuple[Built, str]:
    """``words`` (a build of the words, ``mail-imap-mcp index``) with the pass beside it, in a thread on a
    store of its own (``open_store``'s): it gives vectors to what the build has stored so far, waits for more, and runs to its
    end once the build is done (stopped when the build fails). The build's answer, and what the pass did.
    The pass rests while the build stores, so the words are not held back; where the build waits for the
    mail server, the pass has the time."""
    built = threading.Event()
    failed = threading.Event()
    said: list[str] = []
    thread = threading.Thread(
        target=lambda: said.append(_fill_beside(open_store, model, built, failed)), name="vectors-beside"
    )
    thread.start()
    try:
        answer = words()
    except BaseException:
        failed.set()
        raise
    finally:
        built.set()
        thread.join()
    return answer, said[0] if said else "no vectors: the pass failed (see the log)"


def _fill_beside(
    open_store: Callable[[], IndexStore],
    model: Callable[[], TextModel],
    built: threading.Event,
    failed: threading.Event,
) -> str:
    try:
        loaded = model()
    except MeaningUnavailable as exc:
        return f"no vectors: {exc}"
    try:
        store = open_store()
    except (IndexPermissions, IndexUnusable, IndexWriteFailed, OSError) as exc:
        return f"no vectors: {exc}"
    try:
        vectors = vector_store(store)
        if vectors is None:
            return "no vectors: this engine keeps none"
        done = 0
        while not failed.is_set():
            last = built.is_set()  # asked before the pass: what the build stored before it ends is seen
            done += fill_vectors(vectors, loaded, failed.is_set, pause=lambda: failed.wait(BATCH_PAUSE_S))
            if last:
                break
            built.wait(BESIDE_WAIT_S)
        counts = vectors.vector_counts(loaded.name)
        return f"{done} message(s) given vectors; {counts.with_vectors} of {counts.indexed} have them"
    except Exception as exc:  # never a silent dead thread: said, and the build's own answer stands
        log.exception("the vectors beside the build failed")
        return f"no vectors: {exc}"
    finally:
        store.close()


@dataclass
class MeaningStatus:
    """How far an index's vectors are: their counts (None: not counted yet), or why they are not made."""

    counts: VectorCounts | None = None
    unavailable: str | None = None

    def words(self) -> str:
        if self.unavailable is not None:
            return f"unavailable: {self.unavailable}"
        if self.counts is None:
            return "starting"
        if self.counts.partial:
            return f"being made: {self.counts.with_vectors:,} of {self.counts.indexed:,}"
        return "ready"


class VectorKeeper:
    """The pass of one index, in a thread of its own on a store of its own, run after each words sync
    (:meth:`due`) until ``stop`` is set, with the model ``model`` gives (the config's,
    :func:`~mail_imap_mcp.meaning.model.model_for`), taking at most ``cpu_share`` of a core over time
    (:class:`CpuShare`; below one, at the lowest priority: :func:`lowest_priority`)."""

    def __init__(
        self,
        account_id: str,
        location: IndexLocation,
        stop: threading.Event,
        model: Callable[[], TextModel],
        *,
        cpu_share: float = 1.0,
    ) -> None:
        self.account_id = account_id
        self.cpu_share = cpu_share
        self.location = location
        self.status = MeaningStatus()
        self._stop = stop
        self._model = model
        self._due = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def due(self) -> None:
        """A words sync ended: the pass runs (its thread started on the first call; never again where the
        model cannot run)."""
        if self.status.unavailable is not None:
            return
        self._due.set()
        with self._guard:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"vectors-{self.account_id}", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        store: IndexStore | None = None
        if self.cpu_share < 1:
            lowest_priority()
        try:
            while not self._stop.is_set():
                self._due.wait()
                self._due.clear()
                if self._stop.is_set():
                    return
                try:
                    model = self._model()
                except MeaningUnavailable as exc:
                    self.status = MeaningStatus(unavailable=str(exc))
                    log.info("index of %s keeps no vectors: %s", self.account_id, exc)
                    return
                if store is None:
                    try:
                        store = self.location.open().store
                    except (IndexPermissions, IndexUnusable, IndexWriteFailed, OSError) as exc:
                        log.info("index of %s: its vectors wait for the index (%s)", self.account_id, exc)
                        continue  # the words sync says why; its next end brings the pass back
                vectors = vector_store(store)
                if vectors is None:
                    return
                if not self._pass(vectors, model):
                    store.close()
                    store = None
        except Exception:  # never a silent dead thread: said; the next words sync starts it again
            log.exception("index of %s: its vectors failed", self.account_id)
        except BaseException as exc:  # a panic of the model's Rust code: the model cannot run, said once
            fatal(exc)
            self.status = MeaningStatus(unavailable=f"the model failed ({type(exc).__name__}: {exc})")
            log.error("index of %s keeps no vectors: its model failed (%s)", self.account_id, exc)
        finally:
            if store is not None:
                store.close()
            with self._guard:
                self._thread = None

    def _pass(self, store: VectorStore, model: TextModel) -> bool:
        """One pass; False when the store is to be opened again (damaged, or written by nobody now)."""
        try:
            self.status = MeaningStatus(store.vector_counts(model.name))
            share = CpuShare(self.cpu_share)
            done = fill_vectors(store, model, self._stop.is_set, pause=lambda: self._stop.wait(share.rest()))
            self.status = MeaningStatus(store.vector_counts(model.name))
            model.rest()
            give_back_heap()
            if done:
                log.info("index of %s: %d messages given vectors", self.account_id, done)
            return True
        except IndexUnusable as exc:  # the words sync moves it aside and builds it again
            log.warning("index of %s: its vectors stopped (%s)", self.account_id, exc)
            return False
        except IndexWriteFailed as exc:  # another process's lock, a full disk: later
            log.info("index of %s: its vectors wait (%s)", self.account_id, exc)
            self._stop.wait(RETRY_S)
            self._due.set()
            return True

    def join(self, timeout: float) -> None:
        self._due.set()  # wakes a thread waiting for a pass, to see it is stopped
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
