"""A shared index's folder leases (index/lease.py) on a clock the test moves (issue 57 item 2): one holder
of a folder at a time, another waits for it until its deadline, a lease given back is taken at once, a
held one is renewed every third of its time to live and lapses once its holder stops, and a shared state
out of reach takes it (the index's own lock still keeps two writes apart). The store is the in-process one
on the same clock; Redis's own expiry, in real time: test_index_leases.py and test_team_index_faults.py."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from mail_imap_mcp.index.lease import FolderLeases, holder_token
from mail_imap_mcp.state import MemoryStore, StateUnavailable
from tests.support.fake_clock import FakeClock
from tests.support.patience import eventually, patient

#: Past a limit, never by exactly it.
PAST_S = 0.5
TTL_S = 30.0


class CountingStore(MemoryStore):
    """The in-process store on the test's clock, counting asks for a lease and renewals."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.asks = 0
        self.renewals = 0

    def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        self.asks += 1
        return super().add(key, value, ttl_s)

    def renew(self, key: str, value: bytes, ttl_s: float) -> bool:
        kept = super().renew(key, value, ttl_s)
        self.renewals += 1
        return kept


def leases(store: MemoryStore, clock: FakeClock, key: str = "index-folder:x") -> FolderLeases:
    return FolderLeases(store, key, ttl_s=TTL_S, clock=clock, pause=clock.pause)


def asked_again(store: CountingStore, waiter: Future[bool]) -> None:
    """Wait until the waiter asked twice more (so it saw the clock as it is now), or gave up."""
    asks = store.asks
    eventually(lambda: store.asks >= asks + 2 or waiter.done(), within=10, what="the waiter's next asks")


def test_one_instance_holds_a_folder_another_waits_until_its_deadline_then_takes_it_once_given_back() -> None:
    clock = FakeClock(4055.0984759064563)
    store = CountingStore(clock)
    mine, theirs = leases(store, clock), leases(store, clock)
    assert mine.hold("INBOX", clock())
    assert theirs.hold("Sent", clock())  # another folder: its own lease
    theirs.release("INBOX")  # not theirs: left as it is
    with ThreadPoolExecutor(1) as pool:
        refused = pool.submit(theirs.hold, "INBOX", clock() + 2.0)
        asked_again(store, refused)
        clock.now += 2.0 - PAST_S
        asked_again(store, refused)
        assert not refused.done(), "gave up before its deadline"
        clock.now += 2 * PAST_S
        assert refused.result(timeout=patient(10)) is False  # waited past its deadline, not taken
        given_back = pool.submit(theirs.hold, "INBOX", clock() + 2.0)
        asked_again(store, given_back)
        mine.release("INBOX")  # the clock stands still: taken at its next ask, not at its deadline
        assert given_back.result(timeout=patient(10)) is True


def test_a_held_folder_lease_is_renewed_and_lapses_once_its_holder_stops_renewing_it() -> None:
    clock = FakeClock(4055.0984759064563)
    store = CountingStore(clock)
    holder = leases(store, clock)
    assert holder.hold("INBOX", clock())
    # A sync longer than the time to live keeps its lease: still held three times it later.
    for renewed in range(1, 10):
        clock.now += TTL_S / 3 + PAST_S / 10
        eventually(lambda: store.renewals >= renewed, within=10, what="the lease renewed")  # noqa: B023
        assert not leases(store, clock).hold("INBOX", clock())
    holder.abandon()  # as a killed process: renewed no more, never given back
    clock.now += TTL_S - PAST_S
    assert not leases(store, clock).hold("INBOX", clock())  # not lapsed before its time to live
    clock.now += 2 * PAST_S
    assert leases(store, clock).hold("INBOX", clock())


def test_the_threads_of_one_instance_share_a_folder_lease_until_the_last_gives_it_back() -> None:
    clock = FakeClock(4055.0984759064563)
    store = CountingStore(clock)
    mine, theirs = leases(store, clock), leases(store, clock)
    assert mine.hold("INBOX", clock())  # the background sync
    assert mine.hold("INBOX", clock())  # a search of the same instance: not waited for
    mine.release("INBOX")
    assert not theirs.hold("INBOX", clock())  # one holder here still
    mine.release("INBOX")
    assert theirs.hold("INBOX", clock())


class Unreachable(MemoryStore):
    def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        raise StateUnavailable("redis down")


def test_a_shared_state_out_of_reach_takes_the_lease() -> None:
    clock = FakeClock(4055.0984759064563)
    assert leases(Unreachable(), clock).hold("INBOX", clock())


def test_a_lease_value_names_its_holder() -> None:
    host, pid, _ = holder_token().decode().split(":")
    assert host and int(pid) > 0
