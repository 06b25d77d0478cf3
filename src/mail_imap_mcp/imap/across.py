"""The summaries of a merged page's messages, every mailbox read in one round trip.

The newest matches of each mailbox come first (:mod:`mail_imap_mcp.imap.search.execute`); the page's
picks are then read here through :mod:`.pipeline`: the mailbox this call has selected first, without
EXAMINE, then each other one's EXAMINE and FETCH, all sent before the first answer is read. A mailbox that
fails is one failure in its own result, never the others'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mail_imap_mcp.imap import wire
from mail_imap_mcp.imap.errors import ConnectionLost, SelectionStale, message_failure
from mail_imap_mcp.imap.fetch import SummaryBatch, SummaryRequests, fetch_summaries, summary_requests
from mail_imap_mcp.imap.pipeline import Command, MailboxRead, MailboxReply, read_each
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import MailboxGone, MailboxMissing, UidValidityChanged


def summaries_each(
    session: ImapSession,
    account_id: str,
    wanted: Sequence[tuple[str, int, list[int]]],
    *,
    tag: str,
    snippet_chars: int,
    raw_window_bytes: int,
) -> list[SummaryBatch | Exception]:
    """The summaries of ``(mailbox, uidvalidity, uids)`` each, in one round trip for all mailboxes: the
    one this call has selected first without EXAMINE, then each other one's EXAMINE and FETCH. A
    mailbox that failed (gone, recreated) gives its exception; one whose FETCH the server refused (or
    hung up on) is read again alone, as :func:`~mail_imap_mcp.imap.fetch.fetch_summaries` reads one
    mailbox (message by message if need be). ``tag``: the caller's in the messages' ids."""
    current = session.selected_mailbox
    if len(wanted) == 1 and wanted[0][0] == current:  # one mailbox, selected already: its FETCH alone

        def read_alone() -> SummaryBatch:
            return _summaries_of(session, (account_id, tag), wanted[0], None, snippet_chars, raw_window_bytes)

        try:
            try:
                return [read_alone()]
            except SelectionStale:
                # The mailbox changed under the FETCH sent behind the selection's revalidation (Courier,
                # without UNSELECT, keeps it selected from the search's sync): read again on the view the
                # revalidation brought up to date.
                return [read_alone()]
        except Exception as exc:  # the caller decides whether it ends the call (mailbox_failure)
            return [exc]
    order = sorted(range(len(wanted)), key=lambda index: wanted[index][0] != current)
    plans = {index: summary_requests(session, *wanted[index], snippet_chars) for index in order}
    reads = [
        MailboxRead(
            wanted[index][0],
            [Command.fetch(wire.uid_list(uids), items) for uids, items in plans[index].requests],
            wanted[index][1],
            examine=wanted[index][0] != current,
        )
        for index in order
    ]
    try:
        replies = read_each(session, account_id, reads)
    except Exception as exc:
        lost = message_failure(exc)
        if not isinstance(lost, ConnectionLost):
            raise
        # A message made the server hang up (Dovecot, when it cannot read a stored message): on a new
        # connection, each mailbox is read alone, message by message where it must be, so that one
        # message is an issue and the rest of the page stays.
        session.reopen(wanted[order[0]][0])
        replies = [MailboxReply(wanted[index][0], failure=lost) for index in order]
    results: dict[int, SummaryBatch | Exception] = {}
    for index, reply in zip(order, replies, strict=True):
        try:
            if isinstance(reply.failure, MailboxMissing | MailboxGone | UidValidityChanged):
                raise reply.failure
            answered = None
            if reply.failure is None:  # else the server refused the FETCH or hung up: read alone, below
                fetched: dict[int, dict[bytes, Any]] = {}
                for answer in reply.answers:
                    fetched.update(session.client.parse_fetch(answer))
                uids = wanted[index][2]
                answered = (plans[index], {uid: fetched[uid] for uid in uids if uid in fetched})
            results[index] = _summaries_of(
                session, (account_id, tag), wanted[index], answered, snippet_chars, raw_window_bytes
            )
        except Exception as exc:  # the caller decides whether it ends the call (mailbox_failure)
            results[index] = exc
    return [results[index] for index in range(len(wanted))]


def _summaries_of(
    session: ImapSession,
    account: tuple[str, str],
    wanted: tuple[str, int, list[int]],
    answered: tuple[SummaryRequests, dict[int, dict[bytes, Any]]] | None,
    snippet_chars: int,
    raw_window_bytes: int,
) -> SummaryBatch:
    """One mailbox's summaries from its requests and their answers in the batch, or (``answered``
    None) read alone; ``account``: its id and the caller's tag in the ids."""
    mailbox, uidvalidity, uids = wanted
    account_id, tag = account
    if answered is None:
        session.examine_ahead(mailbox, uidvalidity=uidvalidity)
    return fetch_summaries(
        session,
        account_id=account_id,
        tag=tag,
        mailbox=mailbox,
        uidvalidity=uidvalidity,
        uids=uids,
        snippet_chars=snippet_chars,
        raw_window_bytes=raw_window_bytes,
        fetched=answered,
    )
