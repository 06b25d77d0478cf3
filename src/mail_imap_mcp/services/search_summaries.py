"""The summaries of a search page's picks (:func:`page_summaries`: every mailbox asked at once, IMAP's in
one round trip, ``imap/across.py``), each message once where the server shows it in several mailboxes
(:func:`once_each`), and the sort keys a page learns from them (:func:`learn_keys`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.pages import Summaries
from mail_imap_mcp.mail.records import OrderedPage, SummaryRecord
from mail_imap_mcp.services.search_structure import place_of

#: Reads the summaries of ``(mailbox, uidvalidity, uids)`` each, all at once: each mailbox's summaries,
#: or the failure that stopped its read.
ReadEach = Callable[[Sequence[tuple[str, int, list[int]]]], Sequence[Summaries | Exception]]


def page_summaries(
    read_each: ReadEach, page: OrderedPage, strict: bool, failure_of: Callable[[Exception], Exception | None]
) -> tuple[list[SummaryRecord], list[Issue]]:
    """Summaries of the page's picks in merge order, every mailbox asked at once (``read_each``). A
    mailbox whose read failed is an issue, the others stand, unless ``strict`` or the failure ends the
    call (``failure_of`` says None: it is not the mailbox's alone)."""
    by_mailbox: dict[str, tuple[int, list[int]]] = {}
    for mailbox, uidvalidity, uid in page.picks:
        by_mailbox.setdefault(mailbox, (uidvalidity, []))[1].append(uid)
    wanted = [(mailbox, uidvalidity, uids) for mailbox, (uidvalidity, uids) in by_mailbox.items()]
    batches = read_each(wanted)
    found: dict[tuple[str, int], SummaryRecord] = {}
    issues: list[Issue] = []
    for (mailbox, _, uids), batch in zip(wanted, batches, strict=True):
        if isinstance(batch, Exception):
            if strict or failure_of(batch) is None:
                raise batch
            issues.append(
                Issue(
                    code="fetch_failed",
                    stage="fetch_headers",
                    message=f"Mailbox {mailbox!r} changed or failed while its {len(uids)} message(s) of this "
                    "page were read; search it again.",
                    retryable=True,
                )
            )
            continue
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
