"""Reads the mailboxes of a watermark page (:mod:`.watermark`): two round trips for all of them.

The first sends every mailbox's EXAMINE and its reads (the newest matches by arrival, and on a next
page the matches of the days around the watermark); the second the INTERNALDATE of what the page needs
of them, each behind a check that the mailbox is still the one examined (UIDVALIDITY). Where many
messages share one arrival time at the end of what was read, further round trips read more keys (and,
after an ESORT slice, the whole sorted list first). A mailbox that fails is a failure in its own part,
never the others'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mail_imap_mcp.imap import parsing, wire
from mail_imap_mcp.imap.pipeline import Command, MailboxRead, read_each
from mail_imap_mcp.imap.search.execute import KEY_ITEMS, internal_keys, response_key
from mail_imap_mcp.imap.search.watermark import (
    MailboxPart,
    Read,
    Trusted,
    Watermark,
    mailbox_reads,
    partial_answer,
    trusted,
)
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import format_uid_set


def read_parts(
    session: ImapSession,
    account_id: str,
    mailboxes: Sequence[tuple[int, str]],
    criteria: Sequence[bytes | str | int],
    wanted: int,
    watermark: Watermark | None,
    sort: str,
) -> list[tuple[MailboxPart, Trusted | None]]:
    """Each of ``mailboxes`` (place in the search's list, name): its part of the page in ``sort`` order
    and what of it is known to come next (None where it failed)."""
    partial = session.profile.sorts_partially
    tokens = wire.search_args(list(criteria), None)
    reads = mailbox_reads(tokens, wanted, watermark, partial=partial, sort=sort)
    parts = [MailboxPart(name, index) for index, name in mailboxes]
    commands = [_command(read, partial) for read in reads]
    replies = read_each(session, account_id, [MailboxRead(part.mailbox, commands) for part in parts])
    for part, reply in zip(parts, replies, strict=True):
        part.uidvalidity = reply.state.uidvalidity if reply.state is not None else 0
        part.failure = reply.failure
        if part.failure is None:
            for read, answer in zip(reads, reply.answers, strict=True):
                _take(part, read, answer, partial)
    found: dict[int, Trusted | None] = {}
    pending = [part for part in parts if part.failure is None]
    whole = mailbox_reads(tokens, wanted, watermark, partial=False, sort=sort)[-1]
    while pending:
        refill = [(part, [_command(whole, False)]) for part in pending if part.needs_order(wanted)]
        for part, answers in _again(session, account_id, refill):
            _take(part, whole, answers[0], False)
        goals = {id(part): part.keys_to_read(wanted) for part in pending if part.failure is None}
        keying = [
            (part, [Command.fetch(format_uid_set(goals[id(part)][1]), KEY_ITEMS[sort])])
            for part in pending
            if part.failure is None and goals[id(part)][1]
        ]
        for part, answers in _again(session, account_id, keying):
            part.keys.update({uid: key or 0 for uid, key in _keys(session, answers[0], sort).items()})
        for part in pending:
            if part.failure is None:
                part.keyed = goals[id(part)][0]
                found[part.index] = trusted(part, watermark, wanted)
        # A part with nothing more to read is as complete as it gets (never read again in a loop).
        pending = [p for p in pending if p.failure is None and found[p.index] is None and goals[id(p)][1]]
    for part in parts:  # a server that keeps answering less than it counted: what it gave, as it is
        if part.failure is None and found.get(part.index) is None:
            found[part.index] = trusted(replace(part, count=part.keyed), watermark, wanted)
    return [(part, found.get(part.index)) for part in parts]


def _keys(session: ImapSession, answer: list[object], sort: str) -> dict[int, int | None]:
    if sort == "arrival":
        return internal_keys(session, answer)
    parsed = session.client.parse_fetch(answer)
    return {uid: response_key(response, sort) for uid, response in parsed.items()}


def _command(read: Read, partial: bool) -> Command:
    if read.kind == "near":
        return Command((b"SEARCH", *read.args), "SEARCH")
    return Command((b"SORT", *read.args), "ESEARCH" if partial else "SORT")


def _take(part: MailboxPart, read: Read, answer: list[object], partial: bool) -> None:
    if read.kind == "near":
        part.near = parsing.search_uids(list(answer))
    elif partial:
        part.order, count = partial_answer(answer)
        part.count = count if count is not None else len(part.order)
    else:
        part.order = parsing.search_uids(list(answer))
        part.count = len(part.order)


def _again(
    session: ImapSession, account_id: str, reads: list[tuple[MailboxPart, list[Command]]]
) -> list[tuple[MailboxPart, list[list[object]]]]:
    """Further commands on mailboxes examined already, each checked to be the one examined; a part whose
    reply failed takes the failure and is left out of the result."""
    if not reads:
        return []
    sent = [MailboxRead(part.mailbox, commands, part.uidvalidity) for part, commands in reads]
    answered = []
    for (part, _), reply in zip(reads, read_each(session, account_id, sent), strict=True):
        if reply.failure is not None:
            part.failure = reply.failure
        else:
            answered.append((part, reply.answers))
    return answered
