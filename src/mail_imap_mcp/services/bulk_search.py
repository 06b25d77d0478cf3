"""Acting on a whole search: its preview (count and first matches, from the index where the account keeps
one), the set fixed when asked (the server's own search), the work a background operation runs on it
(:mod:`mail_imap_mcp.operations.bulk`'s loop, each step through the account's mail: ``mail/bulk.py``),
and the undo of a whole batch, kept in the state store for :data:`UNDO_TTL_S` (a file in one process,
Redis in team mode: ``Call.lasting_store``).

The set a question showed the user is kept in the store for :data:`PENDING_TTL_S` under the call's
arguments: the same call asked again once the user answered (MCP elicitation reruns it) acts on exactly
that set, not on a new search.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.bulk import BulkSearch, FlagChanges, MailRuns, SearchSet, SetRun
from mail_imap_mcp.mail.cursors import DIGEST_CHARS
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.mail.uid_sets import format_uid_set, parse_uid_set
from mail_imap_mcp.mail.write_errors import DestinationMissing
from mail_imap_mcp.mail.write_records import FlagOperation
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.bulk import run_on_set
from mail_imap_mcp.query import Query
from mail_imap_mcp.services.search import search_page
from mail_imap_mcp.services.search_scope import Searched

#: How long the undo of a whole batch is kept (24 hours).
UNDO_TTL_S = 24 * 3600.0
#: How long the set shown to the user waits for the call to come back with their answer.
PENDING_TTL_S = 900.0
#: Matches a preview shows.
PREVIEW = 10

#: A run on a set: its own calls on the account's mail, reporting to its progress.
Work = Callable[[Progress], SetRun]


def preview(app: Call, search: BulkSearch) -> tuple[int, list[SummaryRecord]]:
    """How many messages match now, and the newest :data:`PREVIEW` (the local index answers where it can)."""
    where = Searched(search.account_id, search.mailbox, None, "arrival", PREVIEW, 0, None)
    digest = hashlib.sha256(f"bulk:{search.query}".encode()).hexdigest()[:DIGEST_CHARS]
    page = search_page(app, where, search.tree, digest, ranked_query=True)
    return page.total, page.messages


def fix_set(app: Call, search: BulkSearch) -> SearchSet:
    """The UIDs the backend's search finds now."""
    return app.mail(search.account_id).fixed(search.mailbox, search.tree)


def destination(app: Call, account_id: str, action: str, named: str | None) -> str:
    """Where a move (``named``, an existing mailbox) or a delete (the account's Trash) takes the messages."""
    mail = app.mail(account_id)
    if action == "delete":
        return mail.deletes_to(app.config.accounts[account_id])
    found = mail.selectable(named or "")
    if found is None:
        raise DestinationMissing(named or "", "destination_mailbox")
    return found


def moving(runs: MailRuns, approved: SearchSet, query: Query | None, to: str) -> Work:
    """The work of moving those of the set that still match ``query`` (None: that still exist) to ``to``,
    chunk by chunk."""
    return lambda progress: run_on_set(runs, approved, query, progress, runs.moving(approved, to), moves=True)


def flagging(
    runs: MailRuns,
    search: BulkSearch | None,
    approved: SearchSet,
    operation: FlagOperation,
    flags: tuple[str, ...],
) -> tuple[Work, FlagChanges]:
    """The work of adding or removing ``flags`` on the set, and the changes it notes; ``search`` None: on
    those of the set that still exist (an undo)."""
    changes = FlagChanges({flag: set() for flag in flags})
    tree = search.tree if search is not None else None

    def work(progress: Progress) -> SetRun:
        action = runs.flagging(approved, operation, flags, changes)
        return run_on_set(runs, approved, tree, progress, action)

    return work, changes


class UndoRecord(BaseModel):
    """What puts a whole batch back: a move's messages (now at ``uids`` in ``mailbox``) go back to
    ``back_to``; a flag change's flags come off (or back on) the messages each one changed."""

    kind: Literal["move", "flags"]
    account_id: str
    mailbox: str
    uidvalidity: int
    uids: str = ""
    back_to: str | None = None
    operation: Literal["add", "remove"] | None = None
    flags: dict[str, str] = {}

    def count(self) -> int:
        """Messages the undo puts back (at most)."""
        if self.kind == "move":
            return len(self.moved().uids)
        return sum(len(self.flagged(flag).uids) for flag in self.flags)

    def moved(self) -> SearchSet:
        return SearchSet(self.mailbox, self.uidvalidity, tuple(parse_uid_set(self.uids)) if self.uids else ())

    def flagged(self, flag: str) -> SearchSet:
        return SearchSet(self.mailbox, self.uidvalidity, tuple(parse_uid_set(self.flags[flag])))


