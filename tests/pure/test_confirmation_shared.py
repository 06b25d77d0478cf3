"""Confirmation tokens with a store shared by several instances: issued by one, accepted by another,
once; bound to the user they were issued to."""

from __future__ import annotations

import pytest

from mail_imap_mcp.confirmation import ConfirmationGate
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.state import MemoryStore, current_user

REQUEST = {"account_id": "support", "mailbox": "Old"}


def issued(gate: ConfirmationGate) -> str:
    with pytest.raises(ToolFailure) as asked:
        gate.require("imap_manage_mailbox", REQUEST, "delete mailbox Old")
    assert asked.value.code == ErrorCode.CONFIRMATION_REQUIRED
    token = asked.value.details["confirm_token"]
    assert isinstance(token, str)
    return token


def refusal(gate: ConfirmationGate, token: str) -> str:
    with pytest.raises(ToolFailure) as refused:
        gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, "delete mailbox Old")
    assert refused.value.code == ErrorCode.INVALID_INPUT
    return refused.value.message


def test_a_token_issued_by_one_instance_works_once_on_any_other() -> None:
    store, secret = MemoryStore(), b"s" * 32
    one, two, three = (ConfirmationGate(store=store, secret=secret) for _ in range(3))
    token = issued(one)
    two.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, "delete mailbox Old")
    assert "already used" in refusal(three, token)
    assert "already used" in refusal(one, token)


def test_a_token_is_refused_to_another_user_as_any_token_of_another_request() -> None:
    gate = ConfirmationGate(store=MemoryStore())
    alice = current_user.set("alice@corp.example")
    try:
        token = issued(gate)
    finally:
        current_user.reset(alice)
    bob = current_user.set("bob@corp.example")
    try:
        message = refusal(gate, token)
    finally:
        current_user.reset(bob)
    assert "different request" in message and "alice" not in message
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert refusal(gate, forged) == message  # the same words as a forged token: nothing is told


def test_without_a_shared_secret_each_process_signs_its_own() -> None:
    token = issued(ConfirmationGate(store=MemoryStore()))
    assert "different request" in refusal(ConfirmationGate(store=MemoryStore()), token)
