"""action unsubscribe: leave the mailing lists of the messages (by id or by a search) once the user approved
each list's way (one-click HTTPS, a mailto draft), then move the messages where asked in the same approval;
a dry run only says what each list offers."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from mail_imap_mcp.asking.records import Ask
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.presentation import unsubscribe
from mail_imap_mcp.services.bulk_runs import bulk_search
from mail_imap_mcp.services.unsubscribe import RENDER, leave
from mail_imap_mcp.services.unsubscribe_search import leaving_of, move_after, review_of
from mail_imap_mcp.tools.apply_to_messages.models import (
    ApplyToMessagesInput,
)


def unsubscribe_from_lists(app: Call, args: ApplyToMessagesInput) -> ToolResult[Any]:
    """Leave the lists of the messages (ids or a search) once the user approved, then move them to
    ``destination_mailbox`` where given, in the same approval; a dry run only says what each list offers."""
    parsed = unsubscribe.check(args)
    search = bulk_search(app, args.account_id, args.query or "", *parsed) if parsed else None
    arguments = args.model_dump(exclude_defaults=True)
    leaving = leaving_of(app, args.message_ids, search, args.destination_mailbox, arguments)
    unsubscribe.check_plan(leaving.lists, [found.mailbox for found in leaving.sets], leaving.to)
    asked_for = [item for item in leaving.lists if item.way in ("one_click", "mailto")]
    if args.dry_run or not (asked_for or (leaving.to and leaving.count)):  # nothing to ask
        return unsubscribe.answer([unsubscribe.would(item) for item in leaving.lists], dry_run=True)

    def then() -> ToolResult[Any]:
        left = leave(app, leaving.lists)
        to_send = [item.draft_id for item in left if item.draft_id and not item.list.unsendable]
        moved = move_after(app, leaving)
        lists = [unsubscribe.done(item) for item in left]
        return unsubscribe.answer(
            lists, dry_run=False, app=app, account=leaving.account_id, moved=moved, to_send=to_send
        )

    review, audited = review_of(app, leaving, asked_for), unsubscribe.audited(app, leaving.account_id)
    asked = Ask(leaving.account_id, review, RENDER, then, nullcontext, audited, leaving.count)
    return app.ask(asked).answer(unsubscribe.waiting)
