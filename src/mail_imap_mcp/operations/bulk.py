"""Acting on every message a search finds (``query`` with ``mailbox`` in imap_apply_to_messages and
imap_update_message_flags), and putting a whole batch back: the loop over the set's chunks, whatever the
backend (``mail/bulk.py``'s :class:`~mail_imap_mcp.mail.bulk.MailRuns` says what each step does).

The set is fixed when it is approved (:meth:`~mail_imap_mcp.mail.bulk.MailRuns.fixed`, with the mailbox's
UIDVALIDITY). :func:`run_on_set` has the backend search again (a recreated mailbox is a ``conflict``,
nothing changed): the messages of the set that still match are acted on in chunks, each its own call on
the account (so each chunk, not the run, has the call's time budget) and each change sent once. A chunk's
size follows the server's work in the last one, its time less its waits for the link
(:class:`~.chunk_sizes.ChunkSizes`), so a slow link does not shrink the chunks, and a cancel, seen between
two chunks, takes effect within one chunk of about half a second plus its round trips. A match that is not
in the set came meanwhile and is left alone (counted at the run's start, and at its end unless it was
cancelled); one of the set that no longer matches or is gone is counted too. A chunk whose answer was lost
(the connection dropped, or the server did not answer in time) is looked at again afresh and finished
(:meth:`~mail_imap_mcp.mail.bulk.ChunkAction.settle`); only when that fails too is its outcome unknown,
and the run ends with the chunks after it not attempted.
"""

from __future__ import annotations

import time

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.imap.errors import (
    AccountBusy,
    CallTimedOut,
    ConnectFailed,
    ConnectionLost,
    ReconnectFailed,
    TimedOut,
)
from mail_imap_mcp.mail.bulk import CHUNK, ChunkAction, MailRuns, SearchSet, SetRun
from mail_imap_mcp.mail.errors import MailError, OutcomeUnknown
from mail_imap_mcp.mail.write_records import Copied
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.chunk_sizes import ChunkSizes
from mail_imap_mcp.operations.runner import is_lost
from mail_imap_mcp.query import Query

#: The sizes of the chunks a run acts on (one UID MOVE, or COPY + STORE + EXPUNGE, or STORE each).
CHUNKS = ChunkSizes(most=CHUNK)

#: How long moves by search done without asking the user add up towards ``bulk_approval_threshold``,
#: from the first of them (10 minutes; services/bulk_unasked.py).
UNASKED_WINDOW_S = 600.0

#: What a chunk's call may fail with before its change was sent: the server cannot be reached now.
UNREACHABLE = (AccountBusy, CallTimedOut, ConnectFailed, ConnectionLost, ReconnectFailed, TimedOut)


def run_on_set(
    runs: MailRuns,
    approved: SearchSet,
    query: Query | None,
    progress: Progress,
    action: ChunkAction,
    *,
    moves: bool = False,
    checked: bool = False,
) -> SetRun:
    """``action`` on the messages of ``approved`` that still match ``query`` (module docstring); ``query``
    None: those of ``approved`` that still exist (an undo); ``checked``: those of ``approved``, found in
    its mailbox by this call just before (a move by ids), not looked for again."""
    run = SetRun(matched=len(approved.uids))
    targets, meanwhile = (list(approved.uids), set[int]()) if checked else runs.targets(approved, query)
    run.came_meanwhile, run.gone = len(meanwhile), len(approved.uids) - len(targets)
    if targets and not progress.cancelled:
        action.prepare(targets)
    left, size = list(targets), CHUNKS.first
    while left:
        if progress.cancelled:
            run.cancelled, run.not_attempted = True, len(left)
            break
        piece, left = left[:size], left[size:]
        started, link = time.monotonic(), action.link()
        try:
            copied = action.send(piece)
            if moves and copied is not None:  # the server named what it moved: the others were gone
                run.vanished += [uid for uid in piece if uid not in copied.uids]
        except OutcomeUnknown as unknown:
            run.timed_out = unknown.timed_out
            settled = _settle(action, piece)
            if settled is None:
                run.lost, run.unknown, run.not_attempted = True, len(piece), len(left)
                run.unknown_uids = piece
                break
            copied = settled[0]
        except UNREACHABLE:
            if not run.done:
                raise
            run.lost, run.not_attempted = True, len(piece) + len(left)
            break
        _done(run, piece, copied, moves=moves)
        progress.advance(len(piece), f"{approved.mailbox}: {run.done} of {len(targets)}")
        took, now = time.monotonic() - started, action.link()
        size = CHUNKS.after(len(piece), took, now.round_trips - link.round_trips, now.round_trip_s)
    if query is not None and not (run.lost or run.cancelled):  # a cancel is answered without a search more
        run.came_meanwhile = len(meanwhile | _arrived(runs, approved, query))
    return run


def _settle(action: ChunkAction, piece: list[int]) -> tuple[Copied | None] | None:
    """The chunk whose answer was lost, found out and finished afresh; None when that cannot be done
    either (its outcome stays unknown)."""
    try:
        return (action.settle(piece),)
    except (OutcomeUnknown, *UNREACHABLE):
        return None
    except MailError as exc:
        if is_lost(exc):
            return None
        raise


def _arrived(runs: MailRuns, approved: SearchSet, query: Query) -> set[int]:
    """The matches not in the set at the run's end: mail that came to match while it ran (none when the
    mailbox cannot be searched now: the count is the start's)."""
    try:
        return runs.arrived(approved, query)
    except (MailError, ToolFailure):  # the run is done: a count that cannot be taken does not fail it
        return set()


def _done(run: SetRun, piece: list[int], copied: Copied | None, *, moves: bool) -> None:
    run.done += len(piece)
    run.acted += piece
    if moves:
        _note_copies(run, piece, copied)


def _note_copies(run: SetRun, piece: list[int], copied: Copied | None) -> None:
    if copied is None:
        run.unnamed += len(piece)
        return
    run.new_uidvalidity = copied.uidvalidity
    named = [copied.uids[uid] for uid in piece if uid in copied.uids]
    run.new_uids += named
    run.moved_to.update((uid, copied.uids[uid]) for uid in piece if uid in copied.uids)
    run.unnamed += len(piece) - len(named)
