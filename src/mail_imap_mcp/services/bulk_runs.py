"""Acting on a whole search, end to end: the dry run (count and newest matches), the set fixed by the
server's SEARCH, the user asked once (through the tool's ``ask``) before a move or delete of more than
``bulk_approval_threshold`` messages (counting those the caller moved unasked just before:
:mod:`.bulk_unasked`), the run as a background write, and the undo of a batch. The tool
words it all (:class:`Words`: ``presentation/bulk.py``); the work is :mod:`.bulk_search`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mail_imap_mcp.asking.records import Asked
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.mail.bulk import BulkSearch, SearchSet, SetRun
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.mail.write_records import FlagOperation
from mail_imap_mcp.operations import Operation, OperationRegistry
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.query import EVERYTHING, Query
from mail_imap_mcp.services.bulk_search import (
    UndoRecord,
    Work,
    destination,
    fix_set,
    flag_record,
    flagging,
    flags_back,
    forget_pending,
    keep_pending,
    keep_undo,
    kept_undo,
    move_record,
    moving,
    moving_back,
    pending,
    pending_key,
    preview,
    used_undo,
)
from mail_imap_mcp.services.bulk_unasked import unasked

#: A tool's work on the fixed set, and the undo record of what it did.
WorkOf = Callable[[SearchSet], tuple[Work, Callable[[SetRun], UndoRecord | None]]]
#: The tool's way of asking its user (``app.ask``): the question, the messages it is about, and what runs
#: once approved.
AskUser = Callable[[Any, int, Callable[[], ToolResult[Any]]], Asked]


class Words(Protocol):
    """How the tool answers (``presentation/bulk.py``'s ``RunWords``)."""

    def written(
        self,
        registry: OperationRegistry,
        account_id: str,
        line: AuditLine,
        work: Work,
        finish: Callable[[SetRun], ToolResult[Any]],
        accepted: Callable[[Operation], ToolResult[Any]],
    ) -> ToolResult[Any]: ...
    def sample(self, newest: list[SummaryRecord]) -> list[dict[str, Any]]: ...
    def review(self, search: BulkSearch, count: int, sample: list[dict[str, Any]], unasked: int) -> Any: ...
    def counted(
        self, search: BulkSearch, total: int, newest: list[SummaryRecord], rerun: dict[str, Any]
    ) -> ToolResult[Any]: ...
    def accepted(self, search: BulkSearch, matched: int, operation: Operation) -> ToolResult[Any]: ...
    def finished(self, search: BulkSearch, result: SetRun, token: str | None) -> ToolResult[Any]: ...
    def undone(self, search: BulkSearch, result: SetRun) -> ToolResult[Any]: ...
    def no_undo(self, token: str) -> Exception: ...


def bulk_search(app: Call, account_id: str, query: str, mailbox: str, tree: Query) -> BulkSearch:
    """``query`` (parsed: ``tree``) in ``mailbox`` of the account ``account_id`` names."""
    return BulkSearch(app.resolve_account(account_id), mailbox, query, tree)


def act_on_search(
    app: Call,
    tool: str,
    arguments: dict[str, Any],
    search: BulkSearch,
    *,
    work_of: WorkOf,
    words: Words,
    ask: AskUser | None,
) -> ToolResult[Any]:
    """The dry run (``arguments["dry_run"]``), or the run on the set, asking first where ``ask`` is given
    and the set is larger than the threshold (the set shown is kept for the call's rerun)."""
    account_id = app.write_connection(search.account_id).account_id
    if arguments.get("dry_run"):
        total, newest = preview(app, search)
        return words.counted(search, total, newest, {k: v for k, v in arguments.items() if k != "dry_run"})
    key = pending_key(app, tool, arguments)
    kept = pending(app, key) if ask is not None else None
    found = kept.set() if kept is not None else fix_set(app, search)
    line = AuditLine(app.caller, tool, account_id, "search", len(found.uids))

    def start() -> ToolResult[Any]:
        work, record_of = work_of(found)

        def finish(result: SetRun) -> ToolResult[Any]:
            return words.finished(search, result, keep_undo(app, record_of(result)))

        return _in_background(
            app, line, work, finish, lambda op: words.accepted(search, len(found.uids), op), words
        )

    if ask is None:
        return start()
    before = unasked(app, search.account_id)
    if kept is None and before.allows(len(found.uids)):
        before.add(len(found.uids))
        return start()
    if kept is None:
        kept = keep_pending(app, key, found, words.sample(preview(app, search)[1]))
    review = words.review(search, len(found.uids), kept.sample, before.count())

    def approved() -> ToolResult[Any]:
        forget_pending(app, key)
        before.clear()
        return start()

    done = ask(review, len(found.uids), approved)
    return done.answer(lambda operation: words.accepted(search, len(found.uids), operation))


def undo_batch(app: Call, tool: str, token: str, kind: str, words: Words) -> ToolResult[Any]:
    """Put back the batch ``token`` names, once (``words.no_undo`` when unknown, used or expired)."""
    record = kept_undo(app, token)
    if record is None or record.kind != kind:
        raise words.no_undo(token)
    line = AuditLine(
        app.caller, tool, app.write_connection(record.account_id).account_id, "undo", record.count()
    )
    where = BulkSearch(record.account_id, record.back_to or record.mailbox, "", EVERYTHING)
    mail = app.mail(record.account_id)
    work = moving_back(mail, record) if record.kind == "move" else flags_back(mail, record)

    def finish(result: SetRun) -> ToolResult[Any]:
        if not (result.not_attempted or result.unknown):  # else run again, it puts back the rest
            used_undo(app, token)
        return words.undone(where, result)

    return _in_background(
        app, line, work, finish, lambda op: words.accepted(where, record.count(), op), words
    )


def _in_background(
    app: Call,
    line: AuditLine,
    work: Work,
    finish: Callable[[SetRun], ToolResult[Any]],
    accepted: Callable[[Operation], ToolResult[Any]],
    words: Words,
) -> ToolResult[Any]:
    """``work`` as a never-replayed write on the account's mail, answered inline when quick (the tool's
    words say a failure that ends it in the background)."""
    account_id = app.write_connection(line.account_id).account_id
    return words.written(app.operations, account_id, line, work, finish, accepted)


def transfer_plan(app: Call, search: BulkSearch, action: str, named: str | None) -> tuple[str, WorkOf]:
    """Where a move or delete by search takes the messages, and its work."""
    account_id = app.write_connection(search.account_id).account_id
    to = destination(app, account_id, action, named)

    def work_of(found: SearchSet) -> tuple[Work, Callable[[SetRun], UndoRecord | None]]:
        work = moving(app.mail(account_id), found, search.tree, to)
        return work, lambda run: move_record(search.account_id, run, to, found.mailbox)

    return to, work_of


def flags_plan(app: Call, search: BulkSearch, operation: FlagOperation, flags: tuple[str, ...]) -> WorkOf:
    """The work of adding or removing ``flags`` on every match."""

    def work_of(found: SearchSet) -> tuple[Work, Callable[[SetRun], UndoRecord | None]]:
        work, changes = flagging(app.mail(search.account_id), search, found, operation, flags)
        return work, lambda run: flag_record(search.account_id, found, operation, changes)

    return work_of
