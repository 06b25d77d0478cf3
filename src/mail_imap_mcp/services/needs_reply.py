"""``needs_reply`` of imap_search_messages after the search: a page's candidates (already narrowed by the
server, :class:`mail_imap_mcp.query.NeedsReply`) without those a message in the Sent
mailbox answers. Three round trips at most, however many messages and mailboxes the page spans: LIST
(to find Sent), EXAMINE with the SEARCH of Sent, and the FETCH of what it found."""

from __future__ import annotations

from mail_imap_mcp import mime
from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import Issue, NextAction, ToolFailure, ToolResult
from mail_imap_mcp.imap.directory import MailboxDirectory
from mail_imap_mcp.imap.replies import Candidate, answered_in, first_message_id
from mail_imap_mcp.imap.roles import SENT
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.presentation.search_page import SearchMessagesData

__all__ = ["drop_answered"]


def _sent_mailbox(session: ImapSession, account: AccountConfig) -> str | None:
    directory = MailboxDirectory.load(session, account)
    return directory.special_use(SENT) or next(iter(directory.with_role(SENT)), None)


def drop_answered(
    app: AppContext, account_id: str, result: ToolResult[SearchMessagesData]
) -> ToolResult[SearchMessagesData]:
    """``result`` without the messages a message in Sent answers: it names them (In-Reply-To or
    References), is addressed to their sender and is not older than they are."""
    data = result.data
    account = app.config.accounts[account_id]
    warnings = list(result.warnings)
    if not account.user_addresses:
        warnings.append(
            "needs_reply: the account names no addresses of its own (the addresses setting), so your own "
            "messages are not left out."
        )
    candidates = []
    for message in data.messages:
        header_id = first_message_id(message.header_message_id)
        if header_id is not None:
            senders = mime.parse_address_list(message.from_)
            sender = senders[0].email if senders else None
            candidates.append(Candidate(message.message_id, header_id, sender, mime.parse_date(message.date)))
    answered: set[str] = set()
    issues = list(data.issues)
    if candidates:

        def work(session: ImapSession) -> set[str] | None:
            sent = _sent_mailbox(session, account)
            return None if sent is None else answered_in(session, sent, candidates)

        try:
            found_answered = app.connection(account_id).run(work)
        except ToolFailure as failure:
            found_answered = set()
            issues.append(
                Issue(
                    code="sent_not_checked",
                    stage="search",
                    message=f"The Sent mailbox could not be searched for your answers ({failure.message}).",
                    retryable=True,
                )
            )
        if found_answered is None:
            warnings.append(
                "needs_reply: no Sent mailbox was found (no \\Sent special-use, no sent_mailbox setting, no "
                f"usual name), so only \\Answered tells answered mail; the user sets "
                f"{account.setting('sent_mailbox', '<a mailbox from imap_list_mailboxes>')}."
            )
        else:
            answered = found_answered
    kept = [m for m in data.messages if m.message_id not in answered]
    next_action = data.next_action
    if next_action is not None and next_action.tool == "imap_get_message":
        next_action = (
            NextAction(
                instruction=next_action.instruction,
                tool=next_action.tool,
                arguments={"message_id": kept[0].message_id},
            )
            if kept
            else None
        )
    left_out = len(data.messages) - len(kept)
    update = {"messages": kept, "returned": len(kept), "next_action": next_action, "issues": issues}
    update["status"] = "partial" if issues else data.status
    summary = result.summary + (f"; {left_out} answered from Sent left out" if left_out else "")
    return ToolResult(summary=summary, data=data.model_copy(update=update), warnings=warnings)
