"""The bulk-write layer without a server: id grouping, the results ledger, not_attempted, the
per-mailbox runner's cancel and lost-connection handling, and the hand-off with its audit line."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pytest

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.mail.write_errors import DestinationMissing, WriteRefused
from mail_imap_mcp.operations import Operation, OperationRegistry, Progress
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.operations.batch import Batch, MailboxGroup, group_message_ids
from mail_imap_mcp.operations.ledger import Ledger
from mail_imap_mcp.operations.runner import StopRun, each_mailbox, in_one_call, run_bulk_write
from mail_imap_mcp.presentation.failures import envelope_of
from mail_imap_mcp.state import ANONYMOUS_CALLER
from tests.support.patience import patient


def only_account(name: str) -> str:
    """As AppContext.resolve_account with one account, "work": "default" names it."""
    return "work" if name == "default" else name


def batch(*ids: str) -> Batch:
    return group_message_ids(list(ids), only_account, ANONYMOUS_CALLER)


def progress(total: int) -> tuple[Progress, Operation]:
    operation = Operation("op_1_ab", "tool", "work", total)
    return Progress(operation), operation


# ------------------------------------------------------------------------------------------- grouping


def test_ids_are_grouped_per_mailbox_and_uidvalidity_in_the_order_given() -> None:
    found = batch("imap:work:INBOX:7:2", "imap:work:Work:9:1", "imap:work:INBOX:7:5", "imap:work:INBOX:8:1")
    assert [(g.mailbox, g.uidvalidity, g.uids) for g in found.groups] == [
        ("INBOX", 7, [2, 5]),
        ("Work", 9, [1]),
        ("INBOX", 8, [1]),
    ]
    assert [item.text for item in found.items] == [
        "imap:work:INBOX:7:2",
        "imap:work:Work:9:1",
        "imap:work:INBOX:7:5",
        "imap:work:INBOX:8:1",
    ]


def test_aliases_of_one_account_are_one_account_and_a_message_named_twice_counts_once() -> None:
    found = batch("imap:default:INBOX:7:2", "imap:work:INBOX:7:2", "imap:work:inbox:7:3")
    assert (found.account_id, found.given_account_id) == ("work", "default")
    assert [item.text for item in found.items] == ["imap:default:INBOX:7:2", "imap:work:inbox:7:3"]
    (inbox,) = found.groups  # INBOX in any case is one mailbox
    assert inbox.uids == [2, 3]


def test_ids_of_several_accounts_and_malformed_ids_are_invalid_input() -> None:
    with pytest.raises(ToolFailure) as several:
        batch("imap:work:INBOX:7:2", "imap:other:INBOX:7:2")
    assert several.value.code is ErrorCode.INVALID_INPUT
    assert several.value.details["parameter"] == "message_ids"
    assert "other, work" in several.value.message
    with pytest.raises(ToolFailure) as malformed:
        batch("imap:work:INBOX:7:2", "imap:work:INBOX:x:2")
    assert malformed.value.details == {"parameter": "message_ids", "index": 1}


# --------------------------------------------------------------------------------------------- ledger


def test_the_ledger_keeps_each_message_settled_or_failed_and_the_rest_not_attempted() -> None:
    found = batch("imap:work:A:1:1", "imap:work:A:1:2", "imap:work:B:1:3")
    a, b = found.groups
    ledger: Ledger[str] = Ledger()
    ledger.settle(a.items[0], "done")
    ledger.fail([a.items[1]], "not_found", "check", "gone")
    ledger.not_attempted([a, b])
    assert [(i.code, i.message_id, i.retryable) for i in ledger.issues] == [
        ("not_found", "imap:work:A:1:2", False),
        ("not_attempted", "imap:work:B:1:3", True),
    ]
    assert ledger.open_items([a, b]) == []


def test_the_call_fails_as_a_whole_only_when_every_message_failed_for_one_reason() -> None:
    found = batch("imap:work:A:1:1", "imap:work:A:1:2")
    stale = ToolFailure(ErrorCode.CONFLICT, "stale")
    ledger: Ledger[str] = Ledger()
    ledger.fail(found.items, "conflict", "select", "stale", failure=stale)
    assert ledger.sole_failure() is stale
    ledger.outcome_unknown(found.items[:1])
    assert ledger.sole_failure() is None  # something may have changed: never hidden behind a failure
    assert ledger.wrote


def test_issues_come_in_the_order_of_the_ids_given() -> None:
    found = batch("imap:work:A:1:1", "imap:work:B:1:2")
    ledger: Ledger[str] = Ledger()
    ledger.fail([found.items[1]], "not_found", "check", "gone")
    ledger.fail([found.items[0]], "conflict", "select", "stale")
    assert [i.message_id for i in ledger.issues_in_order(found)] == ["imap:work:A:1:1", "imap:work:B:1:2"]


# --------------------------------------------------------------------------------------------- runner


def three_mailboxes() -> tuple[Batch, Ledger[str]]:
    return batch("imap:work:A:1:1", "imap:work:B:1:2", "imap:work:C:1:3"), Ledger()


def writes(
    ledger: Ledger[str], then: Callable[[MailboxGroup], None] | None = None
) -> Callable[[MailboxGroup], None]:
    """A step that changes its mailbox's messages, after ``then`` (which may fail)."""

    def step(group: MailboxGroup) -> None:
        if then is not None:
            then(group)
        for item in group.items:
            ledger.settle(item, "done")
        ledger.wrote = True

    return step


