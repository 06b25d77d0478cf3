"""One account's index in a running server: its place in the engine (a file, a schema), its state, and the sync that keeps it current in
the background on a connection of its own.

The background thread builds the index (:func:`~mail_imap_mcp.index.build.build`), then brings it up to
date every :data:`RESYNC_S` seconds, in steps of :data:`BACKGROUND_STEP` messages with a pause between
them, so tool calls on the account's own connection are never starved. Searches read and update the
index through a store of their own (:meth:`AccountIndex.search_store`); both take the indexer's lock
while they sync a folder. A full disk, a damaged file or any other error stops the sync: the index says
``unavailable`` and why, searches go to the server with a warning, and the sync starts again (a damaged
index moved aside and built again; else the same one, every :data:`RETRY_S` seconds). The engine
(:mod:`.engine`, chosen once by the application) says where the index is and opens it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.push_view import PushView
from mail_imap_mcp.index.attachments import AttachmentReading
from mail_imap_mcp.index.build import BuildHooks, build
from mail_imap_mcp.index.engine import IndexLocation
from mail_imap_mcp.index.lease import FolderLeases, SyncLease
from mail_imap_mcp.index.store import IndexBusy, IndexPermissions, IndexStore, IndexUnusable, IndexWriteFailed
from mail_imap_mcp.index.sync import Indexer
from mail_imap_mcp.index.sync_vectors import MeaningStatus, VectorKeeper
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.meaning.model import TextModel

log = logging.getLogger("mail_imap_mcp.index")

#: Seconds between two background syncs of an index that is built.
RESYNC_S = 60.0
#: Seconds before a background sync that failed (the server unreachable) is tried again.
RETRY_S = 30.0
#: Seconds the background sync pauses between two steps of fetching.
STEP_PAUSE_S = 0.05


@dataclass
class IndexStatus:
    """What ``imap_list_accounts`` says of an account's index."""

    #: ``building``, ``ready``, ``behind`` or ``unavailable``.
    state: str
    indexed: int = 0
    total: int = 0
    detail: str | None = None

    def words(self) -> str:
        if self.state == "building":
            return f"building {self.indexed} of {self.total}" if self.total else "building"
        if self.state == "behind":
            return f"behind by {max(self.total - self.indexed, 0)}"
        if self.state == "unavailable":
            return f"unavailable: {self.detail}"
        return "ready"