def move_record(account_id: str, run: SetRun, moved_to: str, back_to: str) -> UndoRecord | None:
    if not run.new_uids or run.new_uidvalidity is None:
        return None
    return UndoRecord(
        kind="move",
        account_id=account_id,
        mailbox=moved_to,
        uidvalidity=run.new_uidvalidity,
        uids=format_uid_set(sorted(run.new_uids)),
        back_to=back_to,
    )


def flag_record(
    account_id: str, approved: SearchSet, operation: FlagOperation, changes: FlagChanges
) -> UndoRecord | None:
    changed = {flag: format_uid_set(sorted(uids)) for flag, uids in changes.flags.items() if uids}
    if not changed:
        return None
    undo: Literal["add", "remove"] = "remove" if operation == "add" else "add"
    return UndoRecord(
        kind="flags",
        account_id=account_id,
        mailbox=approved.mailbox,
        uidvalidity=approved.uidvalidity,
        operation=undo,
        flags=changed,
    )


def keep_undo(app: Call, record: UndoRecord | None) -> str | None:
    """Keep ``record`` for :data:`UNDO_TTL_S`; its token (None: nothing to undo)."""
    if record is None:
        return None
    token = "undo_" + secrets.token_urlsafe(12)
    app.lasting_store.set(app.caller.key("bulk-undo", token), record.model_dump_json().encode(), UNDO_TTL_S)
    return token


def kept_undo(app: Call, token: str) -> UndoRecord | None:
    """The undo ``token`` names; None when unknown, used or expired."""
    raw = app.lasting_store.get(app.caller.key("bulk-undo", token))
    return UndoRecord.model_validate_json(raw) if raw is not None else None


def used_undo(app: Call, token: str) -> None:
    """The undo ``token`` names was run to its end: it works once. (One that stopped before is kept: run
    again, it finds the messages it put back gone from where they were, and puts back the rest.)"""
    app.lasting_store.delete(app.caller.key("bulk-undo", token))


def moving_back(runs: MailRuns, record: UndoRecord) -> Work:
    """The work of an undone move: the messages still at their new UIDs go back where they were."""
    return moving(runs, record.moved(), None, record.back_to or "")


def flags_back(runs: MailRuns, record: UndoRecord) -> Work:
    """The work of an undone flag change: each flag reverted on the messages it changed on."""
    operation: FlagOperation = record.operation or "remove"

    def work(progress: Progress) -> SetRun:
        total = SetRun(matched=0)
        for flag in record.flags:
            run, _ = flagging(runs, None, record.flagged(flag), operation, (flag,))
            done = run(progress)
            total.matched += done.matched
            total.done += done.done
            total.gone += done.gone
            total.not_attempted += done.not_attempted
            total.unknown += done.unknown
            if done.lost or done.cancelled:
                total.lost, total.cancelled = done.lost, done.cancelled
                break
        return total

    return work


def pending_key(app: Call, tool: str, arguments: dict[str, Any]) -> str:
    request = {key: value for key, value in arguments.items() if key != "confirm_token"}
    canonical = json.dumps([tool, request], sort_keys=True, separators=(",", ":"), default=str)
    return app.caller.key("bulk-ask", hashlib.sha256(canonical.encode()).hexdigest()[:32])


class Pending(BaseModel):
    """The set a question showed the user, and what it showed of it."""

    mailbox: str
    uidvalidity: int
    uids: str
    sample: list[dict[str, Any]]

    def set(self) -> SearchSet:
        return SearchSet(self.mailbox, self.uidvalidity, tuple(parse_uid_set(self.uids)) if self.uids else ())


def pending(app: Call, key: str) -> Pending | None:
    raw = app.store.get(key)
    return Pending.model_validate_json(raw) if raw is not None else None


def keep_pending(app: Call, key: str, found: SearchSet, sample: list[dict[str, Any]]) -> Pending:
    kept = Pending(
        mailbox=found.mailbox,
        uidvalidity=found.uidvalidity,
        uids=format_uid_set(list(found.uids)) if found.uids else "",
        sample=sample,
    )
    app.store.set(key, kept.model_dump_json().encode(), PENDING_TTL_S)
    return kept


def forget_pending(app: Call, key: str) -> None:
    app.store.delete(key)