def test_cancel_stops_between_mailboxes_and_the_rest_is_not_attempted() -> None:
    found, ledger = three_mailboxes()
    tracker, operation = progress(3)

    def cancel_after_a(group: MailboxGroup) -> None:
        assert group.mailbox == "A", "a mailbox ran after the cancel"
        operation.cancel_requested.set()  # the user cancels while A is being changed

    each_mailbox(found.groups, ledger, tracker, writes(ledger, cancel_after_a))
    assert list(ledger.results.values()) == ["done"]
    assert [(i.code, i.message_id) for i in ledger.issues] == [
        ("not_attempted", "imap:work:B:1:2"),
        ("not_attempted", "imap:work:C:1:3"),
    ]
    assert "cancelled" in ledger.issues[0].message
    assert operation.done == 1


def test_a_connection_lost_after_a_write_leaves_the_rest_not_attempted() -> None:
    found, ledger = three_mailboxes()

    def reset_at_b(group: MailboxGroup) -> None:
        if group.mailbox == "B":
            raise ConnectionResetError("reset by peer")

    each_mailbox(found.groups, ledger, progress(3)[0], writes(ledger, reset_at_b))
    assert len(ledger.results) == 1
    assert [(i.code, i.message_id) for i in ledger.issues] == [
        ("not_attempted", "imap:work:B:1:2"),
        ("not_attempted", "imap:work:C:1:3"),
    ]


def test_a_connection_lost_before_any_write_fails_the_call() -> None:
    found, ledger = three_mailboxes()

    def reset(group: MailboxGroup) -> None:
        raise TimeoutError("timed out")

    with pytest.raises(TimeoutError):
        each_mailbox(found.groups, ledger, progress(3)[0], writes(ledger, reset))
    assert not ledger.issues


def test_a_mailbox_refused_after_a_write_is_reported_and_the_run_goes_on() -> None:
    found, ledger = three_mailboxes()

    def refuse_b(group: MailboxGroup) -> None:
        if group.mailbox == "B":
            raise ToolFailure(ErrorCode.LIMIT_EXCEEDED, "over quota")

    each_mailbox(found.groups, ledger, progress(3)[0], writes(ledger, refuse_b))
    assert len(ledger.results) == 2
    assert [(i.code, i.message_id) for i in ledger.issues] == [("limit_exceeded", "imap:work:B:1:2")]


def test_a_failure_before_any_write_is_the_calls() -> None:
    found, ledger = three_mailboxes()

    def refuse(group: MailboxGroup) -> None:
        raise ToolFailure(ErrorCode.PERMISSION_DENIED, "no")

    with pytest.raises(ToolFailure):
        each_mailbox(found.groups, ledger, progress(3)[0], writes(ledger, refuse))


