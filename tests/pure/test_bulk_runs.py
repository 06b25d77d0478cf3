"""Runs on a whole search and their undo (services/bulk_runs.py, services/bulk_search.py and the chunk loop
of operations/bulk.py), through the tools' own flows (``by_search`` of imap_apply_to_messages and
imap_update_message_flags), on mail kept in memory (tests/support/mail/memory_mail.py, its runs in
memory_runs.py). Every test counts every message of every mailbox before and after: none lost, none
twice; an undo puts back exactly what its run changed, once. A chunk whose answer was lost is settled, or
left unknown with the rest not attempted; a server out of reach before anything was sent fails the call.
The same runs on the real servers, through the MCP client and a failing link:
tests/integration/writes/test_write_by_search.py and test_write_by_search_runs.py."""

from __future__ import annotations

from collections import Counter
from datetime import date
from types import SimpleNamespace
from typing import Any, cast

import pytest

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ErrorCode, ToolFailure, ToolResult
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.roles import INBOX, TRASH
from mail_imap_mcp.mail.write_errors import DestinationMissing
from mail_imap_mcp.operations import Operation, OperationRegistry, Progress, bulk
from mail_imap_mcp.operations.chunk_sizes import ChunkSizes
from mail_imap_mcp.query import EVERYTHING, parse
from mail_imap_mcp.services.bulk_search import move_record, moving, moving_back
from mail_imap_mcp.state import MemoryStore
from mail_imap_mcp.tools.apply_to_messages.by_search import by_search as apply_by_search
from mail_imap_mcp.tools.apply_to_messages.models import ApplyToMessagesInput
from mail_imap_mcp.tools.update_message_flags.by_search import by_search as flags_by_search
from mail_imap_mcp.tools.update_message_flags.models import UpdateFlagsInput
from tests.support.mail.memory_mail import MemoryCall, MemoryMail
from tests.support.mail.memory_runs import Trouble
from tests.support.patience import patient

OFFERS, NOTES = 120, 30
QUERY = "subject:offer"
OFFERS_TREE = parse(QUERY, today=date(2026, 1, 1)).tree


class BulkCall(MemoryCall):
    """A write call on mail in memory: its gate open, its state in memory, its work answered inline."""

    def __init__(self, mail: MemoryMail) -> None:
        super().__init__({"default": mail}, server={"bulk_approval_threshold": 1000})
        self.store = MemoryStore()
        self.lasting_store = MemoryStore()
        self.operations = OperationRegistry(inline_s=patient(60))

    def write_connection(self, account_id: str) -> Any:
        return SimpleNamespace(account_id=account_id)


@pytest.fixture(autouse=True)
def chunks_of_twenty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=20, least=20, most=20))


def mailbox(**trouble: Any) -> MemoryMail:
    """INBOX with :data:`OFFERS` matches of :data:`QUERY` among :data:`NOTES` others, some offers flagged;
    Archive and Trash empty."""
    mail = MemoryMail({"Archive": None, "Trash": TRASH})
    for n in range(OFFERS):
        mail.append(INBOX, _message(f"Offer {n}"), ["\\Flagged"] if n % 4 == 0 else [])
    for n in range(NOTES):
        mail.append(INBOX, _message(f"Note {n}"))
    if trouble:
        mail.trouble = Trouble(**trouble)
    return mail


def started(**trouble: Any) -> tuple[MemoryMail, BulkCall, dict[str, Counter[str]]]:
    """:func:`mailbox`, a call on it, and its messages counted before anything runs."""
    mail = mailbox(**trouble)
    return mail, BulkCall(mail), counts(mail)


def _message(subject: str) -> bytes:
    head = f"From: <deals@example.org>\r\nTo: <me@example.org>\r\nSubject: {subject}\r\n"
    return f"{head}Message-ID: <{subject.replace(' ', '.')}@example.org>\r\n\r\nHello.\r\n".encode()


def counts(mail: MemoryMail) -> dict[str, Counter[str]]:
    """Each mailbox's Message-IDs, counted."""
    held: dict[str, Counter[str]] = {}
    for box in mail.mailboxes():
        heads = [mail.header(box.name, uid) or b"" for uid in mail.search(box.name, EVERYTHING)]
        held[box.name] = Counter(mime.parse_header_block(head)["message-id"][0] for head in heads)
    return held


def every(mail: MemoryMail) -> Counter[str]:
    """Every message of the account, counted (none lost, none twice)."""
    return sum(counts(mail).values(), Counter())


def archived(mail: MemoryMail) -> int:
    """How many messages Archive holds."""
    return sum(counts(mail)["Archive"].values())


def offers(count: int = OFFERS) -> Counter[str]:
    return Counter(f"<Offer.{n}@example.org>" for n in range(count))


def move(call: BulkCall, **args: Any) -> Any:
    given = {"query": QUERY, "mailbox": INBOX, "action": "move", "destination_mailbox": "Archive", **args}
    return _data(apply_by_search(cast(Call, call), ApplyToMessagesInput.model_validate(given)))


