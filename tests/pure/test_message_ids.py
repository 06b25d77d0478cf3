"""Message ids of an account served per user carry the user (issue 39); every other id is unchanged."""

from __future__ import annotations

import re

import pytest

from mail_imap_mcp.mail.ids import (
    ForeignMessageId,
    InvalidMessageId,
    MessageRef,
    parse_message_id,
    parse_message_uri,
    user_tag,
)
from mail_imap_mcp.state import ANONYMOUS_CALLER, Caller

REF = MessageRef("own", "Projects:2026", 1700000000, 42)
ALICE = Caller("alice@corp.example", frozenset({"own"}))
BOB = Caller("bob@corp.example", frozenset({"own"}))


def made_for(caller: Caller, ref: MessageRef = REF) -> MessageRef:
    """``ref`` as a call of ``caller`` makes it: with their tag."""
    return MessageRef(ref.account_id, ref.mailbox, ref.uidvalidity, ref.uid, user_tag(caller, ref.account_id))


def test_an_ordinary_accounts_id_and_uri_are_unchanged_for_every_user() -> None:
    for caller in (ANONYMOUS_CALLER, Caller("alice@corp.example")):
        ref = made_for(caller)
        assert ref.message_id == "imap:own:Projects:2026:1700000000:42"
        assert ref.message_uri == "imap://own/mailbox/Projects%3A2026/message/1700000000/42"
        assert parse_message_id(ref.message_id, caller) == REF


def test_a_per_user_accounts_id_carries_its_user_and_reads_back_for_them() -> None:
    alice = made_for(ALICE).message_id
    assert re.fullmatch(r"imap:own~[a-z2-7]{8}:Projects:2026:1700000000:42", alice)
    assert made_for(ALICE).message_id == alice  # stable
    parsed = parse_message_id(alice, ALICE)
    assert parsed == REF
    assert parsed.message_id == alice  # the ref read back makes the same id
    uri = made_for(ALICE).message_raw_uri
    assert uri.startswith(f"imap://own~{alice.split('~')[1][:8]}/mailbox/")
    assert parse_message_uri(uri, ALICE) == (REF, True)
    assert parse_message_uri(uri, ALICE)[0].message_raw_uri == uri


def test_another_users_id_or_one_without_the_tag_is_foreign() -> None:
    alice = made_for(ALICE).message_id
    assert alice != made_for(BOB).message_id
    untagged = "imap:own:Projects:2026:1700000000:42"
    for text in (alice, untagged):
        with pytest.raises(ForeignMessageId) as foreign:
            parse_message_id(text, BOB)
        assert (foreign.value.ref, foreign.value.text) == (REF, text)
    with pytest.raises(ForeignMessageId):
        parse_message_uri(made_for(ALICE).message_uri, BOB)
    # A tagged id of an account not served per user (or for nobody in particular) is nobody's either.
    with pytest.raises(ForeignMessageId):
        parse_message_id(alice, ANONYMOUS_CALLER)


def test_a_malformed_tag_is_malformed() -> None:
    for text in ("imap:own~:INBOX:1:2", "imap:own~ABCDEFGH:INBOX:1:2", "imap:own~abc:INBOX:1:2"):
        with pytest.raises(InvalidMessageId) as refused:
            parse_message_id(text, BOB)
        assert not isinstance(refused.value, ForeignMessageId)
