"""What every :class:`~mail_imap_mcp.state.Store` answers alike, checked on each (the memory store and the
state directory's file in tests/unit/test_state_file_store.py, Redis in tests/integration/team/
test_state_redis.py): one function per behaviour, given the store and how to let a short time to live
pass (a clock the test moves, or real time for Redis)."""

from __future__ import annotations

from collections.abc import Callable

from mail_imap_mcp.state import Store

#: A time to live no test outlives.
LONG_TTL_S = 3600.0


def holds_get_many(store: Store, short_ttl_s: float, let_pass: Callable[[], None]) -> None:
    """``get_many``: the values in the order asked (a key asked twice answered twice), None for a key
    missing or expired, a counter as its digits, and ``[]`` for no keys. ``let_pass()`` must outlive
    ``short_ttl_s``."""
    store.set("many:a", b"1", LONG_TTL_S)
    store.set("many:b", b"2", LONG_TTL_S)
    store.set("many:short", b"3", short_ttl_s)
    store.incr("many:count", LONG_TTL_S, by=5)
    assert store.get_many([]) == []
    asked = ["many:b", "many:missing", "many:a", "many:count", "many:b"]
    assert store.get_many(asked) == [b"2", None, b"1", b"5", b"2"]
    let_pass()
    assert store.get_many(["many:short", "many:a", "many:missing"]) == [None, b"1", None]
    store.delete("many:a")
    assert store.get_many(["many:a", "many:b"]) == [None, b"2"]
