"""The in-process store (state/store.py): what one process keeps, with times to live on a fake clock."""

from __future__ import annotations

import pytest

from mail_imap_mcp.state import ANONYMOUS, MemoryStore, UsedMarkersFull, shared_secret, user_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_value_lives_until_its_time_to_live_ends() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    store.set("k", b"v", 10)
    assert store.get("k") == b"v"
    clock.now += 10 + 1  # past the time to live, never by exactly it (a float sum may fall short)
    assert store.get("k") is None


def test_add_sets_only_where_nothing_is_and_again_once_it_expired() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    assert store.add("k", b"first", 5)
    assert not store.add("k", b"second", 5)
    assert store.get("k") == b"first"
    clock.now += 5 + 1
    assert store.add("k", b"third", 5)


def test_take_gives_a_value_once() -> None:
    store = MemoryStore()
    store.set("k", b"v", 10)
    assert store.take("k") == b"v"
    assert store.take("k") is None


def test_a_counter_counts_from_one_and_keeps_its_first_expiry() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    assert [store.incr("c", 10) for _ in range(3)] == [1, 2, 3]
    clock.now += 9
    assert store.incr("c", 10) == 4
    clock.now += 2
    assert store.incr("c", 10) == 1
    assert store.incr("c", 10, by=20) == 21  # a count of many at once (messages moved unasked)


def test_the_oldest_keys_go_first_past_the_bound() -> None:
    store = MemoryStore(max_keys=2)
    for key in "abc":
        store.set(key, b"1", 60)
    assert [store.get(key) for key in "abc"] == [None, b"1", b"1"]


def test_a_message_reaches_the_subscribers_of_its_channel_until_they_close() -> None:
    store = MemoryStore()
    got: list[bytes] = []
    subscription = store.subscribe("news", got.append)
    store.subscribe("other", lambda message: got.append(b"wrong " + message))
    store.publish("news", b"one")
    subscription.close()
    store.publish("news", b"two")
    assert got == [b"one"]


def test_a_shared_secret_is_made_once_and_read_by_every_later_caller() -> None:
    store = MemoryStore()
    first = shared_secret(store, "seal")
    assert len(first) == 32
    assert shared_secret(store, "seal") == first
    assert shared_secret(store, "other") != first


def test_keys_are_per_user_and_do_not_show_the_user() -> None:
    alice = user_key("op", "op_1", user="alice@corp.example")
    bob = user_key("op", "op_1", user="bob@corp.example")
    nobody = user_key("op", "op_1", user=ANONYMOUS)
    assert len({alice, bob, nobody}) == 3
    assert "alice" not in alice
    assert alice == user_key("op", "op_1", user="alice@corp.example")


def test_counters_count_towards_the_bound_too() -> None:
    store = MemoryStore(max_keys=2)
    for key in "abc":
        store.incr(key, 60)
    assert [store.get(key) for key in "abc"] == [None, b"1", b"1"]


def test_a_used_mark_lives_until_its_own_expiry_and_a_full_set_refuses_new_ones() -> None:
    clock = Clock()
    store = MemoryStore(max_keys=1, max_used=2, clock=clock)
    assert store.mark_used("u1", 10) and store.mark_used("u2", 20)
    assert not store.mark_used("u1", 10)
    store.set("other", b"x", 60)
    store.set("another", b"x", 60)  # the values' bound leaves the marks alone
    with pytest.raises(UsedMarkersFull):
        store.mark_used("u3", 10)
    assert not store.mark_used("u2", 20)  # still known while full
    clock.now += 11  # u1 expired: room for one
    assert store.mark_used("u3", 10)
    with pytest.raises(UsedMarkersFull):
        store.mark_used("u4", 10)
    clock.now += 11  # u2 and u3 expired
    assert store.mark_used("u1", 10) and store.mark_used("u4", 10)


def test_each_owner_has_a_share_of_the_used_marks_and_only_who_exceeds_it_is_refused() -> None:
    clock = Clock()
    store = MemoryStore(max_used=5, max_used_per_owner=2, clock=clock)
    assert store.mark_used("a1", 10, owner="alice") and store.mark_used("a2", 20, owner="alice")
    with pytest.raises(UsedMarkersFull) as full:
        store.mark_used("a3", 10, owner="alice")
    assert full.value.limit == 2 and full.value.per_owner
    assert not store.mark_used("a2", 20, owner="alice")  # still known while she is at her share
    assert store.mark_used("b1", 10, owner="bob") and store.mark_used("b2", 10, owner="bob")
    assert store.mark_used("c1", 10, owner="carol")
    with pytest.raises(UsedMarkersFull) as full:  # the process's bound: five in all
        store.mark_used("d1", 10, owner="dave")
    assert full.value.limit == 5 and not full.value.per_owner
    clock.now += 11  # a1, b1, b2 and c1 expired: alice has room for one again
    assert store.mark_used("a3", 10, owner="alice") and store.mark_used("d1", 10, owner="dave")
    with pytest.raises(UsedMarkersFull):
        store.mark_used("a4", 10, owner="alice")
    clock.now += 11
    assert store.mark_used("a4", 10, owner="alice") and store.mark_used("a1", 10, owner="alice")
