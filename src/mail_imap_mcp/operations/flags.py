"""Flag changes, mailbox by mailbox (imap_update_message_flags).

Per mailbox, in one read-write SELECT (UIDVALIDITY checked): ``UID FETCH FLAGS`` (and ``MODSEQ`` for a
replace where the server has CONDSTORE), one ``UID STORE ... FLAGS.SILENT`` (never retried), and a
``UID FETCH FLAGS`` that reads back what the messages carry now. A replace keeps ``\\Deleted`` where it
is and, with CONDSTORE, is conditional (``UNCHANGEDSINCE``) on the flags read in the same SELECT: a
message another client changed meanwhile is reported, not overwritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.directory import load_directory
from mail_imap_mcp.imap.flags import flag_keys, not_permitted, ordered, target_flags
from mail_imap_mcp.imap.mailbox_state import MailboxState
from mail_imap_mcp.imap.personality.gmail import shown_labels
from mail_imap_mcp.imap.session_writes import FlagState
from mail_imap_mcp.mail.backend import FlagOperation
from mail_imap_mcp.mail.errors import OutcomeUnknown
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.write_errors import WriteRefused
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.batch import Batch, BatchItem, MailboxGroup
from mail_imap_mcp.operations.labels import LabelStep
from mail_imap_mcp.operations.ledger import Ledger
from mail_imap_mcp.operations.runner import SelectRefusals, StopRun, each_mailbox, is_lost

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession


@dataclass(frozen=True)
class FlagChange:
    """A message's flags before the change and after it (read back; in a dry run: as they would be),
    and its labels where labels were changed (as a summary shows them)."""

    item: BatchItem
    before: list[str]
    after: list[str]
    labels_before: list[str] | None = None
    labels_after: list[str] | None = None
    #: Where the change took the message out of its mailbox: its id in All Mail.
    moved_to: MessageRef | None = None

    @property
    def changed(self) -> bool:
        return flag_keys(self.before) != flag_keys(self.after) or self.labels_before != self.labels_after


@dataclass
class MailboxFlags:
    """One mailbox of the request: messages found there, and changed."""

    mailbox: str
    uidvalidity: int
    messages: int
    changed: int
    #: The replace was conditional (CONDSTORE UNCHANGEDSINCE).
    conditional: bool


@dataclass
class FlagOutcome(Ledger[FlagChange]):
    """What the call found and did, built up mailbox by mailbox."""

    mailboxes: list[MailboxFlags] = field(default_factory=list)


@dataclass(frozen=True)
class FlagRequest:
    operation: FlagOperation
    flags: tuple[str, ...]
    dry_run: bool
    #: How the tool words a mailbox that cannot be selected.
    refusals: SelectRefusals
    #: Gmail labels to change with the same operation (X-GM-LABELS names); None: none asked for.
    labels: tuple[str, ...] | None = None
    #: The account's settings (its All Mail, for messages a label change takes out of their mailbox).
    account: AccountConfig | None = None


def change_flags(session: ImapSession, batch: Batch, request: FlagRequest, progress: Progress) -> FlagOutcome:
    """Change the flags of the batch's messages, mailbox by mailbox (see the module's docstring)."""
    if request.labels and request.operation != "remove":
        _refuse_landing_labels(session, request.labels)
    outcome = FlagOutcome()
    each_mailbox(
        batch.groups,
        outcome,
        progress,
        lambda group: _update_mailbox(session, group, request, outcome),
        request.refusals.refused,
    )
    return outcome


def _refuse_landing_labels(session: ImapSession, labels: Sequence[str]) -> None:
    """Refuse, before anything changes, a label naming a mailbox where a message put is more than
    labelled (the personality's ``lands_as``: Gmail's Trash deletes it, Spam reports it), found by its
    special-use attribute whatever its name: that is a delete (imap_apply_to_messages) or no action."""
    lands_as = session.personality.lands_as
    if not lands_as:
        return
    special = {box.name.casefold(): box for box in load_directory(session).boxes}
    for label in labels:
        box = special.get(label.casefold())
        if box is not None and box.special_use in lands_as:
            raise ToolFailure.invalid_input(
                "labels",
                f"{label!r} is the mailbox {box.name!r} ({box.special_use}): that label takes the messages out "
                "of sight; nothing was changed. To delete them, use imap_apply_to_messages delete.",
            )


#: The issue code of a mailbox the refusals say cannot be selected.
_SELECT_ISSUES = {ErrorCode.CONFLICT: "conflict", ErrorCode.NOT_FOUND: "mailbox_not_found"}


def _result(item: BatchItem, before: Sequence[str], after: Sequence[str]) -> FlagChange:
    return FlagChange(item, ordered(before), ordered(after))


def _update_mailbox(
    session: ImapSession, group: MailboxGroup, request: FlagRequest, outcome: FlagOutcome
) -> None:
    """One mailbox: SELECT, read the flags, STORE (unless dry_run), read them back."""
    try:
        state = request.refusals.select(session, group, write=True)
    except ToolFailure as failure:  # stale or gone: this mailbox's messages fail, the others go on
        code = _SELECT_ISSUES.get(failure.code)
        if code is None:
            raise
        outcome.fail(group.items, code, "select", failure.message, failure=failure)
        return
    items = group.by_uid()
    if request.labels is not None and not session.profile.gmail_extensions:
        raise ToolFailure.unsupported(
            "labels",
            "this server has no labels (it does not offer X-GM-EXT-1); nothing was changed.",
            "X-GM-EXT-1",
        )
    if request.flags:
        _update_flags(session, group, request, outcome, state, items)
    if request.labels is not None:
        _update_labels(session, group, request, outcome, items)


def _update_flags(
    session: ImapSession,
    group: MailboxGroup,
    request: FlagRequest,
    outcome: FlagOutcome,
    state: MailboxState,
    items: dict[int, BatchItem],
) -> None:
    """The flags of one mailbox's messages: read, STORE (unless dry_run), read back."""
    conditional = request.operation == "replace" and session.profile.condstore
    before = session.fetch_flags(list(items), modseq=conditional and not request.dry_run)
    _gone(outcome, [item for uid, item in items.items() if uid not in before], "fetch_flags")
    targets = {uid: target_flags(request.operation, request.flags, now.flags) for uid, now in before.items()}
    found = len(before)
    for uid, now in list(before.items()):
        refused = not_permitted(state, now.flags, targets[uid])
        if refused:
            del before[uid]
            problem = (
                f"Mailbox {group.mailbox!r} does not let {' '.join(refused)} be changed (its PERMANENTFLAGS "
                f"are {' '.join(ordered(state.permanent_flags or ())) or 'empty'}); nothing was sent for "
                "this message."
            )
            refusal = ToolFailure.invalid_input(
                "flags", problem, mailbox=group.mailbox, not_permitted=refused
            )
            outcome.fail([items[uid]], "flag_not_permitted", "select", problem, failure=refusal)
    plan = MailboxFlags(group.mailbox, group.uidvalidity, found, 0, conditional and not request.dry_run)
    outcome.mailboxes.append(plan)
    if request.dry_run or not before:
        for uid, now in before.items():
            outcome.settle(items[uid], _result(items[uid], now.flags, targets[uid]))
        plan.changed = sum(outcome.results[items[uid]].changed for uid in before)
        return
    stored: dict[int, list[str]] = {}  # answered OK, and not left alone for a change meanwhile
    try:
        _store(session, request, outcome, items, before, targets, conditional, stored)
        after = {uid: now.flags for uid, now in session.fetch_flags(list(stored)).items()} if stored else {}
    except Exception as exc:
        if not (isinstance(exc, OutcomeUnknown) or (is_lost(exc) and outcome.wrote)):
            raise
        _lost_after_store(outcome, items, before, stored)
        plan.changed = sum(outcome.results[items[uid]].changed for uid in stored)
        if request.labels is not None:
            _labels_not_sent(outcome, [items[uid] for uid in stored])
        raise StopRun() from exc
    _gone(outcome, [items[uid] for uid in stored if uid not in after], "fetch_flags")
    for uid in stored:
        if uid in after:
            outcome.settle(items[uid], _result(items[uid], before[uid].flags, after[uid]))
    plan.changed = sum(outcome.results[items[uid]].changed for uid in stored if uid in after)


