"""What a watching connection counts as a change of the examined mailbox (imap/watch.py)."""

from __future__ import annotations

import pytest

from mail_imap_mcp.imap.watch import _changes_in, _CountWatch, _is_change, _new_exists


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
    assert _is_change(line.split(), exists) is changed


def test_the_count_follows_exists_and_expunge() -> None:
    assert _new_exists(b"* 9 EXISTS".split(), 4) == 9
    assert _new_exists(b"* 3 FETCH (FLAGS ())".split(), 4) == 4
    assert _new_exists(b"* VANISHED 3".split(), 4) is None


def test_a_delivery_right_after_an_expunge_is_a_change() -> None:
    # 4 messages; one expunged (3 left), one delivered: EXISTS says 4 again, which is new mail.
    count = _new_exists(b"* 2 EXPUNGE".split(), 4)
    assert count == 3
    assert _is_change(b"* 4 EXISTS".split(), count)


def test_noop_answers_as_imapclient_parses_them() -> None:
    assert _changes_in([(5, b"EXISTS"), (1, b"RECENT")], 4) == (True, 5)
    assert _changes_in([(4, b"EXISTS")], 4) == (False, 4)
    assert _changes_in([(2, b"FETCH", (b"FLAGS", (b"\\Seen",)))], 4) == (True, 4)
    assert _changes_in([], 4) == (False, 4)


def test_the_one_mailbox_watch_names_its_mailbox_for_a_change_only() -> None:
    watch = _CountWatch("INBOX", 4)
    assert watch(b"* OK Still here") is None
    assert watch(b"* 5 EXISTS") == "INBOX"
    assert watch(b"* 5 EXISTS") is None  # said again: nothing new
    assert watch(b"* 1 FETCH (FLAGS (\\Flagged))") == "INBOX"
