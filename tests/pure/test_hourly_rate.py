"""The sliding hour of ``send_rate_per_hour`` (state/hourly_rate.py), on a clock the test moves, in the
process's memory and in the state directory's file (which several processes share)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from mail_imap_mcp.state import MemoryStore
from mail_imap_mcp.state.file_store import FileStore
from mail_imap_mcp.state.hourly_rate import HOUR_S, SLOT_S, HourlyRate
from mail_imap_mcp.state.store import Store

#: Five to six in the evening, on a clock hour's boundary.
SIX_PM = 1_795_975_200.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "file"])
def clock_and_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Clock, Store]]:
    clock = Clock(SIX_PM - 1)
    store: Store = (
        MemoryStore(clock=clock)
        if request.param == "memory"
        else FileStore(tmp_path / "state.db", clock=clock)
    )
    yield clock, store
    store.close()


def test_regression_a_use_just_before_the_hour_still_counts_just_after_it(
    clock_and_store: tuple[Clock, Store],
) -> None:
    """The rate was counted in clock hours: a send at 17:59:59 and another at 18:00:01 each went, so
    twice the limit could go within seconds (seen as a red CI run that crossed 18:00)."""
    clock, store = clock_and_store
    rate = HourlyRate(store, "sends", 1, clock)
    assert rate.wait_s() is None
    assert rate.take() is None
    clock.now = SIX_PM + 1
    assert rate.wait_s() is not None
    assert rate.take() is not None


def test_the_wait_given_is_when_a_use_goes_and_at_most_a_slot_longer_than_the_strict_hour(
    clock_and_store: tuple[Clock, Store],
) -> None:
    clock, store = clock_and_store
    rate = HourlyRate(store, "sends", 2, clock)
    first = clock.now
    assert rate.take() is None
    clock.now += 600
    assert rate.take() is None
    clock.now += 60
    wait_s = rate.take()
    assert wait_s is not None
    strict_wait_s = first + HOUR_S - clock.now
    assert strict_wait_s <= wait_s <= strict_wait_s + SLOT_S
    assert rate.wait_s() == wait_s
    clock.now += wait_s - 1
    assert rate.take() is not None
    clock.now += 1
    assert rate.take() is None


def test_a_refused_use_is_not_counted(clock_and_store: tuple[Clock, Store]) -> None:
    clock, store = clock_and_store
    rate = HourlyRate(store, "sends", 1, clock)
    assert rate.take() is None
    for _ in range(5):
        assert rate.take() is not None
    clock.now += HOUR_S + SLOT_S
    assert rate.take() is None  # the refusals did not use up the next hour
    assert rate.take() is not None


def test_two_processes_sharing_the_store_share_the_hour(clock_and_store: tuple[Clock, Store]) -> None:
    clock, store = clock_and_store
    here, there = HourlyRate(store, "sends", 1, clock), HourlyRate(store, "sends", 1, clock)
    assert here.take() is None
    assert there.wait_s() is not None
    assert there.take() is not None
    assert HourlyRate(store, "other account", 1, clock).take() is None


def test_a_limit_of_none_an_hour_never_lets_a_use_go(clock_and_store: tuple[Clock, Store]) -> None:
    clock, store = clock_and_store
    assert HourlyRate(store, "sends", 0, clock).take() == HOUR_S


@pytest.mark.parametrize("seed", range(20))
def test_no_hour_wherever_it_starts_holds_more_than_the_limit(seed: int) -> None:
    """Uses tried at random over a day: every hour-long stretch holds at most the limit, and a use is
    refused only where the hour and one slot before it held the limit already."""
    draw = random.Random(seed)
    clock = Clock(SIX_PM + draw.uniform(-HOUR_S, HOUR_S))
    limit = draw.randint(1, 6)
    rate = HourlyRate(MemoryStore(clock=clock), "sends", limit, clock)
    went: list[float] = []
    start = clock.now
    for _ in range(1000):
        clock.now += draw.expovariate(1 / 60)
        recent = sum(1 for at in went if at > clock.now - HOUR_S - SLOT_S)
        if rate.take() is None:
            went.append(clock.now)
        else:
            assert recent >= limit, "refused while the hour and a slot before it held fewer than the limit"
    for at in went:
        assert sum(1 for other in went if at - HOUR_S < other <= at) <= limit
    hours = (clock.now - start) / HOUR_S
    assert len(went) >= 0.8 * limit * hours, "the hours were not used up, with a use tried every minute"


class CountingStore(MemoryStore):
    """The in-process store, counting the calls the rate makes (each a round trip to Redis)."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock=clock)
        self.calls: list[str] = []

    def get(self, key: str) -> bytes | None:
        self.calls.append("get")
        return super().get(key)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        self.calls.append("get_many")
        return super().get_many(keys)

    def incr(self, key: str, ttl_s: float, by: int = 1) -> int:
        self.calls.append("incr")
        return super().incr(key, ttl_s, by)

    def counted(self, call: Callable[[], int | None]) -> list[str]:
        self.calls = []
        call()
        return self.calls


def test_regression_the_hour_is_read_in_one_call_not_one_a_slot() -> None:
    """Each of the 13 slots was read with its own get: 27 round trips to Redis a send (its check, then its
    take). Against Redis itself: tests/integration/team/test_state_redis.py."""
    clock = Clock(SIX_PM)
    store = CountingStore(clock)
    rate = HourlyRate(store, "sends", 1, clock)
    assert store.counted(rate.wait_s) == ["get_many"]
    assert store.counted(rate.take) == ["incr", "get_many"]
    assert store.counted(rate.take) == ["incr", "get_many", "incr"]  # refused: the count taken back
    assert store.counted(rate.wait_s) == ["get_many"]