class AccountIndex:
    """The index of one account while the server runs."""

    def __init__(
        self,
        account_id: str,
        location: IndexLocation,
        text_bytes: int,
        connect: Callable[[], AccountConnection],
        attachments: AttachmentReading | None = None,
        lease: SyncLease | None = None,
        folder_leases: FolderLeases | None = None,
        *,
        push: bool = False,
        meaning: Callable[[], TextModel] | None = None,
        meaning_cpu_share: float = 1.0,
    ) -> None:
        self.account_id = account_id
        #: The account's NOTIFY connection whose counts a search takes instead of STATUS (``push``:
        #: ``index_fresh_from_push``); None: searches ask the server.
        self.push_view = PushView(connect()) if push else None
        #: An index every instance shares: only the instance holding its lease syncs it in the background.
        self.lease = lease
        #: The folders' short leases a sync takes before it works on one, a search's or the background's
        #: (a shared index; None: not shared).
        self.folder_leases = folder_leases
        #: Where the index is, in its engine (and the account it must record).
        self.location = location
        self.text_bytes = text_bytes
        self.attachments = attachments
        self._connect = connect
        self._lock = location.lock()  # an index closed while its sync still ran and the next take turns
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._search_store: IndexStore | None = None
        self._opening = threading.Lock()
        self._search_indexer: Indexer | None = None
        self.status = IndexStatus("building")
        #: A warning of opening the file (moved aside and built again), said once by the next search.
        self.warning: str | None = None
        #: Why the searches' store could not be opened the last time it was tried (it is tried again).
        self.open_failure: str | None = None
        #: The background sync has looked at the index once (until then a search looks for itself).
        self._looked = False
        #: The pass that gives its messages vectors after each sync, with the model ``meaning`` gives
        #: (None: ``index_meaning`` off), taking ``meaning_cpu_share`` of a core.
        self._vectors = (
            None
            if meaning is None
            else VectorKeeper(account_id, location, self._stop, meaning, cpu_share=meaning_cpu_share)
        )

    @property
    def meaning(self) -> MeaningStatus | None:
        """How far the index's vectors are (None: it keeps none, ``index_meaning`` off)."""
        return None if self._vectors is None else self._vectors.status

    def _open(self) -> IndexStore:
        opened = self.location.open()
        if opened.warning:
            self.warning = opened.warning
        return opened.store

    def _indexer(self, store: IndexStore) -> Indexer:
        return Indexer(
            store,
            self.account_id,
            self.text_bytes,
            lock=self._lock,
            attachments=self.attachments,
            stop=self._stop.is_set,
            folder_leases=self.folder_leases,
        )

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def search_indexer(self) -> Indexer | None:
        """The searches' own indexer (its own store's connections); None when the index is unavailable."""
        if self.status.state == "unavailable":
            return None
        with self._opening:  # two first searches at once open one store (the other one leaked)
            if self._search_indexer is None:
                try:
                    store = self._open()
                except IndexBusy as exc:  # its schema being set: the background sync tries again
                    self.open_failure = f"another process is writing it ({exc})"
                    return None
                except (IndexPermissions, IndexUnusable, IndexWriteFailed, OSError) as exc:
                    self.fail(str(exc))
                    return None
                self.open_failure = None
                self._search_store = store
                self._search_indexer = self._indexer(store)
                if self.push_view is not None:
                    self._search_indexer.pushed = self.push_view.listing
                if self._vectors is not None:  # what a search stores gets vectors now, not after RESYNC_S
                    self._search_indexer.after_sync = self._vectors.due
            return self._search_indexer

    @property
    def ready(self) -> bool:
        """The first build is done (every folder reached once): searches may use the index."""
        return self.status.state in {"ready", "behind"}

    def ready_for_search(self) -> bool:
        """:attr:`ready`, or, before the background sync has looked at the index (a start on a built
        index, whose store takes a moment to open: a database's pool), whether the searches' own store
        finds its first build done, said as ``ready`` from then on."""
        if self.ready:
            return True
        if self._looked or self.status.state != "building" or self.search_indexer() is None:
            return False
        store = self._search_store
        folders = store.folders() if store is not None else {}
        if store is not None and folders and all(state.complete for state in folders.values()):
            count = store.count()
            if not self._looked and self.status.state == "building":
                self.status = IndexStatus("ready", count, count)
        return self.ready

    def fail(self, why: str) -> None:
        log.warning("index of %s stopped: %s", self.account_id, why)
        self.status = IndexStatus("unavailable", self.status.indexed, self.status.total, why)

    def start(self) -> None:
        """Start the background sync (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"index-{self.account_id}", daemon=True)
            self._thread.start()

    def _open_to_sync(self, damaged: bool) -> IndexStore | None:
        """The background sync's store (``damaged``: the file is moved aside first, and built again);
        None: the index is unavailable for good (a file others can read), or closed meanwhile. A file
        another process holds locked while this one sets its schema, or one that cannot be written (a
        full disk), is ``unavailable`` until it is opened, tried again every :data:`RETRY_S` seconds."""
        while not self._stop.is_set():
            try:
                if damaged:
                    self._close_search_store()
                    self.warning = f"the index file was damaged; it was moved to {self.location.move_aside()}"
                    log.warning("index of %s: %s and is being built again", self.account_id, self.warning)
                    damaged = False
                store = self._open()
            except IndexBusy as exc:
                self._unavailable(f"another process is writing it ({exc})", warn=False)
                continue
            except (IndexWriteFailed, OSError) as exc:  # a full disk: kept where it is, tried again
                self._unavailable(f"the index could not be opened ({exc})")
                continue
            except (IndexPermissions, IndexUnusable) as exc:
                self.fail(str(exc))
                return None
            if not self.ready:  # a search may have found it built meanwhile
                self.status = IndexStatus("building")
            return store
        return None

    def _unavailable(self, why: str, *, warn: bool = True) -> None:
        """Say ``why`` the index is unavailable, and wait :data:`RETRY_S` seconds to try again."""
        log.log(logging.WARNING if warn else logging.INFO, "index of %s waits: %s", self.account_id, why)
        self.status = IndexStatus(
            "unavailable", self.status.indexed, self.status.total, f"{why}; tried again in {RETRY_S:g} s"
        )
        self._stop.wait(RETRY_S)

    def _close_search_store(self) -> None:
        """Close the searches' store (the next search opens the file again)."""
        with self._opening:
            if self._search_store is not None:
                self._search_store.close()
            self._search_store = self._search_indexer = None

    def _run(self) -> None:
        """Keep the index current until closed; whatever stops a sync (a full disk, a damaged file, any
        error) is said as ``unavailable`` with its reason, and the sync starts again from the file."""
        connection = self._connect()
        damaged = False
        try:
            while not self._stop.is_set():
                store = self._open_to_sync(damaged)
                if store is None:
                    return
                damaged = False
                try:
                    self._keep_current(connection, store)
                except IndexUnusable as exc:  # a damaged page met mid-sync: moved aside, built again
                    damaged = True
                    self.fail(f"the index file is damaged ({exc}); it is moved aside and built again")
                except IndexWriteFailed as exc:
                    self._unavailable(f"the index could not be written ({exc})")
                except Exception as exc:  # never a silent dead thread: said, and tried again
                    log.exception("index of %s: its sync failed", self.account_id)
                    self._unavailable(f"its sync failed ({type(exc).__name__}: {exc})")
                finally:
                    store.close()
        finally:
            connection.close()

    def _keep_current(self, connection: AccountConnection, store: IndexStore) -> None:
        indexer = self._indexer(store)
        built = store.folders() and all(state.complete for state in store.folders().values())
        if built:
            self.status = IndexStatus("ready", store.count(), store.count())
        self._looked = True
        while not self._stop.is_set():
            if self.lease is not None and not self.lease.hold():
                self._follow(store)  # another instance syncs it: asked again every third of the lease
                self.lease.wait_to_ask(self._stop)
                continue
            self._stop.wait(self._sync_once(connection, indexer, store))

    def _follow(self, store: IndexStore) -> None:
        """The state of an index another instance builds and syncs, as it stands in the shared index."""
        folders = store.folders()
        count = store.count()
        built = bool(folders) and all(state.complete for state in folders.values())
        self.status = IndexStatus("ready", count, count) if built else IndexStatus("building", count)

    def _lease_lost(self) -> bool:
        return self.lease is not None and not self.lease.held

    def _sync_once(self, connection: AccountConnection, indexer: Indexer, store: IndexStore) -> float:
        status = self.status

        def plan(folders: int, messages: int) -> None:
            indexed = store.count()
            state = "behind" if status.state in {"ready", "behind"} and messages else status.state
            self.status = IndexStatus(state, indexed, indexed + messages)

        def advance(folder: str, messages: int, size: int) -> None:
            self.status.indexed += messages
            self._stop.wait(STEP_PAUSE_S)

        def stop() -> bool:  # closed, or the lease lapsed (another instance may sync it now)
            return self._stop.is_set() or self._lease_lost()

        hooks = BuildHooks(on_plan=plan, on_progress=advance, stop=stop)
        try:
            build(connection, indexer, hooks, step=500)
        except IndexBusy as exc:  # another process writes the file (``mail-imap-mcp index``): later
            log.info("background index sync of %s waits: %s", self.account_id, exc)
            return RETRY_S
        except MailError as exc:
            log.info("background index sync of %s failed: %s", self.account_id, type(exc).__name__)
            return RETRY_S
        if not stop():
            count = store.count()
            self.status = IndexStatus("ready", count, count)
            self._discard_aside()
            if self._vectors is not None:
                self._vectors.due()
        return RESYNC_S

    def _discard_aside(self) -> None:
        """Delete the copies of this index moved aside: a build of it completed."""
        try:
            removed = self.location.discard_aside()
        except (IndexWriteFailed, IndexUnusable, OSError) as exc:
            log.warning("index of %s: the copies moved aside were not deleted (%s)", self.account_id, exc)
            return
        if removed:
            log.info("index of %s built: deleted %s", self.account_id, ", ".join(removed))

    def close(self) -> None:
        self._stop.set()
        if self.lease is not None:
            self.lease.release()
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive():  # inside one IMAP command: it stops at the next chunk
                log.warning("index of %s: its sync goes on past close", self.account_id)
        if self._vectors is not None:
            self._vectors.join(timeout=5)
        if self._search_store is not None:
            self._search_store.close()
        if self.push_view is not None:
            self.push_view.close()