def undo_move(call: BulkCall, token: str) -> Any:
    given = ApplyToMessagesInput(action="move", undo=token)
    return _data(apply_by_search(cast(Call, call), given))


def flag(call: BulkCall, **args: Any) -> Any:
    given = {"query": QUERY, "mailbox": INBOX, "operation": "add", "flags": ["\\Flagged"], **args}
    return _data(flags_by_search(cast(Call, call), UpdateFlagsInput.model_validate(given)))


def undo_flags(call: BulkCall, token: str) -> Any:
    given = UpdateFlagsInput(operation="remove", flags=["\\Flagged"], undo=token)
    return _data(flags_by_search(cast(Call, call), given))


def _data(result: ToolResult[Any]) -> Any:
    assert result.data is not None
    return result.data


def test_a_move_by_search_moves_every_match_and_its_undo_puts_exactly_them_back() -> None:
    mail, call, before = started()
    done = move(call)
    assert (done.search.matched, done.search.done, done.search.gone, done.search.not_attempted) == (
        OFFERS,
        OFFERS,
        0,
        0,
    )
    assert counts(mail)["Archive"] == offers() and sum(counts(mail)[INBOX].values()) == NOTES
    assert every(mail) == sum(before.values(), Counter())
    undone = undo_move(call, done.search.undo_token)
    assert (undone.search.matched, undone.search.done) == (OFFERS, OFFERS)
    assert counts(mail) == before
    with pytest.raises(ToolFailure) as used:  # an undo works once
        undo_move(call, done.search.undo_token)
    assert used.value.details == {"parameter": "undo"}
    assert counts(mail) == before


def test_a_delete_by_search_goes_to_the_trash_its_role_names() -> None:
    mail = mailbox()
    done = move(BulkCall(mail), action="delete", destination_mailbox=None)
    assert done.destination_mailbox == "Trash" and counts(mail)["Trash"] == offers()


def test_a_move_to_a_mailbox_that_does_not_exist_changes_nothing() -> None:
    mail = mailbox()
    before = counts(mail)
    with pytest.raises(DestinationMissing) as missing:
        move(BulkCall(mail), destination_mailbox="Nowhere")
    assert (missing.value.mailbox, missing.value.parameter) == ("Nowhere", "destination_mailbox")
    assert counts(mail) == before


def test_a_chunk_whose_answer_was_lost_is_found_out_and_counted_done_and_undone() -> None:
    mail, call, before = started(chunk=3)
    done = move(call)
    assert (done.search.done, done.search.outcome_unknown, done.search.not_attempted) == (OFFERS, 0, 0)
    assert counts(mail)["Archive"] == offers() and every(mail) == sum(before.values(), Counter())
    undo_move(call, done.search.undo_token)
    assert counts(mail) == before


def test_a_chunk_lost_for_good_is_unknown_the_rest_not_attempted_and_the_rerun_and_undos_lose_nothing() -> (
    None
):
    mail, call, before = started(chunk=3, settles=False, timed_out=True)
    first = move(call)
    assert (first.search.done, first.search.outcome_unknown, first.search.not_attempted) == (40, 20, 60)
    assert first.status == "partial" and [i.code for i in first.issues] == [
        "outcome_unknown",
        "not_attempted",
    ]
    assert "command_timeout_s" in first.issues[0].message
    # The unknown chunk did move (in memory it always does): the rerun moves only what is left.
    assert archived(mail) == 60 and every(mail) == sum(before.values(), Counter())
    mail.trouble = None
    second = move(call)
    assert (second.search.matched, second.search.done) == (60, 60)
    assert counts(mail)["Archive"] == offers()
    undo_move(call, second.search.undo_token)
    undo_move(call, first.search.undo_token)
    # Each undo put back what its run said it moved; the unknown chunk stays where it went, once.
    assert archived(mail) == 20 and every(mail) == sum(before.values(), Counter())


def test_a_server_out_of_reach_before_anything_moved_fails_the_call_and_changes_nothing() -> None:
    mail = mailbox(chunk=1, kind="unreachable")
    before = counts(mail)
    with pytest.raises(ToolFailure) as failed:  # ConnectionLost, in the failure registry's words
        move(BulkCall(mail))
    assert failed.value.code == ErrorCode.UNAVAILABLE
    assert counts(mail) == before


def test_a_server_out_of_reach_mid_run_leaves_the_rest_not_attempted_and_the_undo_exact() -> None:
    mail, call, before = started(chunk=4, kind="unreachable")
    done = move(call)
    assert (done.search.done, done.search.outcome_unknown, done.search.not_attempted) == (60, 0, 60)
    assert archived(mail) == 60
    undo_move(call, done.search.undo_token)
    assert counts(mail) == before


