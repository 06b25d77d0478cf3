"""The per-mailbox loop of a bulk write, and its hand-off to the background.

The loop stops between two mailboxes when the operation is cancelled, and when the connection is lost
after something was written: the mailboxes not reached are ``not_attempted`` (nothing was sent there),
never hidden behind a failure of the whole call. Before anything was written, a failure is the call's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.mail.errors import MailboxMissing, MailError, UidValidityChanged
from mail_imap_mcp.mail.write_errors import DestinationMissing, ExtensionMissing, WriteRefused
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.operations.background import Operation, OperationRegistry, OperationState, Progress
from mail_imap_mcp.operations.batch import MailboxGroup
from mail_imap_mcp.operations.ledger import CANCELLED, Ledger

if TYPE_CHECKING:
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.imap.session import ImapSession
    from mail_imap_mcp.imap.view import MailboxState

T = TypeVar("T")
R = TypeVar("R")

#: What a mailbox's turn of a bulk write can be refused for, worded by the tool (``SelectRefusals.refused``).
WRITE_REFUSALS = (WriteRefused, DestinationMissing, ExtensionMissing)


class StopRun(Exception):
    """Raised by a step once it recorded what happened in its mailbox, when the connection is gone: the
    mailboxes after it are not attempted."""


def is_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (or a command ran out of time) mid-run."""
    from mail_imap_mcp.imap.errors import is_connection_broken  # with the run's connection stack

    return is_connection_broken(exc) or isinstance(exc, TimeoutError)


@dataclass(frozen=True)
class SelectRefusals:
    """How a write tool words the two reasons a group's mailbox cannot be opened, and a refused write."""

    #: The mailbox's UIDVALIDITY is not the ids' (``conflict``).
    stale: Callable[[str, UidValidityChanged], ToolFailure]
    #: The mailbox does not exist any more (``not_found``).
    gone: Callable[[str], ToolFailure]
    #: A write the server (or a missing extension, or destination) refused: the failure registry's words.
    refused: Callable[[MailError], ToolFailure]

    def select(self, session: ImapSession, group: MailboxGroup, *, write: bool) -> MailboxState:
        """Open the group's mailbox afresh (read-write for a write, else EXAMINE) and check its UIDVALIDITY."""
        try:
            if write:
                return session.select(group.mailbox, uidvalidity=group.uidvalidity)
            state = session.examine(group.mailbox)
            if state.uidvalidity != group.uidvalidity:
                raise UidValidityChanged(group.uidvalidity, state.uidvalidity)
            return state
        except UidValidityChanged as exc:
            raise self.stale(group.mailbox, exc) from None
        except MailboxMissing:
            raise self.gone(group.mailbox) from None

    def read_afresh(
        self, session: ImapSession, group: MailboxGroup, read: Callable[[], T], *, write: bool
    ) -> T:
        """``read`` (one command without a literal) on the group's mailbox opened afresh as :meth:`select`
        opens it, SELECT (or EXAMINE) sent with it: one round trip, ``read``'s answer taken only once the
        selection's UIDVALIDITY is the group's."""
        try:
            if write:
                session.select_ahead(group.mailbox, uidvalidity=group.uidvalidity)
            else:
                session.examine_ahead(group.mailbox, uidvalidity=group.uidvalidity)
            return read()
        except UidValidityChanged as exc:
            raise self.stale(group.mailbox, exc) from None
        except MailboxMissing:
            raise self.gone(group.mailbox) from None


