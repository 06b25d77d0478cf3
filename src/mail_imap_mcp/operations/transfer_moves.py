"""Moves by id (move, delete to Trash, archive) on the engine of moves by search: each source mailbox's
messages, once :mod:`.transfer` checked them, are a set that :func:`~.bulk.run_on_set` moves chunk by
chunk through the backend's :class:`~mail_imap_mcp.mail.bulk.MailRuns` (``imap/bulk_moves.py``). So a
chunk whose answer was lost is settled on a fresh connection (looked at, never sent again: the messages
that left the source are found in the destination by Message-ID, size and date, with their new ids, and
those still there are moved), and only what cannot be looked at either is ``outcome_unknown``. A copy and
a removal for good stay with :mod:`.transfer` (one command per mailbox)."""

from __future__ import annotations

from dataclasses import replace

from mail_imap_mcp.mail.bulk import MailRuns, SearchSet, SetRun
from mail_imap_mcp.mail.errors import MailboxMissing, UidValidityChanged
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.batch import Batch, MailboxGroup
from mail_imap_mcp.operations.bulk import run_on_set
from mail_imap_mcp.operations.ledger import CANCELLED
from mail_imap_mcp.operations.runner import StopRun, each_mailbox
from mail_imap_mcp.operations.transfer import TransferOutcome, Transferred, TransferRequest, unnamed_warning
from mail_imap_mcp.operations.transfer_words import DONE


def move_groups(
    runs: MailRuns, batch: Batch, request: TransferRequest, outcome: TransferOutcome, progress: Progress
) -> None:
    """Move each checked group's messages to ``outcome.destination`` (module docstring), recording each
    message's outcome in ``outcome``."""
    groups = [group for group in batch.groups if outcome.present.get(group)]

    def step(group: MailboxGroup) -> None:
        approved = SearchSet(group.mailbox, group.uidvalidity, tuple(outcome.present[group]))
        try:
            moving = runs.moving(approved, outcome.destination or "")
            # The check (operations.transfer) has just found them, on the mailbox selected read-write.
            run = run_on_set(runs, approved, None, progress, moving, moves=True, checked=True)
        except UidValidityChanged as exc:
            raise request.refusals.stale(group.mailbox, exc) from None
        except MailboxMissing:
            raise request.refusals.gone(group.mailbox) from None
        _record(batch, group, request, outcome, run)
        if run.lost:
            outcome.unknown = group.mailbox
            raise StopRun()

    each_mailbox(groups, outcome, progress, step, request.refusals.refused, counted=False)  # chunk by chunk


def _record(
    batch: Batch, group: MailboxGroup, request: TransferRequest, outcome: TransferOutcome, run: SetRun
) -> None:
    """What the run on ``group`` did, message by message: moved (with the new id the server said or the
    settling found), unknown, not attempted (cancelled or after a lost chunk), or gone before its turn."""
    done, destination = DONE[(request.action, request.permanent)], outcome.destination or ""
    acted, unknown = set(run.acted), set(run.unknown_uids)
    outcome.wrote = outcome.wrote or bool(run.acted or unknown)
    first, new_ids = batch.items[0].ref, []
    for item in outcome.unsettled(group.items):
        uid = item.ref.uid
        if uid in acted and uid not in run.vanished:
            new_uid = run.moved_to.get(uid)
            new_id = None
            if new_uid is not None and run.new_uidvalidity is not None:
                new_id = replace(
                    first, mailbox=destination, uidvalidity=run.new_uidvalidity, uid=new_uid
                ).message_id
                new_ids.append(new_id)
            outcome.settle(item, Transferred(done, new_id))
        elif uid in unknown:
            outcome.outcome_unknown([item])
        elif uid in run.vanished or not (run.cancelled or run.lost):
            message = f"UID {uid} disappeared from {group.mailbox!r} before it was changed."
            outcome.fail([item], "not_found", "write", message)
    if run.cancelled:
        outcome.not_attempted([group], CANCELLED)
    if run.unnamed:
        outcome.warnings.append(unnamed_warning(destination))
    if new_ids:
        outcome.moved_from.append((group.mailbox, new_ids))
