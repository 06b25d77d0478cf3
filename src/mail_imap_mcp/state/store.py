"""The store interface and its in-process implementation."""

from __future__ import annotations

import heapq
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol


class StateUnavailable(Exception):
    """The store cannot be reached (Redis down, refused, timed out; the state directory's file not
    writable): nothing was read or written there. ``setting``: what the user checks. Worded by the failure
    registry as ``unavailable`` (retryable)."""

    def __init__(self, detail: str, *, setting: str = "redis_url") -> None:
        super().__init__(detail)
        self.detail = detail
        self.setting = setting


class UsedMarkersFull(Exception):
    """No more single uses can be recorded until some expire (:meth:`Store.mark_used`): the use is
    refused rather than an earlier one forgotten. ``per_owner``: the caller's own share is full (else
    the whole store is). Worded by the failure registry as ``limit_exceeded`` (retryable)."""

    def __init__(self, limit: int, *, per_owner: bool = False) -> None:
        whose = "by this user" if per_owner else "in all"
        super().__init__(f"{limit} single uses recorded {whose}, none expired yet")
        self.limit = limit
        self.per_owner = per_owner


class Subscription(Protocol):
    """A channel being listened to; :meth:`close` stops the deliveries."""

    def close(self) -> None: ...


class Store(Protocol):
    """Keys to bytes with a time to live, counters, single-use values and publish/subscribe.

    Every method may raise :class:`StateUnavailable`; none blocks for long.
    """

    #: Whether every instance, on any machine, sees what this one writes and hears what it publishes
    #: (Redis); not so for this process's memory, nor for the state directory's file (one machine).
    shared: bool

    def get(self, key: str) -> bytes | None: ...

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The values of ``keys`` in their order, None where missing or expired (``[]`` for no keys),
        read in one step: one round trip to Redis (``MGET``) where ``get`` costs one a key."""
        ...

    def set(self, key: str, value: bytes, ttl_s: float) -> None: ...

    def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        """Set ``key`` only where it is not set: True for the one caller that set it."""
        ...

    def take(self, key: str) -> bytes | None:
        """The value of ``key``, removed in the same step: only one caller ever gets it."""
        ...

    def renew(self, key: str, value: bytes, ttl_s: float) -> bool:
        """Set ``key``'s time to live again where it still holds ``value`` (a lease its holder keeps);
        False where it lapsed or another holds it."""
        ...

    def release(self, key: str, value: bytes) -> None:
        """Delete ``key`` where it still holds ``value`` (a lease given back by its holder alone)."""
        ...

    def incr(self, key: str, ttl_s: float, by: int = 1) -> int:
        """Add ``by`` (one unless said) to the counter ``key`` (0 when missing) and return it; its time
        to live starts with its first increment."""
        ...

    def mark_used(self, key: str, ttl_s: float, *, owner: str = "") -> bool:
        """Record the single use ``key`` of ``owner`` (a user's tag) for ``ttl_s`` (the used thing's
        own lifetime): True for the one caller that recorded it, False when it was recorded before. A
        mark is never forgotten before its time (no other key pushes it out); :class:`UsedMarkersFull`
        where no more fit, in the owner's share or in all."""
        ...

    def delete(self, key: str) -> None: ...

    def publish(self, channel: str, message: bytes) -> None: ...

    def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Subscription:
        """Call ``deliver(message)`` (on a thread of the store's) for each message published on
        ``channel`` from now on, by any process sharing the store."""
        ...

    def close(self) -> None: ...


#: At most this many keys in memory: the oldest go first (every key has a time to live anyway).
MAX_MEMORY_KEYS = 10_000
#: At most this many single uses recorded in memory (:meth:`MemoryStore.mark_used`), apart from the keys:
#: each lives until its own expiry, and past this many a new use is refused (confirmation tokens live
#: five minutes: 50,000 confirmations within five minutes on one process, about 16 MB).
MAX_USED_MARKS = 50_000
#: At most this many of them per owner (a user), so that one user confirming by script is refused
#: before the others are (1,000 within five minutes: one every 0.3 s, more than a person confirms).
MAX_USED_MARKS_PER_USER = 1_000


class _MemorySubscription:
    def __init__(self, store: MemoryStore, channel: str, deliver: Callable[[bytes], None]) -> None:
        self._store, self.channel, self.deliver = store, channel, deliver

    def close(self) -> None:
        self._store._unsubscribe(self)