def each_mailbox(
    groups: Sequence[MailboxGroup],
    ledger: Ledger[Any],
    progress: Progress,
    step: Callable[[MailboxGroup], None],
    refused: Callable[[MailError], ToolFailure] | None = None,
    *,
    counted: bool = True,
) -> None:
    """Run ``step`` on each group in turn, recording in ``ledger`` what a stop leaves undone; ``progress``
    advanced by each group's messages after its step (``counted`` False: the step advances it itself).

    ``step`` records its messages in the ledger and sets ``ledger.wrote`` once a change happened (or may
    have). A failure before any write is raised (the call fails as a whole, nothing changed); after one,
    a refused mailbox (a :class:`ToolFailure`, or one of :data:`WRITE_REFUSALS` worded by ``refused``)
    is reported per message and the run goes on, a lost connection ends it.
    """
    for index, group in enumerate(groups):
        if progress.cancelled:
            ledger.not_attempted(groups[index:], CANCELLED)
            return
        try:
            step(group)
        except StopRun:
            ledger.not_attempted(groups[index:])
            return
        except (ToolFailure, *WRITE_REFUSALS) as exc:
            if isinstance(exc, ToolFailure):
                failure = exc
            elif refused is not None:
                failure = refused(exc)
            else:
                raise
            if not ledger.wrote:
                raise
            ledger.fail(ledger.open_items([group]), failure.code.value, "write", failure.message)
        except Exception as exc:
            if not (ledger.wrote and is_lost(exc)):
                raise
            ledger.not_attempted(groups[index:])
            return
        if counted:
            progress.advance(len(group.items), f"{group.mailbox}: done")


def in_one_call(
    work: Callable[[ImapSession, Progress], T], *, dry_run: bool
) -> Callable[[AccountConnection, Progress], T]:
    """``work`` as one call on the account's connection: a dry run as a read, else as a never-replayed
    write (the work may run twice when the connection is found dead before anything was written: it
    starts from nothing each time)."""

    def run(connection: AccountConnection, progress: Progress) -> T:
        def on_session(session: ImapSession) -> T:
            return work(session, progress)

        return connection.run(on_session) if dry_run else connection.run_write(on_session)

    return run


def run_bulk_write(
    registry: OperationRegistry,
    connection: AccountConnection,
    line: AuditLine,
    *,
    work: Callable[[AccountConnection, Progress], T],
    finish: Callable[[T], R],
    status_of: Callable[[R], str],
    accepted: Callable[[Operation], R],
    failure_of: Callable[[Exception], ToolFailure | None] | None = None,
) -> R:
    """Run ``work`` with the account's connection (:func:`in_one_call`) as :func:`run_in_background` runs
    its work."""
    return run_in_background(
        registry,
        connection.account_id,
        line,
        work=lambda progress: work(connection, progress),
        finish=finish,
        status_of=status_of,
        accepted=accepted,
        failure_of=failure_of,
    )


def run_in_background(
    registry: OperationRegistry,
    account_id: str,
    line: AuditLine,
    *,
    work: Callable[[Progress], T],
    finish: Callable[[T], R],
    status_of: Callable[[R], str],
    accepted: Callable[[Operation], R],
    failure_of: Callable[[Exception], ToolFailure | None] | None = None,
) -> R:
    """Run ``work`` on ``account_id``'s mail (one call, or calls of its own: a run on a whole search, each
    chunk a call with its own time budget) and ``finish`` its outcome into the tool's answer, audited
    either way. The answer comes inline when the work is quick; otherwise the work continues in the
    background and ``accepted(operation)`` is the answer (see :class:`OperationRegistry`). ``failure_of``:
    the failure registry's words of a domain error that ends the work (``presentation.failures.failure_of``),
    for the audit line and for the operation, whose failure is read later, after the tool call ended (it
    answers None for what is raised as it is; without it, only a :class:`ToolFailure` is audited).
    """

    def background(progress: Progress) -> R:
        try:
            result = finish(work(progress))
        except (ToolFailure, MailError) as exc:
            failure = exc if isinstance(exc, ToolFailure) else failure_of(exc) if failure_of else None
            if failure is None:
                raise
            line.failed(failure)
            if failure is exc:
                raise
            raise failure from None
        line.done(status_of(result))
        return result

    def state_of(result: Any) -> OperationState:
        return OperationState.PARTIAL if status_of(result) == "partial" else OperationState.OK

    done = registry.run(line.tool, account_id, line.count, background, state_of, user=line.caller.user)
    if isinstance(done, Operation):
        return accepted(done)
    result: R = done
    return result
