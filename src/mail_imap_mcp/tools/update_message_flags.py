"""imap_update_message_flags: add, remove or replace flags of up to 250 messages; each one's flags after.

Per mailbox, in one read-write SELECT (UIDVALIDITY checked): ``UID FETCH FLAGS`` (and ``MODSEQ`` for a
replace where the server has CONDSTORE), one ``UID STORE ... FLAGS.SILENT`` (never retried), and a
``UID FETCH FLAGS`` that reads back what the messages carry now. A replace keeps ``\\Deleted`` where it
is (deleting is imap_apply_to_messages) and, with CONDSTORE, is conditional (``UNCHANGEDSINCE``) on the
flags read in the same SELECT: a message another client changed meanwhile is reported, not overwritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import ErrorCode, Issue, MultiItemData, NextAction, Payload, ToolFailure
from mail_imap_mcp.envelope.mcp import ToolResult
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import OutcomeUnknown, UidValidityChanged, is_connection_broken
from mail_imap_mcp.imap.ids import InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.imap.session import FlagState, ImapSession, MailboxState
from mail_imap_mcp.operations import Operation as BackgroundOperation
from mail_imap_mcp.operations import OperationRef, Progress
from mail_imap_mcp.tools._shared.failures import conflict, message_gone, rerun_search
from mail_imap_mcp.tools.context import AppContext
from mail_imap_mcp.tools.messages import MessageIdArg
from mail_imap_mcp.tools.spec import Effect, ToolSpec
from mail_imap_mcp.tools.writes import (
    DRY_RUN_DESCRIPTION,
    accepted_summary,
    audit,
    follow_operation,
    operation_field,
    operation_state,
    outcome_unknown_issue,
)

NAME = "imap_update_message_flags"
TITLE = "Update message flags"
DESCRIPTION = (
    "Mark messages read or unread, flag or unflag them, or set keywords: `operation` add, remove or "
    "replace `flags` (\\Seen read, \\Flagged starred, \\Answered, \\Draft, or keywords such as "
    "$Important) on up to 250 message_ids of one account, from any of its mailboxes. Returns each "
    "message's flags after the change and whether they changed, and an undo next_action. replace "
    "keeps \\Deleted as it is and, where the server has CONDSTORE, never overwrites a message another "
    "client changed meanwhile (issue modified_meanwhile). Deleting is imap_apply_to_messages. Safe to "
    "repeat; dry_run shows what would change."
)
ERRORS = {
    "invalid_input": "A message id or flag is malformed or not allowed (e.g. \\Deleted), ids name several "
    "accounts, too many ids or flags, or no mailbox allows a keyword to be added.",
    "permission_denied": "Writes are turned off for the account (write_enabled); nothing was changed.",
    "not_found": "The account or the mailbox is unknown, or none of the messages exists any more.",
    "conflict": "The mailbox's UIDVALIDITY changed since the ids were issued (nothing was changed); "
    "next_action reruns the search.",
    "limit_exceeded": "The server refused the change for quota reasons.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached, or refused the STORE; nothing was changed.",
    "timeout": "A command exceeded its time budget before anything was sent.",
}

Operation = Literal["add", "remove", "replace"]
#: The system flags an agent may set, in the order results list them.
SYSTEM_FLAGS = ("\\Seen", "\\Answered", "\\Flagged", "\\Draft")
_SYSTEM = {flag.lower(): flag for flag in SYSTEM_FLAGS}
#: Keywords: IMAP atoms from a conservative character set (what imap_search_messages' has_keyword takes).
#: At most 50 characters: Dovecot's default mail_max_keyword_length.
KEYWORD = re.compile(r"^[A-Za-z0-9$_.\-]{1,50}$")
_DELETED = "\\deleted"
ALLOWED_FLAGS = (
    "the system flags \\Seen, \\Answered, \\Flagged and \\Draft, or keywords of 1 to 50 characters "
    "from A-Z a-z 0-9 $ _ . - (e.g. $Important, Work)"
)


class UpdateFlagsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_ids: list[MessageIdArg] = Field(
        min_length=1,
        max_length=250,
        description="Message ids from imap_search_messages, all of one account (any of its mailboxes); "
        "duplicates count once.",
    )
    operation: Operation = Field(
        description="add: set these flags; remove: clear them; replace: make them the message's only "
        "flags (\\Deleted is kept)."
    )
    flags: list[str] = Field(
        min_length=1,
        max_length=32,
        description="\\Seen (read), \\Answered, \\Flagged (starred), \\Draft, or keywords such as "
        "$Important (letters, digits, $ _ . -; up to 50 characters).",
    )
    dry_run: bool = Field(default=False, description=DRY_RUN_DESCRIPTION)


class FlagResult(Payload):
    message_id: str = Field(description="The message, as given.")
    mailbox: str = Field(description="Its mailbox.")
    uid: int = Field(description="Its UID.")
    flags: list[str] = Field(
        description="Its flags after the change (dry_run: as they would be), read back from the server; "
        "the session flag \\Recent is left out."
    )
    previous_flags: list[str] = Field(description="Its flags before the change.")
    changed: bool = Field(description="Whether its flags changed (dry_run: would change).")


class MailboxPlan(Payload):
    mailbox: str = Field(description="Mailbox of some of the messages.")
    uidvalidity: int = Field(description="Its UIDVALIDITY (the one in the message ids).")
    messages: int = Field(description="Messages of the request found in it.")
    changed: int = Field(description="Of those, messages whose flags changed (dry_run: would change).")
    conditional: bool = Field(
        description="True when the replace was conditional (CONDSTORE UNCHANGEDSINCE): messages changed "
        "by another client meanwhile were left alone. A server without CONDSTORE (e.g. Courier) gets a "
        "plain replace."
    )


class UpdateFlagsData(MultiItemData):
    account_id: str = Field(description="Account of the messages.")
    operation: Operation = Field(description="The operation, as given.")
    flags: list[str] = Field(description="The flags, in canonical spelling, without duplicates.")
    dry_run: bool = Field(description="True: nothing was changed; flags and changed show the plan.")
    requested: int = Field(description="Distinct message ids given.")
    changed: int = Field(description="Messages whose flags changed (dry_run: would change).")
    messages: list[FlagResult] = Field(description="Messages handled, in the order given (failures: issues).")
    mailboxes: list[MailboxPlan] = Field(description="Per mailbox: messages found and changed.")
    # Not "operation": that name is the add/remove/replace argument, echoed above.
    background: OperationRef | None = operation_field()


# ---------------------------------------------------------------------------------------------------
# Input
# ---------------------------------------------------------------------------------------------------


def _shown(flag: str) -> str:
    return repr(flag if len(flag) <= 40 else flag[:40] + "...")


def parse_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The flags in canonical spelling, de-duplicated (case-insensitively, as IMAP compares them);
    ``invalid_input`` naming ``flags`` and what is allowed for anything else."""
    canonical: dict[str, str] = {}
    for flag in flags:
        key = flag.lower()
        if key in _SYSTEM:
            canonical.setdefault(key, _SYSTEM[key])
            continue
        if key == _DELETED:
            problem = "\\Deleted is not set here: deleting is imap_apply_to_messages (action delete)"
        elif key == "\\recent":
            problem = "\\Recent is set by the server only"
        elif flag.startswith("\\"):
            problem = f"{_shown(flag)} is not a system flag this tool sets"
        elif key == "nil":
            problem = "NIL is not a usable keyword (IMAP reads it as 'nothing')"
        elif not KEYWORD.match(flag):
            problem = f"{_shown(flag)} is not a keyword"
        else:
            canonical.setdefault(key, flag)
            continue
        raise ToolFailure.invalid_input(
            "flags", f"{problem}. Allowed: {ALLOWED_FLAGS}.", allowed=[*SYSTEM_FLAGS, "keyword"]
        )
    return tuple(canonical.values())


