"""Every message a search finds in one mailbox moved, or deleted to Trash, once the user approved the count,
the search and a sample (or ``undo`` of such a batch); chunked, resumable and undone as one batch."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from mail_imap_mcp.asking.records import Ask, Asked
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.presentation import bulk
from mail_imap_mcp.services.bulk_runs import act_on_search, bulk_search, transfer_plan, undo_batch
from mail_imap_mcp.tools.apply_to_messages.models import (
    NAME,
    ApplyToMessagesData,
    ApplyToMessagesInput,
)


def by_search(app: Call, args: ApplyToMessagesInput) -> ToolResult[ApplyToMessagesData]:
    """Every message ``query`` finds in ``mailbox`` moved or deleted to Trash (or ``undo`` of such a batch)."""
    bulk.check_transfer(args)
    common = args.model_dump(include={"account_id", "action", "permanent", "dry_run", "destination_mailbox"})
    words = bulk.RunWords(
        NAME, ApplyToMessagesData, {**common, "results": [], "undo": []}, "", {"action": "move"}
    )
    if args.undo is not None:
        return undo_batch(app, NAME, args.undo, "move", words)
    assert args.query is not None
    search = bulk_search(app, args.account_id, args.query, *bulk.checked_search(args.query, args.mailbox))
    to, work_of = transfer_plan(app, search, args.action, args.destination_mailbox)
    bulk.check_destination(to, search.mailbox)
    words.common["destination_mailbox"] = to
    words.verb = "Move to Trash" if args.action == "delete" else f"Move to {to!r}"

    def ask(review: Any, messages: int, then: Callable[[], ToolResult[Any]]) -> Asked:
        # Where nobody can be asked, confirmed as a mailbox delete is (a token).
        plain = nullcontext
        asked = Ask(search.account_id, review, words.render, then, plain, plain, messages, confirmable=True)
        return app.ask(asked)

    arguments = args.model_dump(by_alias=True, exclude_defaults=True)
    return act_on_search(app, NAME, arguments, search, work_of=work_of, words=words, ask=ask)
