"""What a watching connection counts as a change of the examined mailbox (imap/watch.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mail_imap_mcp.imap.watch import WatchHub, WatchSettings
from mail_imap_mcp.imap.watch_lines import CountWatch, changes_in, is_change, new_exists
from mail_imap_mcp.imap.watcher import Watcher


def watcher_of(*mailboxes: str) -> Watcher:
    """A watcher of ``mailboxes`` that never connects (its fingerprints are what is tested)."""
    hub = WatchHub(lambda account: Any, WatchSettings())  # type: ignore[arg-type,return-value]
    watcher = Watcher(hub, "default", None)  # type: ignore[arg-type]
    watcher.watches = {mailbox: [] for mailbox in mailboxes}
    return watcher


@pytest.mark.parametrize(
    ("line", "exists", "changed"),
    [
        (b"* 5 EXISTS", 4, True),
        (b"* 4 EXISTS", 4, False),  # the count repeated: nothing new
        (b"* 4 EXISTS", None, True),
        (b"* 2 EXPUNGE", 4, True),
        (b"* 3 FETCH (FLAGS (\\Seen))", 4, True),
        (b"* VANISHED 7:9", 4, True),
        (b"* 1 RECENT", 4, False),
        (b"* OK Still here", 4, False),
        (b"+ idling", 4, False),
    ],
)
def test_untagged_responses_that_tell_a_change(line: bytes, exists: int | None, changed: bool) -> None:
    assert is_change(line.split(), exists) is changed


def test_the_count_follows_exists_and_expunge() -> None:
    assert new_exists(b"* 9 EXISTS".split(), 4) == 9
    assert new_exists(b"* 3 FETCH (FLAGS ())".split(), 4) == 4
    assert new_exists(b"* VANISHED 3".split(), 4) is None


def test_a_delivery_right_after_an_expunge_is_a_change() -> None:
    # 4 messages; one expunged (3 left), one delivered: EXISTS says 4 again, which is new mail.
    count = new_exists(b"* 2 EXPUNGE".split(), 4)
    assert count == 3
    assert is_change(b"* 4 EXISTS".split(), count)


def test_noop_answers_as_imapclient_parses_them() -> None:
    assert changes_in([(5, b"EXISTS"), (1, b"RECENT")], 4) == (True, 5)
    assert changes_in([(4, b"EXISTS")], 4) == (False, 4)
    assert changes_in([(2, b"FETCH", (b"FLAGS", (b"\\Seen",)))], 4) == (True, 4)
    assert changes_in([], 4) == (False, 4)


def test_the_one_mailbox_watch_names_its_mailbox_for_a_change_only() -> None:
    watch = CountWatch("INBOX", 4, watcher_of("INBOX"))
    assert watch(b"* OK Still here") is None
    assert watch(b"* 5 EXISTS") == "INBOX"
    assert watch(b"* 5 EXISTS") is None  # said again: nothing new
    assert watch(b"* 1 FETCH (FLAGS (\\Flagged))") == "INBOX"


FULL = {b"UIDVALIDITY": 7, b"UIDNEXT": 20, b"MESSAGES": 4, b"HIGHESTMODSEQ": 100}


def test_a_first_look_is_the_baseline_and_a_later_one_is_compared_on_the_items_both_know() -> None:
    watcher = watcher_of("INBOX")
    assert not watcher.looked("INBOX", dict(FULL))
    assert not watcher.looked("INBOX", {**FULL, b"UNSEEN": 2})  # EXAMINE then STATUS: nothing changed
    assert watcher.looked("INBOX", {**FULL, b"HIGHESTMODSEQ": 101})  # a flag changed meanwhile
    assert watcher.looked("INBOX", None)  # deleted
    assert not watcher.looked("INBOX", None)  # told once
    assert not watcher.looked("Other", dict(FULL))  # not watched: nothing kept
    assert "Other" not in watcher.fingerprints


def test_a_change_reported_in_idle_is_kept_in_the_fingerprint_and_not_reported_again() -> None:
    """Regression (issue 33 item 8): the first look after a switch between one mailbox and several was
    the new baseline, so a change made during the switch was never reported; compared with the look
    before, a change reported in IDLE must not come back as a second report either."""
    watcher = watcher_of("INBOX")
    watcher.looked("INBOX", dict(FULL))
    watch = CountWatch("INBOX", 4, watcher)
    assert watch(b"* 5 EXISTS") == "INBOX"  # a new message: MESSAGES 5, UIDNEXT 21, HIGHESTMODSEQ unknown
    assert watcher.fingerprints["INBOX"] == {b"UIDVALIDITY": 7, b"UIDNEXT": 21, b"MESSAGES": 5}
    assert watch(b"* 2 FETCH (FLAGS (\\Seen) MODSEQ (104))") == "INBOX"
    assert watcher.fingerprints["INBOX"] == {**FULL, b"UIDNEXT": 21, b"MESSAGES": 5, b"HIGHESTMODSEQ": 104}
    after_switch = {b"UIDVALIDITY": 7, b"UIDNEXT": 21, b"MESSAGES": 5, b"HIGHESTMODSEQ": 104, b"UNSEEN": 1}
    assert not watcher.looked("INBOX", after_switch)
    assert watcher.looked("INBOX", {**after_switch, b"UIDNEXT": 22, b"MESSAGES": 6})  # one during the switch


def test_an_expunge_leaves_the_modseq_unknown_and_nothing_to_compare_is_reported() -> None:
    watcher = watcher_of("INBOX")
    watcher.looked("INBOX", {b"HIGHESTMODSEQ": 100})
    assert CountWatch("INBOX", 4, watcher)(b"* 1 EXPUNGE") == "INBOX"
    assert watcher.fingerprints["INBOX"] == {b"MESSAGES": 3}
    assert watcher.looked("INBOX", {b"HIGHESTMODSEQ": 103})  # no item in common: reported, not missed


def test_a_look_after_a_change_left_no_item_that_tells_flags_reports_rather_than_misses() -> None:
    """Regression (issue 33 item 8, seen on Cyrus under load): a new message in IDLE left HIGHESTMODSEQ
    unknown, and a flag changed during the switch that followed went into the next look's values
    unreported. That look now reports the mailbox (at least once; perhaps a second time)."""
    watcher = watcher_of("INBOX")
    watcher.looked("INBOX", dict(FULL))
    assert CountWatch("INBOX", 4, watcher)(b"* 5 EXISTS") == "INBOX"
    assert watcher.uncertain == {"INBOX"}
    assert watcher.looked("INBOX", {**FULL, b"UIDNEXT": 21, b"MESSAGES": 5, b"HIGHESTMODSEQ": 103})
    assert watcher.uncertain == set()
    assert not watcher.looked("INBOX", {**FULL, b"UIDNEXT": 21, b"MESSAGES": 5, b"HIGHESTMODSEQ": 103})
