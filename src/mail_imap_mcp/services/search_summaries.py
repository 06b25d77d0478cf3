"""The summaries of a search page's picks (:func:`page_summaries`: every mailbox read in one round trip),
each message once where the server shows it in several mailboxes (:func:`once_each`), and the sort keys a
page learns from them (:func:`learn_keys`)."""

from __future__ import annotations

from datetime import datetime

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.imap.across import summaries_each
from mail_imap_mcp.imap.errors import mailbox_failure
from mail_imap_mcp.imap.fetch import SummaryBatch
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.records import OrderedPage, SummaryRecord
from mail_imap_mcp.services.search_structure import place_of


def page_summaries(
    session: ImapSession,
    account: tuple[str, str],
    page: OrderedPage,
    snippet_chars: int,
    strict: bool,
    raw_window_bytes: int,
) -> tuple[list[SummaryRecord], list[Issue]]:
    """Summaries of the page's picks in merge order, every mailbox read in one round trip (the selected
    one first, each other one with its EXAMINE); ``account``: its id and the caller's tag in the ids."""
    by_mailbox: dict[str, tuple[int, list[int]]] = {}
    for mailbox, uidvalidity, uid in page.picks:
        by_mailbox.setdefault(mailbox, (uidvalidity, []))[1].append(uid)
    wanted = [(mailbox, uidvalidity, uids) for mailbox, (uidvalidity, uids) in by_mailbox.items()]
    batches = summaries_each(
        session,
        account[0],
        wanted,
        tag=account[1],
        snippet_chars=snippet_chars,
        raw_window_bytes=raw_window_bytes,
    )
    found: dict[tuple[str, int], SummaryRecord] = {}
    issues: list[Issue] = []
    for (mailbox, _, uids), batch in zip(wanted, batches, strict=True):
        if isinstance(batch, Exception):
            if strict or mailbox_failure(batch) is None:
                raise batch
            batch = SummaryBatch()
            issues.append(
                Issue(
                    code="fetch_failed",
                    stage="fetch_headers",
                    message=f"Mailbox {mailbox!r} changed or failed while its {len(uids)} message(s) of this "
                    "page were read; search it again.",
                    retryable=True,
                )
            )
        issues += batch.issues
        found.update({place_of(summary): summary for summary in batch.messages})
    ordered = [found[(mailbox, uid)] for mailbox, _, uid in page.picks if (mailbox, uid) in found]
    return ordered, issues


def once_each(messages: list[SummaryRecord]) -> tuple[list[SummaryRecord], int]:
    """The page with each message once where the server shows one message in several mailboxes (Gmail's
    labels: its X-GM-MSGID), the first place kept; and how many were left out."""
    seen: set[int] = set()
    kept: list[SummaryRecord] = []
    for message in messages:
        if message.identity is not None and message.identity in seen:
            continue
        if message.identity is not None:
            seen.add(message.identity)
        kept.append(message)
    return kept, len(messages) - len(kept)


def _epoch(iso: str | None) -> int | None:
    if not iso:
        return None
    try:
        return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def learn_keys(page: OrderedPage, messages: list[SummaryRecord], sort: str) -> None:
    """Streams whose last message's key was not read (one mailbox, server-side SORT) take it from its
    summary, whose date is that key (Date header, else INTERNALDATE)."""
    if sort != "date":
        return
    dates = {place_of(m): m.date for m in messages}
    state = page.next_stream
    if state is not None and state.key is None and state.after:
        state.key = _epoch(dates.get((state.mailbox, state.after[-1])))
