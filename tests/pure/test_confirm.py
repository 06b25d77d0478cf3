"""Confirmation tokens: bound to exactly one request, short-lived, used once."""

from __future__ import annotations

import time

import pytest

from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.envelope import ToolFailure

REQUEST = {"account_id": "default", "mailbox": "Old", "action": "delete"}
WHAT = "delete the mailbox 'Old'"


def token_for(gate: ConfirmationGate, request: dict[str, object] = REQUEST) -> str:
    with pytest.raises(ToolFailure) as caught:
        gate.require("imap_manage_mailbox", request, WHAT, user="")
    failure = caught.value
    assert failure.code == "confirmation_required"
    assert failure.next_action is not None
    assert failure.next_action.arguments == {**request, "confirm_token": failure.details["confirm_token"]}
    token: str = failure.details["confirm_token"]
    return token


def test_the_same_request_with_its_token_runs_once() -> None:
    gate = ConfirmationGate()
    token = token_for(gate)
    gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, WHAT, user="")
    with pytest.raises(ToolFailure, match="already used") as caught:
        gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, WHAT, user="")
    assert caught.value.details["parameter"] == "confirm_token"


@pytest.mark.parametrize(
    ("tool", "changed"),
    [
        ("imap_manage_mailbox", {"mailbox": "Other"}),
        ("imap_manage_mailbox", {"account_id": "work"}),
        ("imap_manage_mailbox", {"destination_mailbox": "New"}),
        ("imap_apply_to_messages", {}),
    ],
)
def test_a_token_fits_no_other_request(tool: str, changed: dict[str, str]) -> None:
    gate = ConfirmationGate()
    token = token_for(gate)
    with pytest.raises(ToolFailure, match="different request"):
        gate.require(tool, {**REQUEST, **changed, "confirm_token": token}, WHAT, user="")


def test_a_token_passes_no_gate_whose_words_differ_from_those_it_was_issued_with() -> None:
    # The user was told "delete the mailbox 'Old'": the same request confirming other words (another gate
    # of the same call, or a rename whose message count changed since) is not what they agreed to.
    gate = ConfirmationGate()
    token = token_for(gate)
    with pytest.raises(ToolFailure, match="what it confirms changed"):
        gate.require(
            "imap_manage_mailbox", {**REQUEST, "confirm_token": token}, WHAT + " and 3 more", user=""
        )
    gate.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, WHAT, user="")


def test_tokens_expire_and_mean_nothing_to_another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    short = ConfirmationGate(ttl_s=0)
    token = token_for(short)
    later = time.time() + 1.1  # tokens count whole seconds: the clock moved on, where the test slept
    monkeypatch.setattr(time, "time", lambda: later)
    with pytest.raises(ToolFailure, match="expired"):
        short.require("imap_manage_mailbox", {**REQUEST, "confirm_token": token}, WHAT, user="")
    with pytest.raises(ToolFailure, match="different request"):
        ConfirmationGate().require(
            "imap_manage_mailbox", {**REQUEST, "confirm_token": token_for(short)}, "x", user=""
        )


@pytest.mark.parametrize("garbage", ["", "abc", "1.2", "999999999999.x", 5])
def test_garbage_tokens_are_invalid_input(garbage: object) -> None:
    with pytest.raises(ToolFailure) as caught:
        ConfirmationGate().require(
            "imap_manage_mailbox", {**REQUEST, "confirm_token": garbage}, "delete", user=""
        )
    assert caught.value.code == "invalid_input"
