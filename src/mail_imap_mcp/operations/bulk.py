"""Acting on every message a search finds (``query`` with ``mailbox`` in imap_apply_to_messages and
imap_update_message_flags), and putting a whole batch back.

The set is fixed when it is approved: :func:`find` is the server's own ``UID SEARCH`` in the mailbox
(:class:`SearchSet`, with its UIDVALIDITY). :func:`run_on_set` selects the mailbox read-write (its
UIDVALIDITY checked: a recreated mailbox is a ``conflict``, nothing changed) and searches again: the
messages of the set that still match are acted on in chunks of UID ranges, each its own call on the
account's connection (so each chunk, not the run, has the call's time budget) and each command sent
once. A chunk's size follows the last one's time (:class:`~.chunk_sizes.ChunkSizes`), so a cancel,
seen between two chunks, takes effect within about a second. A match that is not in the set came
meanwhile and is left alone (counted, at the run's start and at its end); one of the set that no longer
matches or is gone is counted too. A chunk whose answer was lost (the connection dropped, or the server
did not answer in time) is looked at again on a fresh connection and finished
(:meth:`ChunkWork.settle`); only when that fails too is its outcome unknown, and the run ends with the
chunks after it not attempted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import (
    AccountBusy,
    CallTimedOut,
    ConnectFailed,
    ConnectionLost,
    ReconnectFailed,
    TimedOut,
)
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import CopyUid, format_uid_set
from mail_imap_mcp.mail.errors import MailError, OutcomeUnknown, UidValidityChanged
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.chunk_sizes import ChunkSizes
from mail_imap_mcp.operations.runner import is_lost
from mail_imap_mcp.query import Key, Query, needs_utf8

#: UIDs per search or fetch of the set's messages (a UID set of ranges in one command).
CHUNK = 500
#: The sizes of the chunks a run acts on (one UID MOVE, or COPY + STORE + EXPUNGE, or STORE each).
CHUNKS = ChunkSizes(most=CHUNK)

#: How long moves by search done without asking the user add up towards ``bulk_approval_threshold``,
#: from the first of them (10 minutes; services/bulk_unasked.py).
UNASKED_WINDOW_S = 600.0

#: The query dialect of a session's server.
Dialect = Callable[[ImapSession], Callable[[Query], list[Key]]]

#: What a chunk's call may fail with before its command was sent: the server cannot be reached now.
UNREACHABLE = (AccountBusy, CallTimedOut, ConnectFailed, ConnectionLost, ReconnectFailed, TimedOut)


@dataclass(frozen=True)
class BulkSearch:
    """A search to act on: ``query`` (as given, and parsed) in one ``mailbox`` of ``account_id``."""

    account_id: str
    mailbox: str
    query: str
    tree: Query


@dataclass(frozen=True)
class SearchSet:
    """The messages a search found in one mailbox, as the server's UID SEARCH answered."""

    mailbox: str
    uidvalidity: int
    uids: tuple[int, ...]


def find(
    session: ImapSession, mailbox: str, query: Query, compile_keys: Callable[[Query], list[Key]]
) -> SearchSet:
    """The UIDs of ``mailbox`` that match ``query`` now (EXAMINE, then UID SEARCH)."""
    state = session.examine(mailbox)
    return SearchSet(mailbox, state.uidvalidity, tuple(sorted(_search(session, query, compile_keys))))


def _search(session: ImapSession, query: Query, compile_keys: Callable[[Query], list[Key]]) -> list[int]:
    return session.uid_search(compile_keys(query), charset="UTF-8" if needs_utf8(query) else None)


@dataclass
class SetRun:
    """What a run on a set did, in counts (its UIDs where an undo needs them)."""

    matched: int
    done: int = 0
    #: Matches not in the approved set, found when the run started or when it ended: left alone.
    came_meanwhile: int = 0
    #: Of the set: gone, or no longer matching, when the run searched again: left alone.
    gone: int = 0
    #: Sent when the connection was lost, and not found out after: may or may not have happened.
    unknown: int = 0
    #: Not sent (cancelled, or after a lost connection).
    not_attempted: int = 0
    cancelled: bool = False
    lost: bool = False
    #: The answer that did not come was late (``command_timeout_s``), not cut by a lost connection.
    timed_out: bool = False
    #: The UIDs acted on (in the searched mailbox).
    acted: list[int] = field(default_factory=list)
    #: Where a move said them (COPYUID), the new UIDs in the destination, and its UIDVALIDITY.
    new_uids: list[int] = field(default_factory=list)
    new_uidvalidity: int | None = None
    #: Moved messages whose new UID the server did not say (no COPYUID): the undo cannot name them.
    unnamed: int = 0
    warnings: list[str] = field(default_factory=list)


class ChunkWork(Protocol):
    """What a run does: ``prepare`` once before the first chunk (its own calls), ``send`` each chunk's
    command once (the mailbox selected; a move answers its COPYUID), and ``settle`` a chunk whose answer
    was lost, on a fresh connection: find out what happened and finish it (what it answers is done)."""

    def prepare(self, connection: AccountConnection, source: SearchSet, targets: list[int]) -> None: ...
    def send(self, session: ImapSession, uids: list[int]) -> CopyUid | None: ...
    def settle(self, session: ImapSession, uids: list[int]) -> CopyUid | None: ...