def parse_ids(message_ids: Sequence[str]) -> list[MessageRef]:
    """Parsed ids, duplicates dropped (order kept); all of one account."""
    refs: dict[MessageRef, None] = {}
    for index, text in enumerate(message_ids):
        try:
            refs.setdefault(parse_message_id(text), None)
        except InvalidMessageId as exc:
            raise ToolFailure.invalid_input("message_ids", f"item {index}: {exc}.", index=index) from None
    accounts = sorted({ref.account_id for ref in refs})
    if len(accounts) > 1:
        raise ToolFailure.invalid_input(
            "message_ids", f"the ids name several accounts ({', '.join(accounts)}); one account per call."
        )
    return list(refs)


# ---------------------------------------------------------------------------------------------------
# Flags as sets (IMAP compares flags case-insensitively)
# ---------------------------------------------------------------------------------------------------


def _keys(flags: Iterable[str]) -> set[str]:
    return {flag.lower() for flag in flags}


def ordered(flags: Iterable[str]) -> list[str]:
    """System flags first (\\Seen, \\Answered, \\Flagged, \\Draft, \\Deleted...), then keywords by name."""
    unique: dict[str, str] = {}
    for flag in flags:
        unique.setdefault(flag.lower(), flag)
    rank = {key: index for index, key in enumerate(_SYSTEM)}
    return sorted(
        unique.values(), key=lambda f: (not f.startswith("\\"), rank.get(f.lower(), len(rank)), f.lower())
    )


