"""Whether each ManageSieve server answered as one, as this process found it (docs/rules.md): a custom
server without ManageSieve (Courier) runs no rules managed here, and its rules are then neither listed nor
served. What is found is kept for the process (a restart looks again), or for as long as its look says (a
port that did not answer may be a server slow to start, so that verdict lapses); a server not yet looked
at, or one that could not be reached for a reason that says nothing of ManageSieve (no network, a name
that does not resolve), is taken to offer it until a call finds otherwise. Whoever shows what depends on a
verdict (the tools listed) is told when one changes (:meth:`SievePresence.on_change`), a lapse when it falls
due, not only when the next call asks."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

#: A ManageSieve server, as ``(host, port)``.
Endpoint = tuple[str, int]
#: Calls a function once, after so many seconds, on a thread of its own (:func:`_timer`).
Schedule = Callable[[float, Callable[[], None]], None]


def _timer(seconds: float, call: Callable[[], None]) -> None:
    timer = threading.Timer(seconds, call)
    timer.daemon = True  # a lapse due after the process ends tells no one
    timer.start()


class Look(NamedTuple):
    """What one look at a server found: whether the verdict holds (False: it could not tell), why the
    server offers no ManageSieve (None: it does, or it could not tell), and for how many seconds the
    verdict is kept (for the process, unless said)."""

    holds: bool
    why: str | None
    kept_s: float = math.inf


class _Kept(NamedTuple):
    why: str | None
    until: float  # on the presence's clock


class SievePresence:
    """Each endpoint's verdict: ``None`` where it answered as ManageSieve, else why not in a few words
    (``no ManageSieve on this server (port 4190 refused the connection)``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, schedule: Schedule = _timer) -> None:
        self._clock = clock
        self._schedule = schedule
        self._lock = threading.Lock()
        self._found: dict[Endpoint, _Kept] = {}
        self._looking: dict[Endpoint, threading.Lock] = {}
        self._listeners: dict[object, Callable[[], None]] = {}

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (on whichever thread found it, never holding a lock) whenever an endpoint's
        :meth:`absent` changes: a look found no ManageSieve where it was taken to be offered, or such a
        verdict lapsed or was forgotten. A first verdict that it is offered changes nothing. The function
        returned stops the calls."""
        token = object()
        with self._lock:
            self._listeners[token] = listener

        def stop() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return stop

    def _changed(self, changed: bool) -> None:
        if not changed:
            return
        with self._lock:
            listeners = list(self._listeners.values())
        for listener in listeners:
            listener()

    def absent(self, endpoint: Endpoint) -> str | None:
        """Why ``endpoint`` offers no ManageSieve, where this process found that it does not; else None."""
        with self._lock:
            kept, lapsed = self._kept(endpoint)
        self._changed(lapsed)
        return None if kept is None else kept.why

    def known(self, endpoint: Endpoint) -> bool:
        with self._lock:
            kept, lapsed = self._kept(endpoint)
        self._changed(lapsed)
        return kept is not None

    def learn(self, endpoint: Endpoint, look: Callable[[], Look]) -> str | None:
        """:meth:`absent` of ``endpoint``, looked at first by ``look`` where not known (once at a time: a
        second caller waits for the first's look)."""
        with self._lock:
            kept, lapsed = self._kept(endpoint)
            if kept is None:
                one = self._looking.setdefault(endpoint, threading.Lock())
        self._changed(lapsed)
        if kept is not None:
            return kept.why
        with one:
            with self._lock:
                kept, lapsed = self._kept(endpoint)
            self._changed(lapsed)
            if kept is not None:
                return kept.why
            found = look()
            with self._lock:
                if found.holds:
                    self._found[endpoint] = _Kept(found.why, self._clock() + found.kept_s)
            if found.holds and found.why is not None and math.isfinite(found.kept_s):
                self._schedule(found.kept_s, lambda: self._lapse(endpoint))
            self._changed(found.holds and found.why is not None)  # it was taken to be offered
            return found.why

    def _lapse(self, endpoint: Endpoint) -> None:
        """When a kept "no ManageSieve" falls due: drop it and tell the listeners (a verdict forgotten or
        replaced meanwhile changes nothing; one not yet due, the timer early, is waited for again)."""
        with self._lock:
            kept, now = self._found.get(endpoint), self._clock()
        if kept is not None and kept.why is not None and now < kept.until:
            self._schedule(kept.until - now, lambda: self._lapse(endpoint))
            return
        self.absent(endpoint)

    def _kept(self, endpoint: Endpoint) -> tuple[_Kept | None, bool]:
        """The verdict on ``endpoint`` while it holds (a lapsed one is dropped), and whether a lapsed "no
        ManageSieve" was dropped (it is offered again); called holding the lock."""
        kept = self._found.get(endpoint)
        if kept is not None and self._clock() >= kept.until:
            del self._found[endpoint]
            return None, kept.why is not None
        return kept, False

    def forget(self, endpoint: Endpoint) -> None:
        """Look at ``endpoint`` again on its next use."""
        with self._lock:
            dropped = self._found.pop(endpoint, None)
        self._changed(dropped is not None and dropped.why is not None)


#: This process's verdicts.
SIEVE_PRESENCE = SievePresence()
