"""imap_get_thread: the conversation a message belongs to, oldest first, as summaries with their text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import Issue, NextAction, ToolFailure, ToolResult, status_for
from mail_imap_mcp.imap.errors import mailbox_failure
from mail_imap_mcp.mail.ids import place_of
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.presentation.failures import mailbox_issue
from mail_imap_mcp.presentation.mail_failures import message_gone
from mail_imap_mcp.presentation.search_page import (
    COMPACT_UNTRUSTED_ACROSS,
    compact_untrusted,
    untrusted_fields,
)
from mail_imap_mcp.presentation.shapes import compact_summary, summary_shape
from mail_imap_mcp.services.message_lookup import MESSAGE_TOOL_ERRORS, examine_for, resolve_message
from mail_imap_mcp.tools.get_thread_models import CompactThreadData, GetThreadData, GetThreadInput
from mail_imap_mcp.tools.spec import ToolSpec

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession
    from mail_imap_mcp.mail.ids import MessageRef

NAME = "imap_get_thread"
TITLE = "Read a conversation"
DESCRIPTION = (
    "A message's conversation, oldest first, from its mailbox, INBOX and Sent, with what each sender wrote."
)
DETAILS = (
    "The whole conversation a message belongs to, oldest first: every message linked to it by "
    "Message-ID, In-Reply-To or References (and, where the server threads, the same subject) in its "
    "mailbox, INBOX and Sent, as summaries with a snippet of what each sender wrote (quoted replies and "
    "signatures left out). On Gmail (X-GM-EXT-1) the conversation is Gmail's own (X-GM-THRID), found in "
    "All Mail. One call answers "
    "'what was said in this thread' and 'did I reply'; read one message in full with imap_get_message. "
    'Compact by default; `fields: "full"` gives full summaries. Never marks anything as read.'
)
ERRORS = MESSAGE_TOOL_ERRORS


@dataclass
class _Conversation:
    """What the mailboxes hold of a conversation, before the limit."""

    messages: list[SummaryRecord]
    total: int
    mailboxes: list[str]
    threaded_by_server: bool
    issues: list[Issue]
    root: str | None


def _key(summary: SummaryRecord) -> tuple[str, str, str]:
    """The same message filed in two mailboxes (a copy) shows once."""
    return summary.date or "", summary.from_ or "", summary.subject or ""


def handle(app: Call, args: GetThreadInput) -> ToolResult[GetThreadData] | ToolResult[CompactThreadData]:
    """``imap.threads`` from ``services.message_lookup``'s message; a mailbox that fails is an issue."""
    from mail_imap_mcp.imap.fetch import fetch_summaries
    from mail_imap_mcp.imap.mailboxes import list_mailboxes
    from mail_imap_mcp.imap.threads import read_seed, thread_mailboxes, thread_uids

    connection, ref = resolve_message(app, args.message_id)
    limit = min(args.limit, app.config.server.max_search_limit)
    snippet_chars = min(args.snippet_chars, app.config.server.max_snippet_chars)

    def work(session: ImapSession) -> _Conversation:
        examine_for(session, ref)
        seed = read_seed(session, ref.uid)
        if seed is None:
            raise message_gone(ref)
        mailboxes = thread_mailboxes(session, list_mailboxes(session), ref.mailbox, seed)
        found: list[SummaryRecord] = []
        issues: list[Issue] = []
        total = 0
        threaded = False
        for mailbox in mailboxes:
            own = mailbox == ref.mailbox
            try:
                state = examine_for(session, ref) if own else session.examine(mailbox)
                uids, by_server = thread_uids(session, seed, ref.uid if own else None)
                threaded = threaded or by_server
                total += len(uids)
                # The newest by UID stand for the newest by date: at most `limit` per mailbox are read.
                wanted = sorted(uids, reverse=True)[:limit]
                if own and wanted and ref.uid not in wanted:
                    wanted[-1] = ref.uid
                batch = fetch_summaries(
                    session,
                    account_id=ref.account_id,
                    tag=ref.tag,
                    mailbox=mailbox,
                    uidvalidity=state.uidvalidity,
                    uids=wanted,
                    snippet_chars=snippet_chars,
                    raw_window_bytes=app.config.server.max_text_part_bytes,
                )
            except Exception as exc:
                # A tool's own refusal (a ToolFailure) is that mailbox's, as the IMAP layer's are.
                failure = exc if isinstance(exc, ToolFailure) else mailbox_failure(exc)
                if own or failure is None:
                    raise
                issues.append(mailbox_issue(mailbox, failure))
                continue
            found += batch.messages
            issues += batch.issues
        elsewhere = sorted(found, key=lambda m: place_of(m.message_id)[0] != ref.mailbox, reverse=True)
        unique = {_key(m): m for m in elsewhere}
        total -= len(found) - len(unique)
        return _Conversation(list(unique.values()), total, mailboxes, threaded, issues, seed.root_id)

    conversation = connection.run(work)
    conversation.messages.sort(key=lambda m: (m.date or "", place_of(m.message_id)[1]))
    kept = _newest(conversation.messages, limit, ref)
    total, issues = conversation.total, conversation.issues
    truncated = total > len(kept)
    newest = kept[-1] if kept else None
    next_action = (
        NextAction(
            instruction="Read the newest message of the conversation in full",
            tool="imap_get_message",
            arguments={"message_id": newest.message_id},
        )
        if newest
        else None
    )
    warnings = []
    if truncated:
        warnings.append(f"The conversation has {total} messages; the {len(kept)} newest are shown (limit).")
    if issues:
        warnings.append(f"{len(issues)} issue(s); see data.issues.")
    cut = f", {total - len(kept)} older left out" if truncated else ""
    summary = f"{len(kept)} message(s) of the conversation, oldest first (in {len(conversation.mailboxes)} mailbox(es){cut})"
    status = status_for(issues)
    if args.fields == "compact":
        compact = [compact_summary(summary_shape(m), with_mailbox=True) for m in kept]
        brief = CompactThreadData(
            thread_root=conversation.root,
            total=total,
            truncated=True if truncated else None,
            mailboxes=conversation.mailboxes,
            status=status,
            issues=issues or None,
            messages=compact,
            next_action=next_action,
            untrusted_content=f"{compact_untrusted(COMPACT_UNTRUSTED_ACROSS, compact)}; mailboxes,thread_root",
        )
        return ToolResult(summary=summary, data=brief, warnings=warnings)
    data = GetThreadData(
        account_id=ref.account_id,
        message_id=ref.message_id,
        thread_root=conversation.root,
        total=total,
        returned=len(kept),
        truncated=truncated,
        mailboxes=conversation.mailboxes,
        threaded_by_server=conversation.threaded_by_server,
        messages=[summary_shape(m) for m in kept],
        status=status,
        issues=issues,
        next_action=next_action,
        untrusted_content=untrusted_fields("mailboxes[]", "thread_root"),
    )
    return ToolResult(summary=summary, data=data, warnings=warnings)


def _newest(messages: list[SummaryRecord], limit: int, ref: MessageRef) -> list[SummaryRecord]:
    """The newest ``limit`` of ``messages`` (oldest first), always keeping the message asked about."""
    if len(messages) <= limit:
        return messages
    kept = messages[-limit:]
    if all(m.message_id != ref.message_id for m in kept):
        asked = [m for m in messages if m.message_id == ref.message_id]
        kept = asked + kept[1:]
    return kept


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=GetThreadInput,
    data_model=GetThreadData,
    other_data_models=(CompactThreadData,),
    handle=handle,
    errors=ERRORS,
    summaries="messages",
    changes=(
        "On Gmail (X-GM-EXT-1) the conversation is Gmail's own: the message's X-GM-THRID, searched once in "
        "All Mail (`mailboxes` is All Mail), and each summary carries its `labels`",
    ),
)
