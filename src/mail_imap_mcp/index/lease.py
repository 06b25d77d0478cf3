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

from mail_imap_mcp.state import StateUnavailable, Store

log = logging.getLogger("mail_imap_mcp.index")

#: Seconds a lease lasts unless its holder renews it.
LEASE_TTL_S = 10.0


def holder_token() -> bytes:
    """The value this instance's leases hold: its host and process, then a random part (an operator who
    reads the key in Redis sees which instance syncs the index; two instances never hold the same)."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(8).hex()}".encode()


class SyncLease:
    """The lease ``key`` of one index, as this instance holds it (or not)."""

    def __init__(self, store: Store, key: str, ttl_s: float | None = None) -> None:
        self.key = key
        self.ttl_s = LEASE_TTL_S if ttl_s is None else ttl_s
        self._store = store
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

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
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


#: Seconds a search's lease of one folder lasts at least (never renewed: a search's sync is bounded by its
#: time budget, and an instance that dies mid-sync leaves it to lapse this soon).
FOLDER_LEASE_MIN_TTL_S = 5.0
#: Seconds between two asks of a folder's lease another instance holds.
FOLDER_LEASE_POLL_S = 0.05


class FolderLeases:
    """The short leases of one shared index's folders that a search takes to sync a folder its freshness
    round trip found changed: one instance syncs a folder at a time; the others wait for it, within their
    search's time budget, then answer from the index as it is, saying which folders are behind."""

    def __init__(self, store: Store, key: str, ttl_s: float = FOLDER_LEASE_MIN_TTL_S) -> None:
        self.key = key
        self.ttl_s = ttl_s
        self._store = store
        self._token = holder_token()

    def _key(self, folder: str) -> str:
        return f"{self.key}:{folder}"

    def hold(self, folder: str, deadline: float) -> bool:
        """Take ``folder``'s lease, waiting while another instance holds it until ``deadline``
        (``time.monotonic()``); False: not taken (held elsewhere past the deadline). Redis out of reach
        takes it at once: the index's own lock still keeps two writes apart."""
        while True:
            try:
                if self._store.add(self._key(folder), self._token, self.ttl_s):
                    return True
            except StateUnavailable as exc:
                log.info("folder lease %s not asked: %s", self._key(folder), exc)
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(FOLDER_LEASE_POLL_S, left))

    def release(self, folder: str) -> None:
        """Give ``folder``'s lease back (it is this instance's)."""
        with contextlib.suppress(StateUnavailable):  # out of reach: it lapses
            self._store.release(self._key(folder), self._token)