def _update_labels(
    session: ImapSession,
    group: MailboxGroup,
    request: FlagRequest,
    outcome: FlagOutcome,
    items: dict[int, BatchItem],
) -> None:
    """The labels of one mailbox's messages (after their flags): read, STORE (unless dry_run), and the
    ids in All Mail of those the change took out of the mailbox."""
    step = LabelStep(session, request.operation, request.labels or ())
    pending = [uid for uid, item in items.items() if item not in outcome.failed]
    try:
        states = step.read(pending)
    except Exception as exc:
        if not (outcome.wrote and is_lost(exc)):
            raise
        _labels_not_sent(outcome, [items[uid] for uid in pending])
        raise StopRun() from exc
    if not request.flags:
        _gone(outcome, [items[uid] for uid in pending if uid not in states], "fetch_labels")
        outcome.mailboxes.append(MailboxFlags(group.mailbox, group.uidvalidity, len(states), 0, False))
    if not states:
        return
    targets = step.targets(states)
    if request.dry_run:
        after = targets
    else:
        try:
            stores = step.store(states, targets)
        except Exception as exc:
            if not (isinstance(exc, OutcomeUnknown) or is_lost(exc)):
                raise
            outcome.outcome_unknown(items[uid] for uid in states)
            raise StopRun() from None
        for uid, refusal in stores.refused.items():
            refused = request.refusals.refused(refusal)
            outcome.fail([items[uid]], "store_refused", "store", refused.message, failure=refused)
        after = stores.after
        states = {uid: state for uid, state in states.items() if uid in after}
        if not states:
            return
        outcome.wrote = True
    moved: dict[int, MessageRef] = {}
    # Only a label taken off can take a message out of its mailbox (an added one never does).
    if not request.dry_run and request.account is not None and request.operation != "add":
        try:
            gone = step.left(list(states))
            gmail_ids = {uid: found for uid in gone if (found := states[uid].gmail_id) is not None}
            moved = step.found_in_all_mail(request.account, group.items[0].ref, gmail_ids)
        except Exception as exc:
            if not is_lost(exc):
                raise
            # The STORE was sent: where the messages are now is not known, and it is never sent again.
            outcome.outcome_unknown(items[uid] for uid in states)
            raise StopRun() from exc
    for uid, now in states.items():
        item = items[uid]
        change = outcome.results.get(item) or _result(item, now.flags, now.flags)
        outcome.settle(
            item,
            replace(
                change,
                labels_before=shown_labels(now.labels),
                labels_after=shown_labels(after[uid]),
                moved_to=moved.get(uid),
            ),
        )
    plan = outcome.mailboxes[-1]
    plan.changed = sum(outcome.results[items[uid]].changed for uid in items if items[uid] in outcome.results)