def target_flags(operation: Operation, requested: Sequence[str], before: Sequence[str]) -> list[str]:
    """What a message with ``before`` carries after ``operation`` with ``requested`` (replace keeps \\Deleted)."""
    if operation == "add":
        return ordered([*before, *requested])
    wanted = _keys(requested)
    if operation == "remove":
        return ordered(f for f in before if f.lower() not in wanted)
    return ordered([*requested, *(f for f in before if f.lower() == _DELETED)])


def not_permitted(state: MailboxState, before: Sequence[str], after: Sequence[str]) -> list[str]:
    """The flags that would change from ``before`` to ``after`` but that the SELECT's PERMANENTFLAGS does
    not let a client change (a keyword is allowed when listed, or when ``\\*`` allows new ones)."""
    if state.permanent_flags is None:  # RFC 3501: no PERMANENTFLAGS, every flag is permanent
        return []
    allowed = _keys(state.permanent_flags)
    changing = _keys(before) ^ _keys(after)
    return ordered(
        flag
        for flag in [*before, *after]
        if flag.lower() in changing
        and flag.lower() not in allowed
        and (flag.startswith("\\") or "\\*" not in allowed)
    )


# ---------------------------------------------------------------------------------------------------
# The work, per mailbox
# ---------------------------------------------------------------------------------------------------


@dataclass
class _Group:
    mailbox: str
    uidvalidity: int
    refs: dict[int, MessageRef]