def test_a_write_the_server_refused_after_a_write_is_said_by_the_registry_and_the_run_goes_on() -> None:
    # The IMAP layer raises the typed refusal; the tool's ``refused`` (the registry) words the issue.
    found, ledger = three_mailboxes()

    def refuse_b(group: MailboxGroup) -> None:
        if group.mailbox == "B":
            raise WriteRefused(Exception("[OVERQUOTA] Quota exceeded"), "UID COPY", "B")

    each_mailbox(found.groups, ledger, progress(3)[0], writes(ledger, refuse_b), envelope_of)
    assert len(ledger.results) == 2
    assert [(i.code, i.message_id) for i in ledger.issues] == [("limit_exceeded", "imap:work:B:1:2")]
    assert ledger.issues[0].message == "The server refused UID COPY in 'B': [OVERQUOTA] Quota exceeded"


def test_a_typed_refusal_before_any_write_is_the_calls_as_it_is() -> None:
    found, ledger = three_mailboxes()

    def refuse(group: MailboxGroup) -> None:
        raise DestinationMissing("Archiv")

    with pytest.raises(DestinationMissing):  # the connection's translate words it for the call
        each_mailbox(found.groups, ledger, progress(3)[0], writes(ledger, refuse), envelope_of)
    assert not ledger.issues


def test_a_step_that_recorded_a_lost_connection_stops_the_run() -> None:
    found, ledger = three_mailboxes()

    def unknown(group: MailboxGroup) -> None:
        ledger.outcome_unknown(group.items)
        raise StopRun() from OSError("gone")

    each_mailbox(found.groups, ledger, progress(3)[0], unknown)
    assert [i.code for i in ledger.issues] == ["outcome_unknown", "not_attempted", "not_attempted"]
    assert [i.message_id for i in ledger.issues] == [item.text for item in found.items]


# ----------------------------------------------------------------------------------- hand-off, audit


class FakeConnection:
    """An account connection that runs the work on no session, and says whether it ran it as a write."""

    account_id = "work"

    def __init__(self) -> None:
        self.ran: list[str] = []

    def run(self, work: Callable[[object], object]) -> object:
        self.ran.append("read")
        return work(None)

    def run_write(self, work: Callable[[object], object]) -> object:
        self.ran.append("write")
        return work(None)


def hand_off(
    work: Callable[[object, Progress], str], *, dry_run: bool = False, inline_s: float = 2.0
) -> tuple[str, FakeConnection]:
    connection = FakeConnection()
    answer = run_bulk_write(
        OperationRegistry(inline_s=inline_s),
        connection,  # type: ignore[arg-type]
        AuditLine(ANONYMOUS_CALLER, "imap_tool", "work", "add", 3, failure_prefix="failed:"),
        work=in_one_call(work, dry_run=dry_run),
        finish=lambda outcome: f"answer {outcome}",
        status_of=lambda answer: "partial" if "partial" in answer else "ok",
        accepted=lambda operation: f"accepted {operation.state.value}",
    )
    return answer, connection


def test_a_quick_write_answers_inline_once_audited(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "mail_imap_mcp.audit")
    answer, connection = hand_off(lambda session, progress: "partial")
    assert (answer, connection.ran) == ("answer partial", ["write"])
    assert "tool=imap_tool account=work action=add messages=3 outcome=partial" in caplog.text
    _, dry = hand_off(lambda session, progress: "ok", dry_run=True)
    assert dry.ran == ["read"]  # a dry run changes nothing: run as a read


def test_a_failed_write_is_audited_and_raised(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "mail_imap_mcp.audit")

    def refused(session: object, progress: Progress) -> str:
        raise ToolFailure(ErrorCode.CONFLICT, "stale")

    with pytest.raises(ToolFailure):
        hand_off(refused)
    assert "outcome=failed:conflict" in caplog.text


def test_a_slow_write_continues_in_the_background() -> None:
    release = threading.Event()

    def slow(session: object, progress: Progress) -> str:
        release.wait(patient(5))
        return "ok"

    try:
        answer, _ = hand_off(slow, inline_s=0.05)
    finally:
        release.set()
    assert answer in {"accepted running", "accepted accepted"}
