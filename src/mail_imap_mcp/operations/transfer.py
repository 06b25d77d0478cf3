"""Move, copy and delete, mailbox by mailbox (imap_apply_to_messages).

The messages are grouped per source mailbox. Every group is selected afresh (SELECT, UIDVALIDITY
checked: ``conflict``) and its UIDs looked up before anything changes, so stale ids, a missing
destination and a missing extension are refused with nothing changed. Then a move (``move``, ``delete``
to the account's Trash, ``archive``) is handed to :mod:`.transfer_moves`, the engine of moves by search
(a chunk whose answer was lost is settled by looking); a copy is one ``UID COPY`` per group and a
``permanent`` removal one ``UID EXPUNGE`` (:mod:`mail_imap_mcp.imap.connection`), never retried. A
``permanent`` removal needs UIDPLUS (and the user's confirmation, asked by the tool before the work starts,
so that it is never asked from the background).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.directory import load_directory, matching_directory
from mail_imap_mcp.imap.uidplus import CopyUid, format_uid_set
from mail_imap_mcp.mail.directory import MailboxDirectory, same_mailbox
from mail_imap_mcp.mail.errors import OutcomeUnknown
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import ALL
from mail_imap_mcp.mail.write_errors import DestinationMissing
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.batch import Batch, BatchItem, MailboxGroup
from mail_imap_mcp.operations.ledger import Ledger
from mail_imap_mcp.operations.runner import SelectRefusals, StopRun, each_mailbox
from mail_imap_mcp.operations.transfer_words import DONE, PLANNED, Action, Done, Outcome

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

_FAILED: dict[str, Outcome] = {
    "not_found": "not_found",
    "outcome_unknown": "outcome_unknown",
    "not_attempted": "not_attempted",
}


@dataclass(frozen=True)
class Transferred:
    """A message moved, copied or deleted (or that would be), with its id in the destination if known."""

    done: Done
    new_message_id: str | None = None


@dataclass(frozen=True)
class TransferRequest:
    action: Action
    permanent: bool
    dry_run: bool
    #: destination_mailbox as given (move and copy).
    destination: str | None
    #: The account's settings (its configured Trash).
    account: AccountConfig
    #: How the tool words a source mailbox that cannot be opened.
    refusals: SelectRefusals
    #: The move or copy asked for, where this server makes it a delete (``services/writes.py``).
    asked: Action | None = None

    @property
    def moves(self) -> bool:
        """Whether the messages leave their mailbox (move, delete to Trash, archive; not in a dry run):
        then :mod:`.transfer_moves` moves them, once :func:`transfer` checked them."""
        return not self.dry_run and self.action != "copy" and not self.permanent


@dataclass
class TransferOutcome(Ledger[Transferred]):
    """What the call found and did, per message and per source mailbox."""

    destination: str | None = None
    method: str = ""
    #: The UIDs of each group that exist (checked before anything changed, again before its turn).
    present: dict[MailboxGroup, list[int]] = field(default_factory=dict)
    #: Per source mailbox, the new ids of the messages that left it (for the undo).
    moved_from: list[tuple[str, list[str]]] = field(default_factory=list)
    #: The mailbox where the connection was lost after the change was sent.
    unknown: str | None = None

    def outcome(self, item: BatchItem) -> tuple[Outcome, str | None]:
        """What became of ``item``, and its new id if known."""
        done = self.results.get(item)
        if done is not None:
            return done.done, done.new_message_id
        return _FAILED.get(self.failed.get(item, ""), "failed"), None

    def nothing_found(self) -> bool:
        """Whether none of the messages existed when checked (nothing was changed)."""
        return not self.wrote and not self.results and set(self.failed.values()) == {"not_found"}


def transfer(
    session: ImapSession, batch: Batch, request: TransferRequest, progress: Progress
) -> TransferOutcome:
    """Check everything, then change the batch's messages mailbox by mailbox (module docstring)."""
    outcome = _prepare(session, batch, request)
    if request.asked is not None:
        outcome.warnings.append(
            f"On this server a {request.asked} into {outcome.destination!r} deletes the messages (they leave "
            "every other folder): it was done as action delete, with its rules, audit and undo."
        )
    groups = batch.groups
    if not any(outcome.present[group] for group in groups):
        return outcome  # every message is gone: the tool answers not_found
    if request.dry_run:
        for group in groups:
            for item in group.items:
                if item.ref.uid in outcome.present[group]:
                    outcome.settle(item, Transferred(PLANNED[DONE[(request.action, request.permanent)]]))
        return outcome
    if request.moves:
        return outcome  # checked: transfer_moves.move_groups moves them, chunk by chunk
    # The last group checked is still selected: start there, re-select (and re-check) the others. Not
    # "the first pending one": when the last group checked has no message left, another mailbox is
    # selected, and its UIDs would name other messages there.
    selected = groups[-1]
    pending = [group for group in reversed(groups) if outcome.present[group]]

    def step(group: MailboxGroup) -> None:
        if group is not selected:
            _open_group(session, group, request, outcome, write=True)
        if outcome.present[group]:
            _apply_group(session, batch, group, request, outcome)

    each_mailbox(pending, outcome, progress, step, request.refusals.refused)
    return outcome