@dataclass
class _Outcome:
    """What the call found and did, built up mailbox by mailbox."""

    results: dict[MessageRef, FlagResult] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    mailboxes: list[MailboxPlan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The failure each issue code stands for, to raise when every message failed the same way.
    failures: dict[str, ToolFailure] = field(default_factory=dict)
    #: Whether a STORE was sent (from then on a lost connection must not hide what was done).
    wrote: bool = False

    def fail(self, refs: Iterable[MessageRef], code: str, stage: str, message: str, retryable: bool) -> None:
        self.issues.extend(ref.issue(code, stage, message, retryable=retryable) for ref in refs)


def _groups(refs: Sequence[MessageRef]) -> list[_Group]:
    groups: dict[tuple[str, int], _Group] = {}
    for ref in refs:
        group = groups.setdefault((ref.mailbox, ref.uidvalidity), _Group(ref.mailbox, ref.uidvalidity, {}))
        group.refs[ref.uid] = ref
    return list(groups.values())


@dataclass
class _Request:
    account_id: str
    operation: Operation
    flags: tuple[str, ...]
    dry_run: bool


def _result(ref: MessageRef, before: Sequence[str], after: Sequence[str]) -> FlagResult:
    return FlagResult(
        message_id=ref.message_id,
        mailbox=ref.mailbox,
        uid=ref.uid,
        flags=ordered(after),
        previous_flags=ordered(before),
        changed=_keys(before) != _keys(after),
    )


def _update_mailbox(session: ImapSession, group: _Group, request: _Request, outcome: _Outcome) -> None:
    """One mailbox: SELECT, read the flags, STORE (unless dry_run), read them back."""
    refs = group.refs
    try:
        state = session.select(group.mailbox, uidvalidity=group.uidvalidity)
    except UidValidityChanged as exc:
        stale = conflict(request.account_id, group.mailbox, exc.expected, exc.actual)
        outcome.failures.setdefault("conflict", stale)
        outcome.fail(refs.values(), "conflict", "select", stale.message, False)
        return
    except ToolFailure as missing:
        if missing.code is not ErrorCode.NOT_FOUND:
            raise
        gone = _mailbox_gone(request.account_id, group.mailbox)
        outcome.failures.setdefault("mailbox_not_found", gone)
        outcome.fail(refs.values(), "mailbox_not_found", "select", gone.message, False)
        return
    conditional = request.operation == "replace" and "CONDSTORE" in session.capabilities
    before = session.fetch_flags(list(refs), modseq=conditional and not request.dry_run)
    _gone(outcome, [ref for uid, ref in refs.items() if uid not in before], "fetch_flags")
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
            outcome.failures.setdefault("flag_not_permitted", refusal)
            outcome.fail([refs[uid]], "flag_not_permitted", "select", problem, False)
    plan = MailboxPlan(
        mailbox=group.mailbox,
        uidvalidity=group.uidvalidity,
        messages=found,
        changed=0,
        conditional=conditional and not request.dry_run,
    )
    outcome.mailboxes.append(plan)
    if request.dry_run or not before:
        for uid, now in before.items():
            outcome.results[refs[uid]] = _result(refs[uid], now.flags, targets[uid])
        plan.changed = sum(outcome.results[refs[uid]].changed for uid in before)
        return
    stored: dict[int, list[str]] = {}  # answered OK, and not left alone for a change meanwhile
    try:
        for uids, mode, flags, since in _stores(request, before, targets, conditional):
            outcome.wrote = True
            try:
                modified = session.store_flags(uids, mode, flags, unchanged_since=since)
            except OutcomeUnknown:
                for uid in uids:
                    outcome.issues.append(outcome_unknown_issue(refs[uid].message_id, uid))
                raise
            except ToolFailure as refused:  # the server refused the STORE (NO): nothing changed
                outcome.failures.setdefault("store_refused", refused)
                outcome.fail((refs[uid] for uid in uids), "store_refused", "store", refused.message, False)
                continue
            _modified(outcome, [refs[uid] for uid in uids if uid in modified])
            stored.update({uid: targets[uid] for uid in uids if uid not in modified})
        after = {uid: now.flags for uid, now in session.fetch_flags(list(stored)).items()} if stored else {}
    except Exception as exc:
        if not (isinstance(exc, OutcomeUnknown | TimeoutError) or is_connection_broken(exc)):
            raise
        _lost_after_store(outcome, refs, before, stored)
        plan.changed = sum(outcome.results[refs[uid]].changed for uid in stored)
        raise _ConnectionGone() from exc
    _gone(outcome, [refs[uid] for uid in stored if uid not in after], "fetch_flags")
    for uid in stored:
        if uid in after:
            outcome.results[refs[uid]] = _result(refs[uid], before[uid].flags, after[uid])
    plan.changed = sum(outcome.results[refs[uid]].changed for uid in stored if uid in after)


class _ConnectionGone(Exception):
    """The connection died after something was written: the other mailboxes are not attempted."""


def _lost_after_store(
    outcome: _Outcome, refs: dict[int, MessageRef], before: dict[int, FlagState], stored: dict[int, list[str]]
) -> None:
    """The connection died after a STORE was sent. Those answered OK happened, but their flags cannot be
    read back: the results show the flags they were set to. Messages with no STORE sent yet are
    ``not_attempted`` (those of the STORE under way got ``outcome_unknown``)."""
    for uid, flags in stored.items():
        outcome.results[refs[uid]] = _result(refs[uid], before[uid].flags, flags)
    if stored:
        outcome.warnings.append(
            f"{len(stored)} message(s) were changed, but the connection was lost before their flags could be "
            "read back: their flags are the ones set, not read from the server."
        )
    handled = {issue.message_id for issue in outcome.issues} | {refs[uid].message_id for uid in stored}
    outcome.fail(
        (ref for uid, ref in refs.items() if uid in before and ref.message_id not in handled),
        "not_attempted",
        "store",
        "The connection was lost before the change of this message was sent; nothing was changed for it.",
        True,
    )


def _mailbox_gone(account_id: str, mailbox: str) -> ToolFailure:
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Mailbox {mailbox!r} of the message ids does not exist any more (deleted or renamed); nothing was "
        "changed in it. List the mailboxes, then search again.",
        details={"mailbox": mailbox},
        next_action=NextAction(
            instruction="List the mailboxes to see where the messages are now",
            tool="imap_list_mailboxes",
            arguments={"account_id": account_id},
        ),
    )


