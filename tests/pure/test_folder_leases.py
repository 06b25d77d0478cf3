"""A shared index's folder leases (index/lease.py): one holder of a folder at a time, another waits for it
until its deadline, a lease given back is taken at once, and a shared state out of reach takes it (the
index's own lock still keeps two writes apart)."""

from __future__ import annotations

import threading
import time

from mail_imap_mcp.index.lease import FolderLeases, holder_token
from mail_imap_mcp.state import MemoryStore, StateUnavailable


def test_one_instance_holds_a_folder_another_waits_until_its_deadline_then_takes_it_once_given_back() -> None:
    store = MemoryStore()
    mine, theirs = FolderLeases(store, "index-folder:x"), FolderLeases(store, "index-folder:x")
    assert mine.hold("INBOX", time.monotonic())
    assert not theirs.hold("INBOX", time.monotonic() + 0.1)  # waited, not taken
    assert theirs.hold("Sent", time.monotonic())  # another folder: its own lease
    theirs.release("INBOX")  # not theirs: left as it is
    assert not theirs.hold("INBOX", time.monotonic())
    threading.Timer(0.1, mine.release, ["INBOX"]).start()
    assert theirs.hold("INBOX", time.monotonic() + 5)  # given back within the wait


def test_a_held_folder_lease_is_renewed_and_lapses_once_its_holder_stops_renewing_it() -> None:
    store = MemoryStore()
    holder = FolderLeases(store, "k", ttl_s=0.1)
    assert holder.hold("INBOX", time.monotonic())
    # A sync longer than the time to live keeps its lease: still held three times it later.
    assert not FolderLeases(store, "k").hold("INBOX", time.monotonic() + 0.3)
    holder.abandon()  # as a killed process: renewed no more, never given back
    assert FolderLeases(store, "k").hold("INBOX", time.monotonic() + 2)


def test_the_threads_of_one_instance_share_a_folder_lease_until_the_last_gives_it_back() -> None:
    store = MemoryStore()
    mine, theirs = FolderLeases(store, "k"), FolderLeases(store, "k")
    assert mine.hold("INBOX", time.monotonic())  # the background sync
    assert mine.hold("INBOX", time.monotonic())  # a search of the same instance: not waited for
    mine.release("INBOX")
    assert not theirs.hold("INBOX", time.monotonic())  # one holder here still
    mine.release("INBOX")
    assert theirs.hold("INBOX", time.monotonic())


class Unreachable(MemoryStore):
    def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        raise StateUnavailable("redis down")


def test_a_shared_state_out_of_reach_takes_the_lease() -> None:
    assert FolderLeases(Unreachable(), "k").hold("INBOX", time.monotonic())


def test_a_lease_value_names_its_holder() -> None:
    host, pid, _ = holder_token().decode().split(":")
    assert host and int(pid) > 0