def test_an_undo_stopped_midway_is_kept_and_run_again_puts_back_the_rest_once() -> None:
    mail, call, before = started()
    done = move(call)
    mail.trouble = Trouble(chunk=mail.chunks_sent + 2, kind="unreachable")
    stopped = undo_move(call, done.search.undo_token)
    assert (stopped.search.done, stopped.search.not_attempted) == (20, OFFERS - 20)
    mail.trouble = None
    rest = undo_move(call, done.search.undo_token)
    assert (rest.search.matched, rest.search.gone, rest.search.done) == (OFFERS, 20, OFFERS - 20)
    assert counts(mail) == before
    with pytest.raises(ToolFailure):
        undo_move(call, done.search.undo_token)


def test_a_mailbox_made_again_since_the_set_was_fixed_is_a_conflict_and_nothing_moves() -> None:
    mail = mailbox()
    found = mail.fixed(INBOX, OFFERS_TREE)
    mail.delete(INBOX)  # made again by another client, with the same messages: its UIDs name others now
    mail.create(INBOX)
    for n in range(OFFERS):
        mail.append(INBOX, _message(f"Offer {n}"))
    before = counts(mail)
    progress = Progress(Operation("op", "imap_apply_to_messages", "default", len(found.uids)))
    with pytest.raises(UidValidityChanged) as changed:
        bulk.run_on_set(mail, found, OFFERS_TREE, progress, mail.moving(found, "Archive"), moves=True)
    assert (changed.value.mailbox, changed.value.expected) == (INBOX, found.uidvalidity)
    assert counts(mail) == before


def test_matches_arriving_during_the_run_are_left_alone_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    mail = mailbox()
    call = BulkCall(mail)
    sent = mail.sent

    def arriving(uids: list[int], change: Any) -> Any:
        mail.append(INBOX, _message(f"Offer late {mail.chunks_sent}"))
        return sent(uids, change)

    monkeypatch.setattr(mail, "sent", arriving)
    done = move(call)
    assert (done.search.matched, done.search.done, done.search.came_meanwhile) == (
        OFFERS,
        OFFERS,
        OFFERS // 20,
    )
    assert counts(mail)["Archive"] == offers()
    assert sum(counts(mail)[INBOX].values()) == NOTES + OFFERS // 20


def test_a_cancel_between_chunks_leaves_the_rest_not_attempted_and_the_undo_puts_back_what_moved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mail = mailbox()
    before = counts(mail)
    found = mail.fixed(INBOX, OFFERS_TREE)
    operation = Operation("op", "imap_apply_to_messages", "default", len(found.uids))
    sent = mail.sent

    def cancelled_after_two(uids: list[int], change: Any) -> Any:
        if mail.chunks_sent == 2:  # the third chunk goes out; the cancel is seen before the fourth
            operation.cancel_requested.set()
        return sent(uids, change)

    monkeypatch.setattr(mail, "sent", cancelled_after_two)
    run = moving(mail, found, OFFERS_TREE, "Archive")(Progress(operation))
    assert (run.done, run.not_attempted, run.cancelled, run.unnamed) == (60, 60, True, 0)
    assert archived(mail) == 60
    record = move_record("default", run, "Archive", INBOX)
    assert record is not None and record.count() == 60
    back = moving_back(mail, record)(Progress(Operation("op", "imap_apply_to_messages", "default", 60)))
    assert (back.matched, back.done) == (60, 60)
    assert counts(mail) == before


def test_flags_by_search_change_only_what_lacked_them_and_the_undo_reverts_exactly_that() -> None:
    mail = mailbox()
    call = BulkCall(mail)
    flagged_before = _flagged(mail)
    before = counts(mail)
    done = flag(call, flags=["\\Flagged"])
    assert done.search.done == OFFERS and _flagged(mail) == set(mail.search(INBOX, OFFERS_TREE))
    undo_flags(call, done.search.undo_token)
    assert _flagged(mail) == flagged_before and counts(mail) == before


def test_a_flag_chunk_whose_answer_was_lost_is_stored_again_and_undone_exactly() -> None:
    mail = mailbox(chunk=2)
    call = BulkCall(mail)
    flagged_before = _flagged(mail)
    done = flag(call, flags=["\\Flagged"])
    assert (done.search.done, done.search.outcome_unknown) == (OFFERS, 0)
    undo_flags(call, done.search.undo_token)
    assert _flagged(mail) == flagged_before


def test_a_flag_run_that_changed_nothing_has_no_undo() -> None:
    mail = mailbox()
    done = flag(BulkCall(mail), query="subject:offer is:flagged", flags=["\\Flagged"])
    assert (done.search.done, done.search.undo_token) == (OFFERS // 4, None)


def _flagged(mail: MemoryMail) -> set[int]:
    every_uid = mail.search(INBOX, EVERYTHING)
    return {uid for uid, state in mail.flags(INBOX, every_uid).items() if "\\Flagged" in state.flags}