def _stores(
    request: _Request, before: dict[int, FlagState], targets: dict[int, list[str]], conditional: bool
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


def _gone(outcome: _Outcome, refs: Sequence[MessageRef], stage: str) -> None:
    outcome.fail(
        refs,
        "not_found",
        stage,
        "The message no longer exists in its mailbox (deleted or moved); nothing was changed for it.",
        False,
    )


def _modified(outcome: _Outcome, refs: Sequence[MessageRef]) -> None:
    outcome.fail(
        refs,
        "modified_meanwhile",
        "store",
        "Another client changed this message's flags while this call ran, so the replace left it alone "
        "(CONDSTORE). Read its flags again, and call again if they should still be replaced.",
        True,
    )


# ---------------------------------------------------------------------------------------------------
# The handler
# ---------------------------------------------------------------------------------------------------


def handle(app: AppContext, args: UpdateFlagsInput) -> ToolResult[UpdateFlagsData]:
    refs = parse_ids(args.message_ids)
    account_id = refs[0].account_id
    action = f"dry_run:{args.operation}" if args.dry_run else args.operation
    try:
        connection = _write_connection(app, account_id)
        flags = parse_flags(args.flags)
    except ToolFailure as failure:
        audit(NAME, account_id, action, len(refs), f"failed:{failure.code}")
        raise
    request = _Request(account_id, args.operation, flags, args.dry_run)
    groups = _groups(refs)

    def work(progress: Progress) -> ToolResult[UpdateFlagsData]:
        def change(session: ImapSession) -> _Outcome:
            outcome = _Outcome()
            for index, group in enumerate(groups):
                if progress.cancelled:
                    _not_attempted(outcome, groups[index:], "the operation was cancelled before this mailbox")
                    break
                try:
                    _update_mailbox(session, group, request, outcome)
                except _ConnectionGone:
                    _not_attempted(outcome, groups[index + 1 :])
                    break
                except Exception as exc:
                    lost = is_connection_broken(exc) or isinstance(exc, TimeoutError)
                    if not (lost and outcome.wrote):
                        raise
                    _not_attempted(outcome, groups[index:])
                    break
                progress.advance(len(group.refs), f"{group.mailbox}: done")
            return outcome

        try:
            outcome = connection.run(change) if args.dry_run else connection.run_write(change)
            data = _data(request, refs, outcome)
        except ToolFailure as failure:
            audit(NAME, account_id, action, len(refs), f"failed:{failure.code}")
            raise
        audit(NAME, account_id, action, len(refs), data.status)
        return ToolResult(summary=_summary(data), data=data, warnings=outcome.warnings)

    done = app.operations.run(NAME, connection.account_id, len(refs), work, operation_state)
    if isinstance(done, BackgroundOperation):
        return _accepted(request, len(refs), done)
    result: ToolResult[UpdateFlagsData] = done
    return result


def _accepted(
    request: _Request, requested: int, operation: BackgroundOperation
) -> ToolResult[UpdateFlagsData]:
    """The answer when the change continues in the background."""
    data = UpdateFlagsData(
        account_id=request.account_id,
        operation=request.operation,
        flags=ordered(request.flags),
        dry_run=request.dry_run,
        requested=requested,
        changed=0,
        messages=[],
        mailboxes=[],
        status="ok",
        issues=[],
        next_action=follow_operation(operation),
        background=operation.ref(),
    )
    return ToolResult(summary=accepted_summary(operation), data=data)


def _write_connection(app: AppContext, account_id: str) -> AccountConnection:
    try:
        return app.write_connection(account_id)
    except ToolFailure as failure:
        if failure.code is not ErrorCode.NOT_FOUND:
            raise
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            f"The message ids name account {account_id!r}, which is not configured; call imap_list_accounts "
            "and search again.",
            details={**failure.details, "parameter": "message_ids"},
        ) from None


