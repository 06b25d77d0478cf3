"""What acting on a whole search answers (``data.search`` of imap_apply_to_messages and
imap_update_message_flags given ``query``), its refusals, and what the user is asked to approve before a
large move (:class:`RunWords`, handed to :func:`mail_imap_mcp.services.bulk_runs.act_on_search`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from mail_imap_mcp.asking.page_server.page import review_page
from mail_imap_mcp.asking.review import Review, ReviewField
from mail_imap_mcp.envelope import ErrorCode, Issue, NextAction, Payload, ToolFailure, ToolResult
from mail_imap_mcp.envelope.model import status_for
from mail_imap_mcp.mail.bulk import BulkSearch, SetRun
from mail_imap_mcp.mail.directory import same_mailbox
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.operations import Operation, OperationRegistry, Progress
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.operations.bulk import UNASKED_WINDOW_S
from mail_imap_mcp.operations.runner import run_in_background
from mail_imap_mcp.presentation.mail_failures import conflict
from mail_imap_mcp.presentation.writes import accepted_summary, follow_operation, write_failure
from mail_imap_mcp.query import Query, parse
from mail_imap_mcp.query.structure import split

BY_SEARCH = "Instead of ids: every match in mailbox."
FOR_QUERY = "For query."
UNDO_TOKEN = "data.search.undo_token."
SEARCH_RUN = "Given query (or undo): the search acted on, in counts."
_BY_SEARCH = (
    "**By search.** Instead of `message_ids`, `query` (the query language of imap_search_messages, without "
    "`in:`, `has:attachment` and `filename:`) with `mailbox` (and `account_id`) acts on every message the "
    "search finds there, with no cap of 250. `dry_run` answers the count and the newest ten matches "
    "(`data.search`; the local index answers where the account keeps one). The set is fixed by the server's "
    "own UID SEARCH when the run starts (or when the user is asked); a message that comes to match meanwhile "
    "is left alone and counted (`came_meanwhile`). It runs as a background write (`data.background`, "
    "imap_get_operation shows done of total, imap_cancel_operation stops it within about a second), "
    "never sent twice; a chunk whose answer was lost is checked and finished (`outcome_unknown` and "
    "`not_attempted` say what is not known or not done). `data.search.undo_token` (next_action) puts the whole batch back once, within 24 hours "
    "(kept in the state store: Redis in team mode)."
)
APPLY_DETAILS = (
    f"{_BY_SEARCH} By search: move or delete (to Trash) only; a permanent delete by search is refused. A "
    "run of more than `bulk_approval_threshold` messages (25 unless set) asks the user once, showing the "
    "count, the search and the newest matches (MCP elicitation, else the approval page; where neither "
    "can ask, the confirmation token of `confirmation_required`)."
)
FLAGS_DETAILS = f"{_BY_SEARCH} By search: add or remove flags only (no approval: they undo as easily)."


class SampleMessage(Payload):
    message_id: str = Field(description="Its message_id.")
    date: str | None = Field(description="Its date (ISO 8601 UTC).")
    from_: str | None = Field(alias="from", description="Its sender.")
    subject: str | None = Field(description="Its subject.")


class SearchRun(Payload):
    """A whole search acted on (or, in a dry run, counted)."""

    query: str = Field(description="The query, as given (empty for an undo).")
    mailbox: str = Field(description="The mailbox searched (for an undo: where the messages were).")
    matched: int = Field(
        description="Messages the search found: the set fixed when the run started (dry run: now)."
    )
    done: int = Field(description="Of those, messages changed (dry run: 0).")
    came_meanwhile: int = Field(
        description="Matches not in the set, at the run's start or end (came after it was fixed): left alone."
    )
    gone: int = Field(description="Of the set, messages gone or no longer matching when run: left alone.")
    outcome_unknown: int = Field(
        description="Sent, then no answer and no way to check: may or may not have changed; not sent again."
    )
    not_attempted: int = Field(description="Not sent: cancelled, or after the server stopped answering.")
    sample: list[SampleMessage] = Field(description="Dry run: the first ten matches, newest first.")
    undo_token: str | None = Field(
        description="Pass as undo to put the whole batch back (kept 24 hours); null when nothing to undo."
    )


def checked_search(query: str, mailbox: str | None) -> tuple[str, Query]:
    """The mailbox and the parsed ``query`` of a run on a search (``invalid_input`` naming what is wrong)."""
    if mailbox is None:
        raise ToolFailure.invalid_input("mailbox", "required with query: the one mailbox to act on.")
    if mailbox == "*":
        raise ToolFailure.invalid_input("mailbox", "one mailbox: a search of every mailbox is not acted on.")
    parsed = parse(query, today=datetime.now(UTC).date())  # QuerySyntaxError: the registry names query
    if parsed.scope is not None:
        raise ToolFailure.invalid_input("query", "in: is not accepted here; say the mailbox in mailbox.")
    if split(parsed.tree)[1] is not None:
        raise ToolFailure.invalid_input(
            "query", "has:attachment and filename: are not acted on by search; search, then give message_ids."
        )
    return mailbox, parsed.tree


def check_transfer(args: Any) -> None:
    """imap_apply_to_messages by search: move or delete (to Trash) only."""
    if args.message_ids is not None and args.query is not None:
        raise ToolFailure.invalid_input(
            "query", "give message_ids or query, not both.", conflicts_with="message_ids"
        )
    if args.undo is None and args.query is None:
        raise ToolFailure.invalid_input("message_ids", "give message_ids (or query with mailbox).")
    if args.permanent:
        raise ToolFailure.invalid_input(
            "permanent", "a permanent delete by search is refused; give message_ids."
        )
    if args.undo is None and args.action not in ("move", "delete"):
        raise ToolFailure.invalid_input("action", f"{args.action} by search is not offered: move or delete.")
    if args.undo is None and args.action == "move" and args.destination_mailbox is None:
        raise ToolFailure.invalid_input("destination_mailbox", "required for move.")


def check_destination(destination: str, mailbox: str) -> None:
    if same_mailbox(destination, mailbox):
        raise ToolFailure.invalid_input(
            "destination_mailbox", f"the messages are already in {destination!r}."
        )


def check_flags(args: Any, flags: tuple[str, ...]) -> None:
    """imap_update_message_flags by search: add or remove flags only."""
    if args.message_ids is not None and args.query is not None:
        raise ToolFailure.invalid_input(
            "query", "give message_ids or query, not both.", conflicts_with="message_ids"
        )
    if args.undo is None and args.query is None:
        raise ToolFailure.invalid_input("message_ids", "give message_ids (or query with mailbox).")
    if args.undo is None and (args.operation == "replace" or args.labels is not None or not flags):
        raise ToolFailure.invalid_input(
            "operation", "by search: add or remove flags (replace and labels take message_ids)."
        )


def review_of(
    verb: str, count: int, search: BulkSearch, sample: list[SampleMessage], unasked: int = 0
) -> Review:
    """The question a move or delete of ``count`` messages found by a search asks the user (``unasked``:
    messages moved by search without asking in the last minutes, which count towards the threshold)."""
    lines = [f"{m.date or '-'}  {m.from_ or '-'}  {m.subject or '(no subject)'}" for m in sample]
    before = f"{unasked} moved by search without asking in the last {UNASKED_WINDOW_S / 60:.0f} minutes"
    return Review(
        title=f"{verb}: {count} message(s), every one of the search below:",
        fields=[
            ReviewField(label="Search", values=[_in_words(search)]),
            ReviewField(label="Messages", values=[str(count)] + ([before] if unasked else [])),
            ReviewField(label=f"Among them (newest {len(lines)})", values=lines, listed=True),
        ],
        closing=f"{verb}: these {count} message(s) (mail arriving meanwhile is left alone)",
    )


def _in_words(search: BulkSearch) -> str:
    return f"messages of {search.mailbox!r} matching {search.query!r}"


def _summary(verb: str, search: BulkSearch, run: SearchRun) -> str:
    text = f"{verb}: {run.done} of {run.matched} {_in_words(search)}"
    left = [
        f"{run.came_meanwhile} arrived meanwhile and were left alone" if run.came_meanwhile else "",
        f"{run.gone} gone or no longer matching" if run.gone else "",
        f"{run.outcome_unknown} outcome unknown (no answer; not sent again)" if run.outcome_unknown else "",
        f"{run.not_attempted} not attempted" if run.not_attempted else "",
    ]
    said = "; ".join(part for part in left if part)
    return f"{text}; {said}" if said else text


def _issues(search: BulkSearch, run: SetRun) -> list[Issue]:
    issues = []
    if run.unknown:
        why = (
            "The server did not answer within command_timeout_s"
            if run.timed_out
            else "The connection was lost"
        )
        issues.append(
            Issue(
                code="outcome_unknown",
                stage="write",
                message=f"{why} after {run.unknown} message(s) were sent, and the server could not be asked "
                f"again: they may or may not have changed, and were not sent again. Search "
                f"{search.mailbox!r} to see.",
                retryable=False,
            )
        )
    if run.not_attempted:
        why = (
            "the operation was cancelled"
            if run.cancelled
            else "the server did not answer in time"
            if run.timed_out
            else "the connection was lost"
        )
        issues.append(
            Issue(
                code="not_attempted",
                stage="write",
                message=f"{run.not_attempted} message(s) were not attempted ({why}); nothing was sent for "
                "them. Run the search again to act on them.",
                retryable=True,
            )
        )
    return issues


def _warnings(run: SetRun) -> list[str]:
    said = []
    if run.came_meanwhile:
        said.append(
            f"{run.came_meanwhile} message(s) came to match after the set was fixed and were left alone."
        )
    if run.gone:
        said.append(f"{run.gone} message(s) of the set were gone or no longer matched; left alone.")
    if run.unnamed:
        said.append(
            f"{run.unnamed} moved message(s) have no new UID from the server (no UIDPLUS): not undone."
        )
    return said


def _run(search: BulkSearch, run: SetRun, token: str | None = None) -> SearchRun:
    return SearchRun(
        query=search.query,
        mailbox=search.mailbox,
        matched=run.matched,
        done=run.done,
        came_meanwhile=run.came_meanwhile,
        gone=run.gone,
        outcome_unknown=run.unknown,
        not_attempted=run.not_attempted,
        sample=[],
        undo_token=token,
    )


class RunWords:
    """How one tool answers a run on a search: its data ``model`` with the ``common`` fields it echoes, its
    ``verb``, and the arguments its undo call needs besides ``undo`` (``undo_with``)."""

    #: How the approval page shows the question (any review, its fields one per line).
    render = staticmethod(review_page)

    def __init__(
        self, tool: str, model: type[BaseModel], common: dict[str, Any], verb: str, undo_with: dict[str, str]
    ) -> None:
        self.tool, self.model, self.common, self.verb, self.undo_with = tool, model, common, verb, undo_with

    def _answer(
        self,
        run: SearchRun,
        summary: str,
        then: NextAction | None,
        operation: Operation | None = None,
        issues: list[Issue] | None = None,
        warnings: list[str] | None = None,
    ) -> ToolResult[Any]:
        ref = operation.ref() if operation is not None else None
        fields = {"requested": run.matched, "changed": run.done, "mailboxes": [], "background": ref}
        issues = issues or []
        data = self.model.model_validate(
            {
                **self.common,
                **fields,
                "status": status_for(issues),
                "issues": issues,
                "next_action": then,
                "search": run,
            }
        )
        return ToolResult(summary=summary, data=data, warnings=warnings or [])

    def written(
        self,
        registry: OperationRegistry,
        account_id: str,
        line: AuditLine,
        work: Callable[[Progress], SetRun],
        finish: Callable[[SetRun], ToolResult[Any]],
        accepted: Callable[[Operation], ToolResult[Any]],
    ) -> ToolResult[Any]:
        """``work`` run as a bulk write in calls of its own (:func:`~mail_imap_mcp.operations.runner.
        run_in_background`), its failure in the background worded by the failure registry."""
        return run_in_background(
            registry,
            account_id,
            line,
            work=work,
            finish=finish,
            status_of=lambda result: str(getattr(result.data, "status", "ok")),
            accepted=accepted,
            failure_of=lambda exc: self._failure(account_id, exc),
        )

    @staticmethod
    def _failure(account_id: str, exc: Exception) -> ToolFailure | None:
        """A failure that ends the run, in the registry's words; a mailbox recreated since the set was
        fixed (its UIDs name other messages now) is the ``conflict`` of a write by stale ids."""
        if isinstance(exc, UidValidityChanged):
            return conflict(account_id, exc.mailbox, exc.expected, exc.actual)
        return write_failure(exc)

    def sample(self, newest: list[SummaryRecord]) -> list[dict[str, Any]]:
        """The matches a question and a dry run show, as kept with the set."""
        return [
            SampleMessage(
                message_id=m.message_id, date=m.date, subject=m.subject, **{"from": m.from_}
            ).model_dump(by_alias=True)
            for m in newest
        ]

    def review(self, search: BulkSearch, count: int, sample: list[dict[str, Any]], unasked: int) -> Review:
        shown = [SampleMessage.model_validate(m) for m in sample]
        return review_of(self.verb, count, search, shown, unasked)

    def counted(
        self, search: BulkSearch, total: int, newest: list[SummaryRecord], rerun: dict[str, Any]
    ) -> ToolResult[Any]:
        shown = [SampleMessage.model_validate(m) for m in self.sample(newest)]
        run = _run(search, SetRun(matched=total)).model_copy(update={"sample": shown})
        summary = f"Dry run: {total} {_in_words(search)} would be changed ({self.verb}); nothing changed"
        return self._answer(
            run, summary, NextAction(instruction="Apply it for real", tool=self.tool, arguments=rerun)
        )

    def accepted(self, search: BulkSearch, matched: int, operation: Operation) -> ToolResult[Any]:
        run = _run(search, SetRun(matched=matched))
        return self._answer(run, accepted_summary(operation), follow_operation(operation), operation)

    def finished(self, search: BulkSearch, result: SetRun, token: str | None) -> ToolResult[Any]:
        run = _run(search, result, token)
        then = None
        if token is not None:
            then = NextAction(
                instruction=f"Undo: put the {result.done} message(s) of this batch back (within 24 hours)",
                tool=self.tool,
                arguments={**self.undo_with, "undo": token},
            )
        if result.unknown:
            then = NextAction(
                instruction=f"The server could not be asked mid-batch: search {search.mailbox!r} to see where "
                "the messages are, then run the search again (what the destination holds is not copied twice)",
                tool="imap_search_messages",
                arguments={"account_id": search.account_id, "mailbox": search.mailbox},
            )
        summary = _summary(self.verb, search, run)
        return self._answer(run, summary, then, None, _issues(search, result), _warnings(result))

    def undone(self, search: BulkSearch, result: SetRun) -> ToolResult[Any]:
        summary = f"Undone: {result.done} of {result.matched} message(s) put back"
        return self._answer(
            _run(search, result), summary, None, None, _issues(search, result), _warnings(result)
        )

    def no_undo(self, token: str) -> ToolFailure:
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            f"No undo {token!r} of {self.tool} (an undo works once, for 24 hours, for the user it was given to).",
            details={"parameter": "undo"},
        )
