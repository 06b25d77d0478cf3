"""Unsubscribing from the lists of every message a search finds, and moving the messages after it in the
same approval (issue 60 item 2).

The messages are fixed as a run on a search fixes them (:func:`~mail_imap_mcp.services.bulk_search.fix_set`,
the server's own UID SEARCH, kept for the call's rerun once the user answered); their lists are read from
their headers, :data:`CHUNK` messages per FETCH. Once approved, the lists are left
(:func:`~mail_imap_mcp.services.unsubscribe.leave`), then the messages moved: for a search, those of the
set that still match (a message that came to match meanwhile is left alone); for ids, those that still
exist. Each move is a never-replayed write with an undo kept as a batch's
(``imap_apply_to_messages`` with ``undo``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mail_imap_mcp.asking.review import Review, ReviewField
from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.bulk import CHUNK, BulkSearch, SearchSet, SetRun
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.ids import MessageRef, user_tag
from mail_imap_mcp.mail.write_errors import DestinationMissing
from mail_imap_mcp.operations import Operation, Progress
from mail_imap_mcp.operations.batch import group_message_ids
from mail_imap_mcp.services.bulk_search import (
    destination,
    fix_set,
    forget_pending,
    keep_pending,
    keep_undo,
    move_record,
    moving,
    pending,
    pending_key,
)
from mail_imap_mcp.services.unsubscribe import ListToLeave, lists_of, read_list, review

#: The tool whose action it is.
TOOL = "imap_apply_to_messages"


@dataclass
class Leaving:
    """What one call leaves and moves: the lists, the messages (per mailbox) and where they go."""

    account_id: str
    lists: list[ListToLeave]
    sets: list[SearchSet]
    search: BulkSearch | None = None
    to: str | None = None
    #: The store key of the set a question showed (a search's), dropped once approved.
    shown: str | None = None

    @property
    def count(self) -> int:
        return sum(len(found.uids) for found in self.sets)


@dataclass
class Moved:
    """The messages moved after leaving: how many, of how many, and the undo of each mailbox's batch."""

    done: int = 0
    matched: int = 0
    undo: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def leaving_of(
    app: Call,
    message_ids: list[str] | None,
    search: BulkSearch | None,
    named: str | None,
    arguments: dict[str, object],
) -> Leaving:
    """The lists of ``message_ids`` (of one account) or of every message ``search`` finds now (the set
    kept for the call's rerun under its ``arguments``), and where the messages go after (``named``, an
    existing mailbox); refused where writes are off, before anything is asked."""
    if search is None:
        leaving = _by_ids(app, message_ids or [])
    else:
        leaving = _by_search(app, search, pending_key(app, TOOL, arguments))
    account_id = app.write_connection(leaving.account_id).account_id
    if named is not None:
        try:
            leaving.to = destination(app, account_id, "move", named)
        except DestinationMissing:
            raise DestinationMissing(named, "destination_mailbox") from None
    return leaving


def _by_ids(app: Call, message_ids: list[str]) -> Leaving:
    batch = group_message_ids(message_ids, app.resolve_account, app.caller)
    lists = lists_of(app, message_ids)
    sets = [
        SearchSet(group.mailbox, group.uidvalidity, tuple(sorted(item.ref.uid for item in group.items)))
        for group in batch.groups
    ]
    return Leaving(lists[0].account_id, lists, sets)


def _by_search(app: Call, search: BulkSearch, key: str) -> Leaving:
    kept = pending(app, key)
    found = kept.set() if kept is not None else fix_set(app, search)
    account = app.config.accounts[search.account_id]
    tag = user_tag(app.caller, search.account_id)
    headers = app.mail(search.account_id).headers(found.mailbox, found.uidvalidity, found.uids, CHUNK)
    lists: dict[tuple[str, ...], ListToLeave] = {}
    for uid, header in sorted(headers.items()):
        ref = MessageRef(search.account_id, found.mailbox, found.uidvalidity, uid, tag)
        read_list(account, ref, header, lists)
    return Leaving(search.account_id, list(lists.values()), [found], search, shown=key)


def move_after(app: Call, leaving: Leaving) -> Moved:
    """Move the messages to ``leaving.to`` (approved with the lists): each mailbox's set as one
    never-replayed write, its undo kept."""
    moved = Moved()
    if leaving.shown is not None:
        forget_pending(app, leaving.shown)
    if leaving.to is None:
        return moved
    to = leaving.to
    mail = app.mail(app.write_connection(leaving.account_id).account_id)
    for found in leaving.sets:
        work = moving(mail, found, leaving.search.tree if leaving.search else None, to)
        progress = Progress(Operation("unsubscribe", TOOL, leaving.account_id, len(found.uids)))
        try:
            run = work(progress)
        except MailError as failure:  # the lists were left: said, not lost in a failure
            moved.warnings.append(
                f"Moving the messages of {found.mailbox!r} failed ({failure}); none sent again."
            )
            continue
        moved.done += run.done
        moved.matched += run.matched
        moved.warnings += _said(run)
        token = keep_undo(app, move_record(leaving.account_id, run, to, found.mailbox))
        if token is not None:
            moved.undo.append(token)
    return moved


def _said(run: SetRun) -> list[str]:
    said = []
    if run.came_meanwhile:
        said.append(f"{run.came_meanwhile} message(s) came to match after the approval: not moved.")
    if run.gone:
        said.append(f"{run.gone} message(s) were gone or no longer matched: not moved.")
    if run.unknown or run.not_attempted:
        why = "no answer came within command_timeout_s" if run.timed_out else "the connection was lost"
        said.append(
            f"Moving stopped ({why}): {run.unknown} message(s) may or may not have moved, "
            f"{run.not_attempted} were not attempted; nothing was sent again."
        )
    return said


def review_of(app: Call, leaving: Leaving, asked_for: list[ListToLeave]) -> Review:
    """What the user approves: each list (:func:`~mail_imap_mcp.services.unsubscribe.review`), the search
    that found the messages, and where the messages go after. A search's set is kept for the call's
    rerun once the user answered (:func:`move_after` drops it)."""
    if leaving.shown is not None and pending(app, leaving.shown) is None:
        keep_pending(app, leaving.shown, leaving.sets[0], [])
    shown = review(asked_for)
    fields = list(shown.fields)
    if leaving.search is not None:
        words = f"messages of {leaving.search.mailbox!r} matching {leaving.search.query!r}"
        fields.append(ReviewField(label="Search", values=[words, f"{leaving.count} message(s)"]))
    closing = shown.closing if asked_for else ""
    if leaving.to is not None:
        move = f"move the {leaving.count} message(s) to {leaving.to!r}"
        fields.append(ReviewField(label="Then", values=[move]))
        closing = f"{closing}, then {move}" if closing else move.capitalize()
    return Review(title=shown.title, fields=fields, closing=closing)