def _store(
    session: ImapSession,
    request: FlagRequest,
    outcome: FlagOutcome,
    items: dict[int, BatchItem],
    before: dict[int, FlagState],
    targets: dict[int, list[str]],
    conditional: bool,
    stored: dict[int, list[str]],
) -> None:
    """Send the STOREs; add to ``stored`` the messages answered OK and not left alone for a change
    meanwhile, with the flags they were set to."""
    for uids, mode, flags, since in _stores(request, before, targets, conditional):
        try:
            modified = session.store_flags(uids, mode, flags, unchanged_since=since)
        except OutcomeUnknown:
            outcome.outcome_unknown(items[uid] for uid in uids)
            raise
        except WriteRefused as exc:  # the server refused the STORE (NO): nothing changed
            refused = request.refusals.refused(exc)
            outcome.fail(
                (items[uid] for uid in uids), "store_refused", "store", refused.message, failure=refused
            )
            continue
        outcome.wrote = True
        _modified(outcome, [items[uid] for uid in uids if uid in modified])
        stored.update({uid: targets[uid] for uid in uids if uid not in modified})


def _lost_after_store(
    outcome: FlagOutcome,
    items: dict[int, BatchItem],
    before: dict[int, FlagState],
    stored: dict[int, list[str]],
) -> None:
    """The connection died after a STORE was sent. Those answered OK happened, but their flags cannot be
    read back: the results show the flags they were set to. Messages with no STORE sent yet are
    ``not_attempted`` (those of the STORE under way got ``outcome_unknown``)."""
    for uid, flags in stored.items():
        outcome.settle(items[uid], _result(items[uid], before[uid].flags, flags))
    if stored:
        outcome.warnings.append(
            f"{len(stored)} message(s) were changed, but the connection was lost before their flags could be "
            "read back: their flags are the ones set, not read from the server."
        )
    outcome.fail(
        outcome.unsettled(items[uid] for uid in before),
        "not_attempted",
        "store",
        "The connection was lost before the change of this message was sent; nothing was changed for it.",
        retryable=True,
    )


def _labels_not_sent(outcome: FlagOutcome, items: Sequence[BatchItem]) -> None:
    """The connection died before the label change of ``items`` was sent: their flags may have changed
    (their results stand), their labels did not."""
    outcome.fail(
        items,
        "not_attempted",
        "store",
        "The connection was lost before the label change of this message was sent; its labels were not "
        "changed.",
        retryable=True,
    )


def _stores(
    request: FlagRequest, before: dict[int, FlagState], targets: dict[int, list[str]], conditional: bool
) -> list[tuple[list[int], str, list[str], int | None]]:
    """The STORE commands: one for add or remove; for replace one per distinct target (with or without
    \\Deleted), conditional on the highest MODSEQ read where CONDSTORE is on (a message changed after
    that read has a higher MODSEQ, one not changed a lower or equal one)."""
    uids = sorted(before)
    if request.operation != "replace":
        return [(uids, "+" if request.operation == "add" else "-", list(request.flags), None)]
    since: int | None = None
    if conditional:
        modseqs = [state.modseq for state in before.values() if state.modseq is not None]
        since = max(modseqs) if modseqs else None
    by_target: dict[tuple[str, ...], list[int]] = {}
    for uid in uids:
        by_target.setdefault(tuple(targets[uid]), []).append(uid)
    return [(group, "", list(target), since) for target, group in by_target.items()]


def _gone(outcome: FlagOutcome, items: Sequence[BatchItem], stage: str) -> None:
    outcome.fail(
        items,
        "not_found",
        stage,
        "The message no longer exists in its mailbox (deleted or moved); nothing was changed for it.",
    )


def _modified(outcome: FlagOutcome, items: Sequence[BatchItem]) -> None:
    outcome.fail(
        items,
        "modified_meanwhile",
        "store",
        "Another client changed this message's flags while this call ran, so the replace left it alone "
        "(CONDSTORE). Read its flags again, and call again if they should still be replaced.",
        retryable=True,
    )
