"""How a run on a whole search knows a message and its copy (issue 78 item 6): by Message-ID, size and
arrival time, each copy given to one message at most; a message gone from its mailbox by its size and time
only where they name one message on each side."""

from __future__ import annotations

from datetime import UTC, datetime

from mail_imap_mcp.imap.bulk_moves import MessageKey, by_shape, matching

AT = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def key(message_id: str, size: int = 100, arrived: datetime = AT) -> MessageKey:
    return MessageKey(message_id, size, arrived)


def test_each_copy_is_given_to_one_message_and_all_three_parts_must_agree() -> None:
    mine = {1: key("<a@t>"), 2: key("<a@t>"), 3: key("<b@t>"), 4: key("<c@t>", size=101)}
    there = {10: key("<a@t>"), 11: key("<b@t>", arrived=AT.replace(minute=1)), 12: key("<c@t>")}
    assert matching(mine, there) == {1: 10}  # one copy of <a>: the second <a> is copied, not matched


def test_two_identical_copies_match_two_identical_messages_in_order() -> None:
    assert matching({5: key("<a@t>"), 3: key("<a@t>")}, {9: key("<a@t>"), 8: key("<a@t>")}) == {3: 8, 5: 9}


def test_a_message_gone_from_its_mailbox_is_named_by_size_and_time_only_where_unambiguous() -> None:
    gone = {1: (100, AT), 2: (200, AT), 3: (200, AT), 4: (300, AT)}
    arrived = {20: key("<x@t>", 100), 21: key("<y@t>", 200), 22: key("<z@t>", 300), 23: key("<w@t>", 300)}
    # 1: one of its shape on each side; 2 and 3 share theirs; 4's shape arrived twice
    assert by_shape(gone, arrived) == {1: 20}