def commands_for(session: ImapSession, action: Action, permanent: bool) -> str:
    """The commands the action takes on this server (its personality's); refused (nothing changed) where
    an extension is missing that is needed to touch exactly these messages."""
    return session.personality.transfer_commands(action, permanent=permanent)


def spam_landing(action: Action, mailbox: str) -> ToolFailure:
    """The refusal of a move or copy into ``mailbox`` that the server makes a report as spam (Gmail's
    Spam): there is no spam action, and nothing was changed."""
    return ToolFailure.invalid_input(
        "destination_mailbox",
        f"on this server a {action} into {mailbox!r} reports the messages as spam and takes them "
        "out of every other folder; there is no spam action, and nothing was changed. Use action "
        "delete to put them in the Trash, or move them to another mailbox.",
    )


def _existing_mailbox(directory: MailboxDirectory, name: str, parameter: str) -> str:
    """The server's spelling of ``name`` when it is a selectable mailbox, else ``not_found`` naming
    ``parameter`` (a destination is never created on the fly)."""
    found = directory.selectable(name)
    if found is None:
        raise DestinationMissing(name, parameter)
    return found


def _prepare(session: ImapSession, batch: Batch, request: TransferRequest) -> TransferOutcome:
    """Everything that is checked before any change: extensions, destination, ids, UIDVALIDITY."""
    outcome = TransferOutcome(method=commands_for(session, request.action, request.permanent))
    if request.permanent and session.personality.has_labels:
        _check_permanent(session, batch, request)
    if request.action == "delete" and not request.permanent:
        directory = load_directory(session, request.account)
        outcome.destination = directory.require(
            session.personality.deletes_to, batch.given_account_id, ", or use action move"
        )
        inside = [g.mailbox for g in batch.groups if same_mailbox(g.mailbox, outcome.destination)]
        if inside:
            raise ToolFailure.invalid_input(
                "permanent",
                f"the messages in {inside[0]!r} are already in the Trash; delete without permanent would "
                "change nothing. To remove them for good, use permanent: true (where the configuration "
                "allows it, after the user's confirmation).",
            )
    elif request.action == "archive":
        outcome.destination = _archive(session, batch, request)
    elif request.destination is not None:
        listed = matching_directory(session, request.destination)
        outcome.destination = _existing_mailbox(listed, request.destination, "destination_mailbox")
    for group in batch.groups:
        _open_group(session, group, request, outcome, write=not request.dry_run)
    return outcome


def _archive(session: ImapSession, batch: Batch, request: TransferRequest) -> str:
    """Where archived messages go (Gmail: All Mail, where a move out of INBOX removes the Inbox label);
    refused before anything changes on a server without labels, or for messages not in INBOX."""
    if not session.personality.has_labels:
        raise ToolFailure.unsupported(
            "action",
            "archive needs a server with labels (Gmail: X-GM-EXT-1); elsewhere move the messages to an "
            "archive mailbox (action move).",
            "X-GM-EXT-1",
        )
    directory = load_directory(session, request.account)
    inbox = directory.inbox() or "INBOX"
    elsewhere = [group.mailbox for group in batch.groups if not same_mailbox(group.mailbox, inbox)]
    if elsewhere:
        raise ToolFailure.invalid_input(
            "message_ids",
            f"archive takes messages of {inbox!r}; {elsewhere[0]!r} is not it. To take Inbox off messages "
            'found elsewhere (All Mail), use imap_update_message_flags with labels ["Inbox"], operation remove.',
        )
    found = directory.with_role(ALL)
    if not found:
        raise ToolFailure(
            ErrorCode.NOT_FOUND, "The server marks no mailbox \\All (All Mail): nothing to archive to."
        )
    return found[0]


