"""What imap_update_message_flags offers next: the undo of a change (flags, and labels on Gmail), the
change itself after a dry run, or what to do about the messages it could not change."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mail_imap_mcp.envelope import Issue, NextAction
from mail_imap_mcp.imap.personality.gmail import shown_labels
from mail_imap_mcp.mail.ids import place_of
from mail_imap_mcp.operations.flags import FlagRequest
from mail_imap_mcp.presentation.flag_undo import ChangedLabels, undo_flags, undo_labels
from mail_imap_mcp.presentation.mail_failures import rerun_search


def _call(request: FlagRequest, message_ids: Iterable[str | None], **changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "message_ids": [message_id for message_id in message_ids if message_id],
        "operation": request.operation,
    }
    if request.flags:
        arguments["flags"] = list(request.flags)
    if request.labels is not None:
        arguments["labels"] = shown_labels(request.labels)
    return {**arguments, **changes}


def flag_next_action(
    tool: str, account: str, request: FlagRequest, results: Sequence[ChangedLabels], issues: Sequence[Issue]
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
                "account_id": account,
                "mailbox": place_of(unknown[0] or "")[0],
            },
        )
    if conflicts := by_code.get("conflict"):
        return rerun_search(account, place_of(conflicts[0] or "")[0])
    if pending := by_code.get("not_attempted"):
        return NextAction(
            instruction="Nothing was sent for these messages: make the change for them",
            tool=tool,
            arguments=_call(request, pending),
        )
    if modified := by_code.get("modified_meanwhile"):
        return NextAction(
            instruction="Another client changed these messages meanwhile: replace their flags anyway only if "
            "the user still wants it",
            tool=tool,
            arguments=_call(request, modified),
        )
    changed = [result for result in results if result.changed]
    if request.dry_run:
        if not changed:
            return None
        return NextAction(
            instruction="Make the change (the same call without dry_run)",
            tool=tool,
            arguments=_call(request, (result.message_id for result in changed)),
        )
    if request.labels is None:
        return undo_flags(tool, changed)
    return undo_labels(tool, changed, with_flags=undo_flags(tool, changed) if request.flags else None)