def _not_attempted(
    outcome: _Outcome, groups: Sequence[_Group], reason: str = "the connection was lost before this mailbox"
) -> None:
    outcome.fail(
        (ref for group in groups for ref in group.refs.values() if ref not in outcome.results),
        "not_attempted",
        "select",
        f"Not attempted: {reason}; nothing was changed for this message.",
        True,
    )


def _data(request: _Request, refs: Sequence[MessageRef], outcome: _Outcome) -> UpdateFlagsData:
    codes = {issue.code for issue in outcome.issues}
    if not outcome.results and len(codes) == 1:
        # Nothing was done, for one reason: that reason is the answer (outcome_unknown never is).
        (code,) = codes
        if code == "not_found":
            raise message_gone(refs[0]) if len(refs) == 1 else _none_found(request.account_id, refs)
        if code in outcome.failures:
            raise outcome.failures[code]
    position = {ref.message_id: index for index, ref in enumerate(refs)}
    results = [outcome.results[ref] for ref in refs if ref in outcome.results]
    issues = sorted(outcome.issues, key=lambda issue: position.get(issue.message_id or "", 0))
    return UpdateFlagsData(
        account_id=request.account_id,
        operation=request.operation,
        flags=ordered(request.flags),
        dry_run=request.dry_run,
        requested=len(refs),
        changed=sum(result.changed for result in results),
        messages=results,
        mailboxes=outcome.mailboxes,
        status="partial" if issues else "ok",
        issues=issues,
        next_action=_next_action(request, results, issues),
    )


def _none_found(account_id: str, refs: Sequence[MessageRef]) -> ToolFailure:
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"None of the {len(refs)} messages exists any more (deleted or moved); nothing was changed. "
        "Search again for current ids.",
        details={"message_ids": [ref.message_id for ref in refs]},
        next_action=NextAction(
            instruction="Search the mailbox again",
            tool="imap_search_messages",
            arguments={"account_id": account_id, "mailbox": refs[0].mailbox},
        ),
    )


def _call(request: _Request, message_ids: Iterable[str | None], **changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "message_ids": [message_id for message_id in message_ids if message_id],
        "operation": request.operation,
        "flags": list(request.flags),
    }
    return {**arguments, **changes}


