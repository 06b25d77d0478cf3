"""The store in Redis (or Valkey), shared by every instance given the same ``[state] redis_url``.

Needs the Redis client (the ``team`` extra: ``pip install 'mail-imap-mcp[team]'``). Every failure to
reach the server leaves this module as :class:`~mail_imap_mcp.state.StateUnavailable`, the one
boundary where the client's exceptions are caught; the client reconnects on the next call, so the
store recovers by itself once Redis is back.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from mail_imap_mcp.state.store import StateUnavailable, Subscription

log = logging.getLogger("mail_imap_mcp.state")

#: Connect and command timeouts: a call that needs the store fails fast instead of hanging.
SOCKET_TIMEOUT_S = 2.0
#: How often a subscriber's thread retries a lost connection.
RESUBSCRIBE_S = 1.0


def _client_module() -> Any:
    try:
        import redis
    except ImportError:  # the extra is not installed
        raise StateUnavailable(
            "[state] redis_url needs the Redis client: pip install 'mail-imap-mcp[team]'"
        ) from None
    return redis


@contextlib.contextmanager
def _reaching(url_shown: str) -> Iterator[None]:
    redis = _client_module()
    try:
        yield
    except redis.RedisError as exc:
        raise StateUnavailable(f"Redis at {url_shown} cannot be used ({type(exc).__name__}: {exc})") from None
    except ValueError:  # a URL the client cannot read: its words may quote the password
        raise StateUnavailable(f"Redis at {url_shown} cannot be used: the URL cannot be read") from None


def shown_url(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.rsplit("@", 1)[1]
    return f"{scheme}{sep}{rest}"


class _RedisSubscription:
    """A thread that listens on one channel, and subscribes again after a lost connection."""

    def __init__(self, client: Any, channel: str, deliver: Callable[[bytes], None]) -> None:
        self._client, self._channel, self._deliver = client, channel, deliver
        self._closed = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, name=f"redis-sub-{channel}", daemon=True)
        self._thread.start()
        self._ready.wait(SOCKET_TIMEOUT_S)

    def _listen(self) -> None:
        redis = _client_module()
        while not self._closed.is_set():
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self._channel)
                self._ready.set()
                while not self._closed.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is not None and message.get("type") == "message":
                        try:
                            self._deliver(message["data"])
                        except Exception:  # a listener's bug must not end the subscription
                            log.exception("subscriber of %s failed", self._channel)
            # A socket closed under the read (the store closing, or the connection lost) raises OSError
            # or ValueError from the client rather than a RedisError.
            except (redis.RedisError, OSError, ValueError) as exc:
                if self._closed.is_set():
                    return
                log.warning("subscription to %s lost (%s); subscribing again", self._channel, exc)
                self._closed.wait(RESUBSCRIBE_S)
            finally:
                with contextlib.suppress(Exception):
                    pubsub.close()

    def close(self) -> None:
        self._closed.set()


#: Lua: renew a lease (``PEXPIRE``) where the key still holds the caller's value; give one back likewise.
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


class RedisStore:
    """The :class:`~mail_imap_mcp.state.Store` in Redis; thread-safe (the client pools connections)."""

    shared = True

    def __init__(self, url: str) -> None:
        redis = _client_module()
        self.url_shown = shown_url(url)
        with _reaching(self.url_shown):
            self._client = redis.Redis.from_url(
                url,
                socket_timeout=SOCKET_TIMEOUT_S,
                socket_connect_timeout=SOCKET_TIMEOUT_S,
                health_check_interval=30,
            )
        self._subscriptions: list[_RedisSubscription] = []

    def ping(self) -> None:
        """Raise :class:`StateUnavailable` when Redis does not answer."""
        with _reaching(self.url_shown):
            self._client.ping()

    def get(self, key: str) -> bytes | None:
        with _reaching(self.url_shown):
            value: bytes | None = self._client.get(key)
            return value

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:  # MGET needs a key
            return []
        with _reaching(self.url_shown):
            values: list[bytes | None] = self._client.mget(keys)
            return values

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        with _reaching(self.url_shown):
            self._client.set(key, value, px=max(1, int(ttl_s * 1000)))

    def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        with _reaching(self.url_shown):
            return bool(self._client.set(key, value, px=max(1, int(ttl_s * 1000)), nx=True))

    def mark_used(self, key: str, ttl_s: float, *, owner: str = "") -> bool:
        # Redis keeps a key until its time to live unless memory runs out under an eviction policy
        # (docs/team.md: maxmemory-policy noeviction). No count here, in all or per owner: Redis'
        # memory is the operator's to size (docs/team.md), so one user's marks never refuse another's.
        return self.add(key, b"1", ttl_s)

    def take(self, key: str) -> bytes | None:
        with _reaching(self.url_shown):
            value: bytes | None = self._client.getdel(key)
            return value

    def renew(self, key: str, value: bytes, ttl_s: float) -> bool:
        with _reaching(self.url_shown):  # compared and renewed in one step (a script runs alone)
            return bool(self._client.eval(_RENEW, 1, key, value, max(1, int(ttl_s * 1000))))

    def release(self, key: str, value: bytes) -> None:
        with _reaching(self.url_shown):
            self._client.eval(_RELEASE, 1, key, value)

    def incr(self, key: str, ttl_s: float, by: int = 1) -> int:
        with _reaching(self.url_shown):
            pipe = self._client.pipeline(transaction=True)
            pipe.incr(key, by)
            pipe.pexpire(key, max(1, int(ttl_s * 1000)), nx=True)
            count, _ = pipe.execute()
            return int(count)

    def delete(self, key: str) -> None:
        with _reaching(self.url_shown):
            self._client.delete(key)

    def publish(self, channel: str, message: bytes) -> None:
        with _reaching(self.url_shown):
            self._client.publish(channel, message)

    def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Subscription:
        subscription = _RedisSubscription(self._client, channel, deliver)
        self._subscriptions.append(subscription)
        return subscription

    def close(self) -> None:
        for subscription in self._subscriptions:
            subscription.close()
        with contextlib.suppress(Exception):
            self._client.close()