def _check_permanent(session: ImapSession, batch: Batch, request: TransferRequest) -> None:
    """Where an expunge is not always for good (Gmail: in a label folder it removes the label), a
    permanent delete is refused outside the mailboxes where it is (Trash, Spam) before anything changes."""
    directory = load_directory(session, request.account)
    roles = {box.name: box.special_use for box in directory.boxes}
    for group in batch.groups:
        if not session.personality.expunges_for_good(roles.get(group.mailbox)):
            raise ToolFailure.invalid_input(
                "permanent",
                f"on this server an expunge in {group.mailbox!r} removes a label, not the message; nothing "
                "was changed. Delete without permanent (to the Trash), then permanently from the Trash.",
            )


def _open_group(
    session: ImapSession,
    group: MailboxGroup,
    request: TransferRequest,
    outcome: TransferOutcome,
    *,
    write: bool,
) -> None:
    """Open the group's mailbox afresh, find which of its UIDs still exist, and record the others."""
    uid_set = format_uid_set(group.uids).encode("ascii")
    found = set(
        request.refusals.read_afresh(
            session, group, lambda: session.uid_search([b"UID", uid_set]), write=write
        )
    )
    present = outcome.present[group] = [uid for uid in group.uids if uid in found]
    for item in outcome.unsettled(group.items):
        if item.ref.uid not in present:
            outcome.fail(
                [item],
                "not_found",
                "check",
                f"UID {item.ref.uid} no longer exists in {group.mailbox!r} (deleted or moved); it was left out.",
            )


def _apply_group(
    session: ImapSession,
    batch: Batch,
    group: MailboxGroup,
    request: TransferRequest,
    outcome: TransferOutcome,
) -> None:
    """Change one group's messages (its mailbox selected read-write); record each message's outcome."""
    done = DONE[(request.action, request.permanent)]
    if session.selected_mailbox != group.mailbox:  # UIDs name messages of the selected mailbox only
        raise RuntimeError(f"{group.mailbox!r} is not the selected mailbox; nothing was sent")
    present = outcome.present[group]
    destination = outcome.destination or ""
    copied: CopyUid | None = None
    try:
        if request.permanent:
            session.uid_expunge(present)
        elif request.action == "copy":
            copied = session.uid_copy(present, destination)
        else:
            copied = session.uid_move(present, destination)
    except OutcomeUnknown as exc:
        outcome.unknown = group.mailbox
        outcome.outcome_unknown(item for item in group.items if item.ref.uid in present)
        raise StopRun() from exc
    outcome.wrote = True
    if copied is None and not request.permanent:
        outcome.warnings.append(unnamed_warning(destination))
    new_ids: list[str] = []
    for item in group.items:
        uid = item.ref.uid
        if uid not in present:
            continue
        new_id = _new_id(batch.items[0].ref, destination, copied, uid)
        if copied is not None and new_id is None:  # gone between the check and the command
            message = f"UID {uid} disappeared from {group.mailbox!r} before it was changed."
            outcome.fail([item], "not_found", "write", message)
            continue
        outcome.settle(item, Transferred(done, new_id))
        if new_id is not None:
            new_ids.append(new_id)
    if request.action != "copy" and not request.permanent and new_ids:
        outcome.moved_from.append((group.mailbox, new_ids))


def unnamed_warning(destination: str) -> str:
    """The warning of messages copied or moved whose new UIDs the server did not say."""
    return (
        f"The server did not report the new UIDs in {destination!r} (no UIDPLUS/COPYUID): "
        "new_message_id is null; search that mailbox to find the messages."
    )


def _new_id(first: MessageRef, mailbox: str, copied: CopyUid | None, uid: int) -> str | None:
    """The id of UID ``uid``'s copy in ``mailbox`` where the server said its new UID, its account
    spelled as the batch's ``first`` id spells it (with the caller's tag)."""
    if copied is None or uid not in copied.new_uids:
        return None
    return replace(
        first, mailbox=mailbox, uidvalidity=copied.uidvalidity, uid=copied.new_uids[uid]
    ).message_id
