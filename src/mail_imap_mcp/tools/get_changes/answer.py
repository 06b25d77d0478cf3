"""What imap_get_changes answers: a first token, or the new messages of a page, the changed and expunged
ones (the newest listed, the rest counted) and the call that asks again later, with what is cut and what a
server without CONDSTORE or QRESYNC could not track in its warnings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mail_imap_mcp.envelope import NextAction, ToolResult, status_for
from mail_imap_mcp.imap.changes import Changes
from mail_imap_mcp.imap.changes_token import ChangesToken, PageCursor, since_digest
from mail_imap_mcp.imap.fetch import SummaryBatch
from mail_imap_mcp.mail.ids import MessageRef, user_tag
from mail_imap_mcp.presentation.search_page import compact_untrusted, named_in_summary
from mail_imap_mcp.presentation.shapes import compact_summary, summary_shape
from mail_imap_mcp.state import Caller
from mail_imap_mcp.tools.get_changes.models import (
    MAX_LISTED,
    TOOL_NAME,
    ChangedMessage,
    GetChangesData,
    GetChangesInput,
)


@dataclass
class ChangesAnswer:
    changes: Changes | None
    token: ChangesToken
    batch: SummaryBatch
    #: The new messages of this page (newest first) and those left for later pages.
    page: list[int]
    more: list[int]


def changes_result(
    args: GetChangesInput, account_id: str, since: ChangesToken | None, answer: ChangesAnswer, caller: Caller
) -> ToolResult[GetChangesData]:
    user = caller.user
    token = answer.token.encode(user)
    where = named_in_summary(args.mailbox)
    same = {"account_id": account_id, "mailbox": args.mailbox}
    if since is None:
        data = GetChangesData(
            mailbox=args.mailbox,
            changes_token=token,
            next_action=_poll(same, token),
        )
        return ToolResult(summary=f"Changes token for {where}: pass it as since later", data=data)
    uidvalidity = since.uidvalidity
    tag = user_tag(caller, account_id)

    def message_id(uid: int) -> str:
        return MessageRef(account_id, args.mailbox, uidvalidity, uid, tag).message_id

    changes = answer.changes
    changed_uids, changed_more = _newest(changes.changed if changes else ())
    expunged_uids, expunged_more = _newest(changes.expunged if changes else ())
    next_cursor = None
    if answer.more and answer.page:
        next_cursor = PageCursor(since_digest(args.since or ""), answer.page[-1], token).encode(user)
    messages = answer.batch.messages
    new = [compact_summary(summary_shape(m)) for m in messages]
    data = GetChangesData(
        mailbox=args.mailbox,
        changes_token=token,
        status=status_for(answer.batch.issues),
        new=new,
        changed=[
            ChangedMessage(message_id=message_id(uid), flags=list(changes.changed[uid]))
            for uid in changed_uids
            if changes
        ],
        expunged=[message_id(uid) for uid in expunged_uids],
        changed_more=changed_more or None,
        expunged_more=expunged_more or None,
        next_cursor=next_cursor,
        issues=answer.batch.issues or None,
        next_action=(
            NextAction(
                instruction="Fetch the next page of new messages",
                tool=TOOL_NAME,
                arguments={**same, "since": args.since, "cursor": next_cursor},
            )
            if next_cursor
            else _poll(same, token)
        ),
        untrusted_content=compact_untrusted("new[].from,to,subject,snippet", new) if messages else None,
    )
    return ToolResult(
        summary=_summary(data, where, len(answer.more)), data=data, warnings=_warnings(answer, data)
    )


def _newest(uids: Iterable[int]) -> tuple[list[int], int]:
    """The newest :data:`MAX_LISTED` of ``uids`` in ascending order, and how many were left out."""
    ordered = sorted(uids)
    return ordered[-MAX_LISTED:], max(0, len(ordered) - MAX_LISTED)


def _poll(same: dict[str, Any], token: str) -> NextAction:
    return NextAction(
        instruction="Later, ask what changed since now (keep only this newest token)",
        tool=TOOL_NAME,
        arguments={**same, "since": token},
    )


def _summary(data: GetChangesData, where: str, more: int) -> str:
    counts = f"{len(data.new or [])} new" + (f" (+{more} on later pages)" if more else "")
    changed = len(data.changed or []) + (data.changed_more or 0)
    expunged = len(data.expunged or []) + (data.expunged_more or 0)
    return f"{counts}, {changed} changed, {expunged} expunged in {where}"


def _warnings(answer: ChangesAnswer, data: GetChangesData) -> list[str]:
    warnings = []
    for field, more in (("changed", data.changed_more), ("expunged", data.expunged_more)):
        if more:
            warnings.append(
                f"Cut: {field} lists the newest {MAX_LISTED}; {more} more are not listed (search the "
                "mailbox to see it as it is now)."
            )
    if answer.batch.issues:
        warnings.append(f"{len(answer.batch.issues)} new message(s) could not be read; see data.issues.")
    changes = answer.changes
    if changes is not None and changes.flags_untracked:
        warnings.append(
            f"Partial: this server has no CONDSTORE, so flag changes are tracked for the newest "
            f"{changes.tracked} messages only; those of {changes.flags_untracked} older message(s) are not "
            "reported."
        )
    if changes is not None and changes.deleted_untracked:
        warnings.append(
            f"Partial: {changes.deleted_untracked} message(s) older than the newest {changes.tracked} "
            "tracked by the token were deleted or moved away; they are not listed in expunged (search "
            "the mailbox to see what is left)."
        )
    return warnings
