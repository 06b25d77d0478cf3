"""Acting on every message a search finds (``query`` with ``mailbox`` in imap_apply_to_messages and
imap_update_message_flags), and putting a whole batch back.

The set is fixed when it is approved: :func:`find` is the server's own ``UID SEARCH`` in the mailbox
(:class:`SearchSet`, with its UIDVALIDITY). :func:`run_on_set` selects the mailbox read-write (its
UIDVALIDITY checked: a recreated mailbox is a ``conflict``, nothing changed) and searches again: the
messages of the set that still match are acted on, :data:`CHUNK` UIDs per command (UID ranges), each
command sent once (never retried); a match that is not in the set came meanwhile and is left alone
(counted); one of the set that no longer matches or is gone is counted too. A cancel takes effect
between two chunks. A connection lost after a chunk was sent ends the run: that chunk's outcome is
unknown, the chunks after it were not attempted, and nothing is sent again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import CopyUid, format_uid_set
from mail_imap_mcp.mail.errors import OutcomeUnknown, UidValidityChanged
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.runner import is_lost
from mail_imap_mcp.query import Key, Query, needs_utf8

#: UIDs per command: one UID MOVE (or COPY + STORE + EXPUNGE, or STORE) of a set of ranges.
CHUNK = 500


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
    #: Matches found at the run that were not in the approved set: left alone.
    came_meanwhile: int = 0
    #: Of the set: gone, or no longer matching, when the run searched again: left alone.
    gone: int = 0
    #: Sent when the connection was lost: may or may not have happened.
    unknown: int = 0
    #: Not sent (cancelled, or after a lost connection).
    not_attempted: int = 0
    cancelled: bool = False
    lost: bool = False
    #: The UIDs acted on (in the searched mailbox).
    acted: list[int] = field(default_factory=list)
    #: Where a move said them (COPYUID), the new UIDs in the destination, and its UIDVALIDITY.
    new_uids: list[int] = field(default_factory=list)
    new_uidvalidity: int | None = None
    #: Moved messages whose new UID the server did not say (no COPYUID): the undo cannot name them.
    unnamed: int = 0
    warnings: list[str] = field(default_factory=list)


#: One chunk's command: ``act(session, uids)``, sent once; a move answers its COPYUID.
Act = Callable[[ImapSession, list[int]], CopyUid | None]


def run_on_set(
    session: ImapSession,
    approved: SearchSet,
    query: Query | None,
    compile_keys: Callable[[Query], list[Key]],
    progress: Progress,
    act: Act,
    *,
    moves: bool = False,
) -> SetRun:
    """``act`` on the messages of ``approved`` that still match ``query`` (module docstring); ``query``
    None: those of ``approved`` that still exist (an undo)."""
    try:
        session.select(approved.mailbox, uidvalidity=approved.uidvalidity)
    except UidValidityChanged as exc:  # recreated since the set was fixed: nothing is sent (conflict)
        raise UidValidityChanged(exc.expected, exc.actual, approved.mailbox) from None
    run = SetRun(matched=len(approved.uids))
    if query is not None:
        now = set(_search(session, query, compile_keys))
        wanted = set(approved.uids)
        run.came_meanwhile = len(now - wanted)
        targets = sorted(now & wanted)
    else:
        targets = sorted(_existing(session, approved.uids))
    run.gone = len(approved.uids) - len(targets)
    pieces = [targets[start : start + CHUNK] for start in range(0, len(targets), CHUNK)]
    for index, piece in enumerate(pieces):
        if progress.cancelled:
            run.cancelled = True
            run.not_attempted = sum(len(rest) for rest in pieces[index:])
            break
        try:
            copied = act(session, piece)
        except OutcomeUnknown:
            run.lost, run.unknown = True, len(piece)
            run.not_attempted = sum(len(rest) for rest in pieces[index + 1 :])
            break
        except Exception as exc:
            if not (run.done and is_lost(exc)):
                raise
            run.lost, run.not_attempted = True, sum(len(rest) for rest in pieces[index:])
            break
        run.done += len(piece)
        run.acted += piece
        if moves:
            _note_copies(run, piece, copied)
        progress.advance(len(piece), f"{approved.mailbox}: {run.done} of {len(targets)}")
    return run


def _existing(session: ImapSession, uids: Sequence[int]) -> list[int]:
    found: list[int] = []
    for start in range(0, len(uids), CHUNK):
        found += _search_uids(session, uids[start : start + CHUNK])
    return found


def _search_uids(session: ImapSession, uids: Sequence[int]) -> list[int]:
    return session.uid_search([b"UID", format_uid_set(list(uids)).encode("ascii")])


def _note_copies(run: SetRun, piece: list[int], copied: CopyUid | None) -> None:
    if copied is None:
        run.unnamed += len(piece)
        return
    run.new_uidvalidity = copied.uidvalidity
    named = [copied.new_uids[uid] for uid in piece if uid in copied.new_uids]
    run.new_uids += named
    run.unnamed += len(piece) - len(named)
