"""Confirmation tokens with a store shared by several instances: issued by one, accepted by another,
once; bound to the user they were issued to."""

from __future__ import annotations

import pytest

from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.presentation.failures import failure_of
from mail_imap_mcp.state import MemoryStore, UsedMarkersFull
from mail_imap_mcp.state.store import MAX_USED_MARKS, MAX_USED_MARKS_PER_USER

REQUEST = {"account_id": "support", "mailbox": "Old"}
DELETE = "delete mailbox Old"


def issued(gate: ConfirmationGate, user: str = "") -> str:
    with pytest.raises(ToolFailure) as asked:
        gate.require("imap_manage_mailbox", REQUEST, DELETE, user=user)
    assert asked.value.code == ErrorCode.CONFIRMATION_REQUIRED
    token = asked.value.details["confirm_token"]
    assert isinstance(token, str)
    return token


def refusal(
    gate: ConfirmationGate, token: str, code: ErrorCode = ErrorCode.INVALID_INPUT, user: str = ""
) -> str:
    with pytest.raises(ToolFailure) as refused:
        gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, DELETE, user=user)
    assert refused.value.code == code
    return refused.value.message


def test_a_token_issued_by_one_instance_works_once_on_any_other() -> None:
    store, secret = MemoryStore(), b"s" * 32
    one, two, three = (ConfirmationGate(store=store, secret=secret) for _ in range(3))
    token = issued(one)
    two.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, DELETE, user="")
    assert "already used" in refusal(three, token)
    assert "already used" in refusal(one, token)


def test_another_users_token_is_not_found_and_a_forged_one_invalid_input() -> None:
    gate = ConfirmationGate(store=MemoryStore())
    alice, bob = "alice@corp.example", "bob@corp.example"
    token = issued(gate, alice)
    message = refusal(gate, token, ErrorCode.NOT_FOUND, bob)
    assert message.startswith("No such confirmation token") and "alice" not in message
    # A token of Bob's own with its request's half edited is forged: invalid_input, as before.
    own = issued(gate, bob)
    stamp, nonce, digest = own.split(".")
    forged = f"{stamp}.{nonce}.{('A' if digest[0] != 'A' else 'B')}{digest[1:]}"
    assert "different request" in refusal(gate, forged, user=bob)
    gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": own}, DELETE, user=bob)
    # On a one-person server a token of a team user is just another request's.
    assert "different request" in refusal(gate, token)


def test_without_a_shared_secret_each_process_signs_its_own() -> None:
    token = issued(ConfirmationGate(store=MemoryStore()))
    assert "different request" in refusal(ConfirmationGate(store=MemoryStore()), token)


def test_a_used_token_stays_used_however_many_other_keys_the_store_holds() -> None:
    """Regression: the used marker shared the store's bounded set of keys, oldest first out, so enough
    other keys (mailbox lists, operations) made the store forget it and the token worked again."""
    store = MemoryStore(max_keys=10)
    gate = ConfirmationGate(store=store)
    token = issued(gate)
    gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, DELETE, user="")
    for number in range(100):
        store.set(f"mim:other:{number}", b"x", 3600)
        store.incr(f"mim:counter:{number}", 3600)
    assert "already used" in refusal(gate, token)


def test_when_no_more_used_tokens_can_be_kept_a_new_one_is_refused_not_an_old_one_forgotten() -> None:
    store = MemoryStore(max_used=2)
    gate = ConfirmationGate(store=store)
    first, second, third = issued(gate), issued(gate), issued(gate)
    for token in (first, second):
        gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, DELETE, user="")
    with pytest.raises(UsedMarkersFull) as full:
        gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": third}, DELETE, user="")
    refused = failure_of(full.value)
    assert refused is not None and refused.code == ErrorCode.LIMIT_EXCEEDED and refused.retryable
    assert "nothing was changed" in refused.message
    for token in (first, second):
        assert "already used" in refusal(gate, token)


def confirmed_until_refused(gate: ConfirmationGate, user: str = "") -> tuple[list[str], UsedMarkersFull]:
    """Issue and confirm tokens until a confirmation is refused (at most :data:`MAX_USED_MARKS` + 1)."""
    confirmed: list[str] = []
    while len(confirmed) <= MAX_USED_MARKS:
        token = issued(gate, user)
        try:
            gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, DELETE, user=user)
        except UsedMarkersFull as full:
            return confirmed, full
        confirmed.append(token)
    raise AssertionError(f"{len(confirmed)} confirmations, none refused")


def test_one_user_confirming_by_script_cannot_block_another_users_confirmations() -> None:
    """Regression: the single process's used tokens were one pool for every user, so one user
    confirming cheap requests by script filled it and everyone's confirmations were refused."""
    gate = ConfirmationGate(store=MemoryStore())
    alice, bob = "alice@corp.example", "bob@corp.example"
    confirmed, full = confirmed_until_refused(gate, alice)
    assert len(confirmed) == MAX_USED_MARKS_PER_USER
    refused = failure_of(full)
    assert refused is not None and refused.code == ErrorCode.LIMIT_EXCEEDED and refused.retryable
    assert refused.details["limit"] == MAX_USED_MARKS_PER_USER and "You confirmed" in refused.message
    for used in (confirmed[0], confirmed[-1]):  # hers stay used while she is refused
        assert "already used" in refusal(gate, used, user=alice)
    token = issued(gate, bob)
    gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, DELETE, user=bob)
    assert "already used" in refusal(gate, token, user=bob)
