"""Message ids of an account served per user carry the user (issue 39); every other id is unchanged."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import pytest

from mail_imap_mcp.imap.ids import (
    ForeignMessageId,
    InvalidMessageId,
    MessageRef,
    parse_message_id,
    parse_message_uri,
)
from tests.support.users import as_user as as_team_user

T = TypeVar("T")

REF = MessageRef("own", "Projects:2026", 1700000000, 42)


def as_user(user: str, run: Callable[[], T], per_user: tuple[str, ...] = ("own",)) -> T:
    """``run()`` as a call of ``user`` whose account ``own`` is served per user (unless told)."""
    return as_team_user(user, run, per_user)


def test_an_ordinary_accounts_id_and_uri_are_unchanged_for_every_user() -> None:
    for user in ("", "alice@corp.example"):
        assert as_user(user, lambda: REF.message_id, per_user=()) == "imap:own:Projects:2026:1700000000:42"
        assert as_user(user, lambda: REF.message_uri, per_user=()) == (
            "imap://own/mailbox/Projects%3A2026/message/1700000000/42"
        )
        assert as_user(user, lambda: parse_message_id(REF.message_id), per_user=()) == REF


def test_a_per_user_accounts_id_carries_its_user_and_reads_back_for_them() -> None:
    alice = as_user("alice@corp.example", lambda: REF.message_id)
    assert re.fullmatch(r"imap:own~[a-z2-7]{8}:Projects:2026:1700000000:42", alice)
    assert as_user("alice@corp.example", lambda: REF.message_id) == alice  # stable
    assert as_user("alice@corp.example", lambda: parse_message_id(alice)) == REF
    uri = as_user("alice@corp.example", lambda: REF.message_raw_uri)
    assert uri.startswith(f"imap://own~{alice.split('~')[1][:8]}/mailbox/")
    assert as_user("alice@corp.example", lambda: parse_message_uri(uri)) == (REF, True)


def test_another_users_id_or_one_without_the_tag_is_foreign() -> None:
    alice = as_user("alice@corp.example", lambda: REF.message_id)
    bob = as_user("bob@corp.example", lambda: REF.message_id)
    assert alice != bob
    untagged = "imap:own:Projects:2026:1700000000:42"
    for text in (alice, untagged):
        with pytest.raises(ForeignMessageId) as foreign:
            as_user("bob@corp.example", lambda text=text: parse_message_id(text))  # type: ignore[misc]
        assert (foreign.value.ref, foreign.value.text) == (REF, text)
    uri = as_user("alice@corp.example", lambda: REF.message_uri)
    with pytest.raises(ForeignMessageId):
        as_user("bob@corp.example", lambda: parse_message_uri(uri))
    # A tagged id of an account not served per user (or for nobody in particular) is nobody's either.
    with pytest.raises(ForeignMessageId):
        as_user("", lambda: parse_message_id(alice), per_user=())


def test_a_malformed_tag_is_malformed() -> None:
    for text in ("imap:own~:INBOX:1:2", "imap:own~ABCDEFGH:INBOX:1:2", "imap:own~abc:INBOX:1:2"):
        with pytest.raises(InvalidMessageId) as refused:
            as_user("bob@corp.example", lambda text=text: parse_message_id(text))  # type: ignore[misc]
        assert not isinstance(refused.value, ForeignMessageId)
