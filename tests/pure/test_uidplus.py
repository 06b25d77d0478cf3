"""UID sets and COPYUID (RFC 4315): the answers the servers of the matrix give, and malformed ones."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mail_imap_mcp.imap.uidplus import (
    CopyUid,
    MalformedUidSet,
    format_uid_set,
    parse_copyuid,
    parse_copyuids,
    parse_uid_set,
)


@pytest.mark.parametrize(
    ("text", "uids"),
    [
        ("7", [7]),
        ("4:6,9", [4, 5, 6, 9]),
        ("6:4", [4, 5, 6]),  # a range is the same either way round
        ("1,3,2", [1, 3, 2]),  # the order given is kept: it pairs source and new UIDs
        ("10:11,1", [10, 11, 1]),
    ],
)
def test_uid_sets(text: str, uids: list[int]) -> None:
    assert parse_uid_set(text) == uids


@pytest.mark.parametrize("text", ["", "0", "1:0", "1,", ",1", "1::2", "a", "1 2", "*", "1:*", "1:100001"])
def test_malformed_uid_sets(text: str) -> None:
    with pytest.raises(MalformedUidSet):
        parse_uid_set(text)


def test_format_uid_set_sorts_and_compacts() -> None:
    assert format_uid_set([9, 4, 5, 6]) == "4:6,9"
    assert format_uid_set([3]) == "3"
    assert format_uid_set([1, 2, 2, 3, 5, 7, 8]) == "1:3,5,7:8"
    with pytest.raises(ValueError, match="empty"):
        format_uid_set([])


@given(st.sets(st.integers(min_value=1, max_value=2**32 - 1), min_size=1, max_size=50))
def test_format_then_parse_is_the_sorted_set(uids: set[int]) -> None:
    assert parse_uid_set(format_uid_set(uids)) == sorted(uids)


@pytest.mark.parametrize(
    "answer",
    [
        b"1795355086 4,6 4:5",  # imaplib's untagged_responses["COPYUID"] (Dovecot, Cyrus: MOVE and COPY)
        b"[COPYUID 1795355086 4,6 4:5] Moved UIDs.",  # the whole text of the OK
        "[copyuid 1795355086 4,6 4:5]",
    ],
)
def test_copyuid_pairs_source_and_new_uids_in_order(answer: bytes | str) -> None:
    assert parse_copyuid(answer) == CopyUid(1795355086, {4: 4, 6: 5})


def test_copyuid_with_ranges_on_both_sides() -> None:
    copied = parse_copyuid(b"795355086 4:6,9 10:13")  # Courier's UIDVALIDITY has nine digits
    assert copied.new_uids == {4: 10, 5: 11, 6: 12, 9: 13}


@pytest.mark.parametrize(
    "answer",
    [
        b"",
        b"Completed",
        b"0 1 1",  # UIDVALIDITY 0 does not exist
        b"12 1:3 7:8",  # three messages, two new UIDs
        b"12 1,1 7:8",  # the same source message twice
        b"12 1:3",
        b"12 1:4294967295 1:4294967295",  # absurd: not a copy of at most 250 messages
    ],
)
def test_malformed_copyuid(answer: bytes) -> None:
    with pytest.raises(MalformedUidSet):
        parse_copyuid(answer)


def test_parts_of_one_answer_are_merged_and_none_means_no_uidplus() -> None:
    assert parse_copyuids([]) is None
    assert parse_copyuids([b"5 1:2 10:11", b"5 7 12"]) == CopyUid(5, {1: 10, 2: 11, 7: 12})
    with pytest.raises(MalformedUidSet):
        parse_copyuids([b"5 1 10", b"6 2 11"])
