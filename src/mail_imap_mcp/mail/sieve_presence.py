"""Whether each ManageSieve server answered as one, as this process found it (docs/rules.md): a custom
server without ManageSieve (Courier) runs no rules managed here, and its rules are then neither listed nor
served. What is found is kept for the process (a restart looks again); a server not yet looked at, or one
that could not be reached for a reason that says nothing of ManageSieve (no network, a name that does not
resolve), is taken to offer it until a call finds otherwise."""

from __future__ import annotations

import threading
from collections.abc import Callable

#: A ManageSieve server, as ``(host, port)``.
Endpoint = tuple[str, int]


class SievePresence:
    """Each endpoint's verdict: ``None`` where it answered as ManageSieve, else why not in a few words
    (``no ManageSieve on this server (port 4190 refused the connection)``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[Endpoint, str | None] = {}
        self._looking: dict[Endpoint, threading.Lock] = {}

    def absent(self, endpoint: Endpoint) -> str | None:
        """Why ``endpoint`` offers no ManageSieve, where this process found that it does not; else None."""
        with self._lock:
            return self._found.get(endpoint)

    def known(self, endpoint: Endpoint) -> bool:
        with self._lock:
            return endpoint in self._found

    def learn(self, endpoint: Endpoint, look: Callable[[], tuple[bool, str | None]]) -> str | None:
        """:meth:`absent` of ``endpoint``, looked at first by ``look`` where not yet known (once at a time:
        a second caller waits for the first's look). ``look`` answers whether its verdict holds (False: it
        could not tell) and the verdict."""
        with self._lock:
            if endpoint in self._found:
                return self._found[endpoint]
            one = self._looking.setdefault(endpoint, threading.Lock())
        with one:
            with self._lock:
                if endpoint in self._found:
                    return self._found[endpoint]
            holds, why = look()
            with self._lock:
                if holds:
                    self._found[endpoint] = why
            return why

    def forget(self, endpoint: Endpoint) -> None:
        """Look at ``endpoint`` again on its next use."""
        with self._lock:
            self._found.pop(endpoint, None)


#: This process's verdicts.
SIEVE_PRESENCE = SievePresence()