class MemoryStore:
    """The store of one process (thread-safe): what the server did before there was a store."""

    shared = False

    def __init__(
        self,
        *,
        max_keys: int = MAX_MEMORY_KEYS,
        max_used: int = MAX_USED_MARKS,
        max_used_per_owner: int = MAX_USED_MARKS_PER_USER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._values: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        #: The single uses (key: expiry and owner), their expiries in a heap, soonest first, and how
        #: many each owner holds.
        self._used: dict[str, tuple[float, str]] = {}
        self._used_expiries: list[tuple[float, str]] = []
        self._used_by_owner: dict[str, int] = {}
        self._max_used = max_used
        self._max_used_per_owner = max_used_per_owner
        self._subscribers: list[_MemorySubscription] = []
        self._lock = threading.Lock()
        self._max_keys = max_keys
        self._clock = clock

    def _live(self, key: str) -> bytes | None:
        entry = self._values.get(key)
        if entry is None:
            return None
        if entry[1] <= self._clock():
            del self._values[key]
            return None
        return entry[0]

    def _put(self, key: str, value: bytes, ttl_s: float) -> None:
        self._values[key] = (value, self._clock() + ttl_s)
        self._values.move_to_end(key)
        while len(self._values) > self._max_keys:
            self._values.popitem(last=False)

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self._live(key)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        with self._lock:
            return [self._live(key) for key in keys]

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        with self._lock:
            self._put(key, value, ttl_s)

    def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        with self._lock:
            if self._live(key) is not None:
                return False
            self._put(key, value, ttl_s)
            return True

    def take(self, key: str) -> bytes | None:
        with self._lock:
            value = self._live(key)
            self._values.pop(key, None)
            return value

    def renew(self, key: str, value: bytes, ttl_s: float) -> bool:
        with self._lock:
            if self._live(key) != value:
                return False
            self._put(key, value, ttl_s)
            return True

    def release(self, key: str, value: bytes) -> None:
        with self._lock:
            if self._live(key) == value:
                self._values.pop(key, None)

    def incr(self, key: str, ttl_s: float, by: int = 1) -> int:
        with self._lock:
            value = self._live(key)
            count = int(value or b"0") + by
            expires = self._values[key][1] if value is not None else self._clock() + ttl_s
            self._put(key, str(count).encode(), expires - self._clock())
            return count

    def mark_used(self, key: str, ttl_s: float, *, owner: str = "") -> bool:
        with self._lock:
            now = self._clock()
            while self._used_expiries and self._used_expiries[0][0] <= now:
                expires, gone = heapq.heappop(self._used_expiries)
                mark = self._used.get(gone)
                if mark is not None and mark[0] == expires:
                    del self._used[gone]
                    self._count_used(mark[1], -1)
            if key in self._used:
                return False
            if self._used_by_owner.get(owner, 0) >= self._max_used_per_owner:
                raise UsedMarkersFull(self._max_used_per_owner, per_owner=True)
            if len(self._used) >= self._max_used:
                raise UsedMarkersFull(self._max_used)
            self._used[key] = (now + ttl_s, owner)
            self._count_used(owner, 1)
            heapq.heappush(self._used_expiries, (now + ttl_s, key))
            return True

    def _count_used(self, owner: str, change: int) -> None:
        held = self._used_by_owner.get(owner, 0) + change
        if held:
            self._used_by_owner[owner] = held
        else:  # owners holding none are forgotten: the count stays as small as the marks
            del self._used_by_owner[owner]

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)

    def publish(self, channel: str, message: bytes) -> None:
        with self._lock:
            listeners = [s for s in self._subscribers if s.channel == channel]
        for listener in listeners:
            listener.deliver(message)

    def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Subscription:
        subscription = _MemorySubscription(self, channel, deliver)
        with self._lock:
            self._subscribers.append(subscription)
        return subscription

    def _unsubscribe(self, subscription: _MemorySubscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    def close(self) -> None:
        with self._lock:
            self._subscribers.clear()


#: A shared secret is kept this long (and made again, with every cursor and token it sealed then
#: refused as forged, only if Redis lost it).
SECRET_TTL_S = 10 * 365 * 86400.0


def shared_secret(store: Store, name: str, size: int = 32) -> bytes:
    """The secret ``name`` every process sharing ``store`` uses: made by the first to ask, read by the
    others (:class:`StateUnavailable` when the store cannot be reached)."""
    key = f"mim:secret:{name}"
    store.add(key, secrets.token_bytes(size), SECRET_TTL_S)
    value = store.get(key)
    if value is None or len(value) != size:  # removed between the two steps: make it again
        value = secrets.token_bytes(size)
        store.set(key, value, SECRET_TTL_S)
    return value