def _next_action(
    request: _Request, results: Sequence[FlagResult], issues: Sequence[Issue]
) -> NextAction | None:
    by_code: dict[str, list[str | None]] = {}
    for issue in issues:
        by_code.setdefault(issue.code, []).append(issue.message_id)
    if unknown := by_code.get("outcome_unknown"):
        if len(unknown) == 1:
            return NextAction(
                instruction="Read the message to see whether its flags changed (the change was not retried)",
                tool="imap_get_message",
                arguments={"message_id": unknown[0], "body_max_chars": 100},
            )
        return NextAction(
            instruction="Search the mailbox to see the messages' flags now (the change was not retried)",
            tool="imap_search_messages",
            arguments={
                "account_id": request.account_id,
                "mailbox": parse_message_id(unknown[0] or "").mailbox,
            },
        )
    if conflicts := by_code.get("conflict"):
        return rerun_search(request.account_id, parse_message_id(conflicts[0] or "").mailbox)
    if pending := by_code.get("not_attempted"):
        return NextAction(
            instruction="Nothing was sent for these messages: make the change for them",
            tool=NAME,
            arguments=_call(request, pending),
        )
    if modified := by_code.get("modified_meanwhile"):
        return NextAction(
            instruction="Another client changed these messages meanwhile: replace their flags anyway only if "
            "the user still wants it",
            tool=NAME,
            arguments=_call(request, modified),
        )
    changed = [result for result in results if result.changed]
    if request.dry_run:
        if not changed:
            return None
        return NextAction(
            instruction="Make the change (the same call without dry_run)",
            tool=NAME,
            arguments=_call(request, (result.message_id for result in changed)),
        )
    return _undo(changed)


def _undo(changed: Sequence[FlagResult]) -> NextAction | None:
    """The call that puts the flags back, when one call can: every changed message gained (or lost) the
    same flags, or all had the same flags before a replace."""
    if not changed:
        return None
    ids = [result.message_id for result in changed]
    deltas = {
        (
            tuple(sorted(_keys(r.flags) - _keys(r.previous_flags))),
            tuple(sorted(_keys(r.previous_flags) - _keys(r.flags))),
        )
        for r in changed
    }
    first = changed[0]
    if len(deltas) == 1:
        ((gained, lost),) = deltas
        if gained and not lost:
            return _undo_action(ids, "remove", [f for f in first.flags if f.lower() in gained])
        if lost and not gained:
            return _undo_action(ids, "add", [f for f in first.previous_flags if f.lower() in lost])
    previous = {tuple(sorted(_keys(r.previous_flags) - {_DELETED})) for r in changed}
    if len(previous) == 1:
        flags = [f for f in first.previous_flags if f.lower() != _DELETED]
        if flags:
            return _undo_action(ids, "replace", flags)
    return None


def _undo_action(ids: list[str], operation: str, flags: list[str]) -> NextAction | None:
    try:
        parse_flags(flags)  # another client may have set a flag this tool does not set
    except ToolFailure:
        return None
    return NextAction(
        instruction=f"Undo: {operation} {' '.join(flags)} on the messages this call changed",
        tool=NAME,
        arguments={"message_ids": ids, "operation": operation, "flags": flags},
    )


def _summary(data: UpdateFlagsData) -> str:
    what = f"{data.operation} {' '.join(data.flags)}"
    found = len(data.messages)
    if data.dry_run:
        text = f"Dry run ({what}): {data.changed} of {found} message(s) would change; nothing was changed"
    else:
        text = f"Flags updated ({what}): {data.changed} of {found} message(s) changed"
    if data.issues:
        text += f"; {len(data.issues)} message(s) not done, see issues"
    return text


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    input_model=UpdateFlagsInput,
    data_model=UpdateFlagsData,
    handle=handle,
    errors=ERRORS,
    effect=Effect.WRITE,
    idempotent=True,
)
