"""Flags added to (or removed from) every message a search finds in one mailbox, once the user approved the
count, the search and a sample (or ``undo`` of such a batch); chunked, resumable and undone as one batch."""

from __future__ import annotations

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.imap.flags import ordered, parse_flags
from mail_imap_mcp.presentation import bulk
from mail_imap_mcp.services.bulk_runs import act_on_search, bulk_search, flags_plan, undo_batch
from mail_imap_mcp.tools.update_message_flags.models import (
    NAME,
    UpdateFlagsData,
    UpdateFlagsInput,
)


def by_search(app: Call, args: UpdateFlagsInput) -> ToolResult[UpdateFlagsData]:
    """Flags added to (or removed from) every message ``query`` finds in ``mailbox`` (or ``undo`` of that)."""
    flags = parse_flags(args.flags) if args.flags else ()
    bulk.check_flags(args, flags)
    common = {**args.model_dump(include={"account_id", "operation", "dry_run"}), "flags": ordered(flags)}
    undo_with = {"operation": "remove" if args.operation == "add" else "add"}
    words = bulk.RunWords(NAME, UpdateFlagsData, {**common, "messages": []}, "", undo_with)
    if args.undo is not None:
        return undo_batch(app, NAME, args.undo, "flags", words)
    assert args.query is not None
    search = bulk_search(app, args.account_id, args.query, *bulk.checked_search(args.query, args.mailbox))
    words.verb = f"{args.operation.capitalize()} {' '.join(flags)}"
    work_of = flags_plan(app, search, args.operation, flags)
    arguments = args.model_dump(by_alias=True, exclude_defaults=True)
    return act_on_search(app, NAME, arguments, search, work_of=work_of, words=words, ask=None)
