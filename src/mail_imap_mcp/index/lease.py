"""One sync of a shared index across instances: a lease in the shared state (Redis ``SET NX`` with a time
to live, :meth:`~mail_imap_mcp.state.Store.add`), renewed by its holder every third of it.

Every instance of a team deployment opens the same index in PostgreSQL; the one that holds the index's
lease builds it and keeps it current, the others read it (their searches still bring the folders they
search up to date first: their writes take turns on the index's advisory lock). A holder that stops (its
process killed, its connection to Redis lost) renews nothing: the lease lapses within :data:`LEASE_TTL_S`
and another instance, which asks for it every third of that, takes it within twice the time to live.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator

from mail_imap_mcp.state import StateUnavailable, Store
from mail_imap_mcp.state.clock import Clock, Pause, sleep_on

log = logging.getLogger("mail_imap_mcp.index")

#: Seconds a lease lasts unless its holder renews it.
LEASE_TTL_S = 10.0


def holder_token() -> bytes:
    """The value this instance's leases hold: its host and process, then a random part (an operator who
    reads the key in Redis sees which instance syncs the index; two instances never hold the same)."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(8).hex()}".encode()


class SyncLease:
    """The lease ``key`` of one index, as this instance holds it (or not)."""

    def __init__(
        self,
        store: Store,
        key: str,
        ttl_s: float | None = None,
        clock: Clock = time.monotonic,
        pause: Pause = threading.Event.wait,
    ) -> None:
        self.key = key
        self.ttl_s = LEASE_TTL_S if ttl_s is None else ttl_s
        self._store = store
        #: The renewals and a follower's asks run on these (a test moves its own with the store's).
        self._clock, self._pause = clock, pause
        self._token = holder_token()
        self._held = threading.Event()
        self._stop = threading.Event()
        self._renewing: threading.Thread | None = None

    @property
    def held(self) -> bool:
        """This instance holds the lease (as of its last renewal)."""
        return self._held.is_set()

    def hold(self) -> bool:
        """Hold the lease: True where this instance held it already or takes it now; a holder renews it
        in the background every third of its time to live until :meth:`release` or a renewal fails."""
        if self._held.is_set():
            return True
        try:
            taken = self._store.add(self.key, self._token, self.ttl_s)
        except StateUnavailable as exc:
            log.info("index lease %s not asked: %s", self.key, exc)
            return False
        if taken:
            self._held.set()
            self._stop.clear()
            self._renewing = threading.Thread(target=self._renew, name=f"lease-{self.key}", daemon=True)
            self._renewing.start()
        return taken

    def wait_to_ask(self, stop: threading.Event) -> bool:
        """Sleep a third of the time to live (a follower asks that often, a holder renews); False once
        ``stop`` is set."""
        third = self.ttl_s / 3
        return sleep_on(self._clock, self._pause, stop, third, third, lambda: not stop.is_set())

    def _renew(self) -> None:
        while self.wait_to_ask(self._stop):
            try:
                kept = self._store.renew(self.key, self._token, self.ttl_s)
            except StateUnavailable:
                kept = False
            if not kept:
                log.warning("index lease %s lost: another instance may sync this index now", self.key)
                self._held.clear()
                return

    def abandon(self) -> None:
        """Stop renewing without giving the lease back (what a killed process does): it lapses."""
        self._stop.set()
        self._held.clear()

    def release(self) -> None:
        """Give the lease back at once (a closing instance): another takes it at its next ask."""
        was_held = self._held.is_set()
        self.abandon()
        if was_held:
            with contextlib.suppress(StateUnavailable):  # out of reach: it lapses
                self._store.release(self.key, self._token)


#: Seconds a folder's lease lasts at least unless renewed (an instance that dies mid-sync leaves it to
#: lapse this soon).
FOLDER_LEASE_MIN_TTL_S = 5.0
#: Seconds between two asks of a folder's lease another instance holds.
FOLDER_LEASE_POLL_S = 0.05