def run_on_set(
    connection: AccountConnection,
    approved: SearchSet,
    query: Query | None,
    dialect: Dialect,
    progress: Progress,
    work: ChunkWork,
    *,
    moves: bool = False,
) -> SetRun:
    """``work`` on the messages of ``approved`` that still match ``query`` (module docstring); ``query``
    None: those of ``approved`` that still exist (an undo)."""
    run = SetRun(matched=len(approved.uids))
    found = connection.run_write(lambda session: _targets(session, approved, query, dialect))
    targets, meanwhile = found
    run.came_meanwhile, run.gone = len(meanwhile), len(approved.uids) - len(targets)
    if targets and not progress.cancelled:
        work.prepare(connection, approved, targets)
    left, size = list(targets), CHUNKS.first
    while left:
        if progress.cancelled:
            run.cancelled, run.not_attempted = True, len(left)
            break
        piece, left = left[:size], left[size:]
        started = time.monotonic()
        try:
            copied = connection.run_write(partial(_send, approved=approved, work=work, piece=piece))
        except OutcomeUnknown as unknown:
            run.timed_out = unknown.timed_out
            settled = _settle(connection, work, piece)
            if settled is None:
                run.lost, run.unknown, run.not_attempted = True, len(piece), len(left)
                break
            copied = settled[0]
        except UNREACHABLE:
            if not run.done:
                raise
            run.lost, run.not_attempted = True, len(piece) + len(left)
            break
        _done(run, piece, copied, moves=moves)
        progress.advance(len(piece), f"{approved.mailbox}: {run.done} of {len(targets)}")
        size = CHUNKS.after(len(piece), time.monotonic() - started)
    if query is not None and not run.lost:
        run.came_meanwhile = len(meanwhile | _arrived(connection, approved, query, dialect))
    return run


def _targets(
    session: ImapSession, approved: SearchSet, query: Query | None, dialect: Dialect
) -> tuple[list[int], set[int]]:
    """The set's messages to act on, and the matches not in the set (none for an undo)."""
    _select(session, approved)
    if query is None:
        return sorted(_existing(session, approved.uids)), set()
    now, wanted = set(_search(session, query, dialect(session))), set(approved.uids)
    return sorted(now & wanted), now - wanted


def _send(session: ImapSession, approved: SearchSet, work: ChunkWork, piece: list[int]) -> CopyUid | None:
    _select(session, approved)
    return work.send(session, piece)


def _select(session: ImapSession, approved: SearchSet) -> None:
    try:
        session.select(approved.mailbox, uidvalidity=approved.uidvalidity)
    except UidValidityChanged as exc:  # recreated since the set was fixed: nothing is sent (conflict)
        raise UidValidityChanged(exc.expected, exc.actual, approved.mailbox) from None


def _settle(connection: AccountConnection, work: ChunkWork, piece: list[int]) -> tuple[CopyUid | None] | None:
    """The chunk whose answer was lost, found out and finished on a fresh connection; None when that
    cannot be done either (its outcome stays unknown)."""
    try:
        return (connection.run_write(lambda session: work.settle(session, piece)),)
    except (OutcomeUnknown, *UNREACHABLE):
        return None
    except MailError as exc:
        if is_lost(exc):
            return None
        raise


def _arrived(connection: AccountConnection, approved: SearchSet, query: Query, dialect: Dialect) -> set[int]:
    """The matches not in the set at the run's end: mail that came to match while it ran (none when the
    mailbox cannot be searched now: the count is the start's)."""

    def search(session: ImapSession) -> set[int]:
        if session.examine(approved.mailbox).uidvalidity != approved.uidvalidity:
            return set()
        return set(_search(session, query, dialect(session))) - set(approved.uids)

    try:
        return connection.run(search)
    except (MailError, ToolFailure):  # the run is done: a count that cannot be taken does not fail it
        return set()


def _done(run: SetRun, piece: list[int], copied: CopyUid | None, *, moves: bool) -> None:
    run.done += len(piece)
    run.acted += piece
    if moves:
        _note_copies(run, piece, copied)


def _existing(session: ImapSession, uids: Sequence[int]) -> list[int]:
    found: list[int] = []
    for start in range(0, len(uids), CHUNK):
        found += search_uids(session, uids[start : start + CHUNK])
    return found


def search_uids(session: ImapSession, uids: Sequence[int]) -> list[int]:
    """Those of ``uids`` that exist in the selected mailbox."""
    return session.uid_search([b"UID", format_uid_set(list(uids)).encode("ascii")])


def _note_copies(run: SetRun, piece: list[int], copied: CopyUid | None) -> None:
    if copied is None:
        run.unnamed += len(piece)
        return
    run.new_uidvalidity = copied.uidvalidity
    named = [copied.new_uids[uid] for uid in piece if uid in copied.new_uids]
    run.new_uids += named
    run.unnamed += len(piece) - len(named)