class FolderLeases:
    """The short leases of one shared index's folders, one instance syncing a folder at a time: a search
    takes one to sync a folder its freshness round trip found changed, and the instance holding the
    index's lease (:class:`SyncLease`) takes one for each folder its own sync works on. The others wait
    for it, a search within its time budget, then answer from the index as it is, saying which folders
    are behind. Within one instance a folder's lease is shared by its threads (they take turns on the
    indexer's lock); held, it is renewed every third of its time to live until its last holder gives it
    back, so a sync longer than that keeps it."""

    def __init__(
        self,
        store: Store,
        key: str,
        ttl_s: float = FOLDER_LEASE_MIN_TTL_S,
        clock: Clock = time.monotonic,
        pause: Pause = threading.Event.wait,
    ) -> None:
        self.key = key
        self.ttl_s = ttl_s
        self._store = store
        #: The waits for a lease and the renewals run on these (a test moves its own with the store's).
        self._clock, self._pause = clock, pause
        self._never = threading.Event()  # what a pause waits on: nothing ends one early
        self._token = holder_token()
        #: The folders this instance holds, and how many of its threads hold each.
        self._held: dict[str, int] = {}
        self._guard = threading.Lock()
        self._renewing: threading.Thread | None = None

    def _key(self, folder: str) -> str:
        return f"{self.key}:{folder}"

    def _taken(self, folder: str) -> bool:
        """Held by this instance already (one more holder), or taken now in the shared state."""
        with self._guard:
            if folder in self._held:
                self._held[folder] += 1
                return True
            try:
                taken = self._store.add(self._key(folder), self._token, self.ttl_s)
            except StateUnavailable as exc:
                log.info("folder lease %s not asked: %s", self._key(folder), exc)
                taken = True
            if taken:
                self._held[folder] = 1
                if self._renewing is None:
                    self._renewing = threading.Thread(
                        target=self._renew, name=f"lease-{self.key}", daemon=True
                    )
                    self._renewing.start()
            return taken

    def hold(self, folder: str, deadline: float) -> bool:
        """Take ``folder``'s lease, waiting while another instance holds it until ``deadline`` (of the
        clock given, ``time.monotonic()``); False: not taken (held elsewhere past the deadline). Redis out
        of reach takes it at once: the index's own lock still keeps two writes apart."""
        while not self._taken(folder):
            left = deadline - self._clock()
            if left <= 0:
                return False
            self._pause(self._never, min(FOLDER_LEASE_POLL_S, left))
        return True

    @contextlib.contextmanager
    def holding(self, folder: str, wait_s: float) -> Iterator[bool]:
        """``folder``'s lease held while the block runs (waiting up to ``wait_s`` seconds for another
        instance to give it back; whether it was taken), given back after."""
        taken = self.hold(folder, self._clock() + wait_s)
        try:
            yield taken
        finally:
            if taken:
                self.release(folder)

    def release(self, folder: str) -> None:
        """Give ``folder``'s lease back (it is this instance's) once its last holder here is done."""
        with self._guard:
            left = self._held.get(folder, 0) - 1
            if left > 0:
                self._held[folder] = left
                return
            self._held.pop(folder, None)
        with contextlib.suppress(StateUnavailable):  # out of reach: it lapses
            self._store.release(self._key(folder), self._token)

    def abandon(self) -> None:
        """Stop renewing every folder held, without giving them back (what a killed process does): they
        lapse within their time to live."""
        with self._guard:
            self._held.clear()

    def _renew(self) -> None:
        """Renew the folders held every third of their time to live; ends when none is held."""
        third = self.ttl_s / 3
        while True:
            sleep_on(self._clock, self._pause, self._never, third, third, lambda: True)
            with self._guard:
                held = list(self._held)
                if not held:
                    self._renewing = None
                    return
            for folder in held:
                try:
                    kept = self._store.renew(self._key(folder), self._token, self.ttl_s)
                except StateUnavailable:
                    kept = True  # out of reach: nobody else can take it there either
                if not kept and folder in self._held:  # not given back meanwhile
                    log.warning("folder lease %s lapsed: another instance may sync it now", self._key(folder))


def folder_lease(leases: FolderLeases | None, folder: str) -> contextlib.AbstractContextManager[bool]:
    """A shared index's lease of ``folder`` (``leases``) held while a sync works on it, waiting up to the
    lease's time to live for another instance to give it back, then going on (the index's writer lock
    still keeps two writes apart); nothing where the index is not shared (``leases`` None)."""
    if leases is None:
        return contextlib.nullcontext(True)
    return leases.holding(folder, leases.ttl_s)
