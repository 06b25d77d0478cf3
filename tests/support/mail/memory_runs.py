"""Runs on a whole search (``mail/bulk.py``'s ``MailRuns``) on mail kept in memory: the family
:class:`~tests.support.mail.memory_mail.MemoryMail` takes from :class:`MemoryRuns`, held to the same
contract as ``imap/bulk_runs.py`` (tests/support/shared/mail_contract.py).

A test sets :attr:`MemoryRuns.trouble` to have one chunk of a run go wrong as it does on a network: its
answer lost after the change was made (``OutcomeUnknown``), or the server unreachable before anything was
sent; a chunk whose answer was lost is settled as a server's is, afresh: what is still in the source is
moved now, what left it is found in the destination by its content.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar, cast

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.imap.errors import ConnectionLost
from mail_imap_mcp.mail.bulk import ChunkAction, FlagChanges, LinkUse, SearchSet
from mail_imap_mcp.mail.directory import directory_of
from mail_imap_mcp.mail.errors import OutcomeUnknown, UidValidityChanged
from mail_imap_mcp.mail.roles import TRASH
from mail_imap_mcp.mail.write_records import Copied, FlagOperation
from mail_imap_mcp.query import EVERYTHING, Query

if TYPE_CHECKING:
    from tests.support.mail.memory_mail import MemoryMail

T = TypeVar("T")


@dataclass
class Trouble:
    """What goes wrong at the ``chunk``-th chunk the backend is sent (from 1, over every run): with
    ``answer_lost`` the change is made and its answer lost (``timed_out``: it came too late); with
    ``unreachable`` nothing is sent. ``settles``: whether a lost answer can be found out after."""

    chunk: int
    kind: Literal["answer_lost", "unreachable"] = "answer_lost"
    settles: bool = True
    timed_out: bool = False


class MemoryRuns:
    """The runs family of :class:`~tests.support.mail.memory_mail.MemoryMail`."""

    #: What goes wrong, and the chunks sent so far.
    trouble: Trouble | None = None
    chunks_sent: int = 0

    def kept_mail(self) -> MemoryMail:
        return cast("MemoryMail", self)

    def fixed(self, mailbox: str, query: Query) -> SearchSet:
        mail = self.kept_mail()
        return SearchSet(mailbox, mail.status(mailbox).uidvalidity, tuple(mail.search(mailbox, query)))

    def targets(self, approved: SearchSet, query: Query | None) -> tuple[list[int], set[int]]:
        present = self.checked(approved)
        if query is None:
            return sorted(present), set()
        now, wanted = set(self.kept_mail().search(approved.mailbox, query)), set(approved.uids)
        return sorted(now & wanted), now - wanted

    def arrived(self, approved: SearchSet, query: Query) -> set[int]:
        mail = self.kept_mail()
        if mail.status(approved.mailbox).uidvalidity != approved.uidvalidity:
            return set()
        return set(mail.search(approved.mailbox, query)) - set(approved.uids)

    def moving(self, approved: SearchSet, to: str) -> ChunkAction:
        return _Moving(self, approved, to)

    def flagging(
        self, approved: SearchSet, operation: FlagOperation, flags: tuple[str, ...], changes: FlagChanges
    ) -> ChunkAction:
        return _Flagging(self, approved, operation, flags, changes)

    def deletes_to(self, account: AccountConfig | None) -> str:
        mail = self.kept_mail()
        return directory_of(mail.mailboxes(), account).require(TRASH, mail.account_id)

    def selectable(self, name: str) -> str | None:
        return directory_of(self.kept_mail().mailboxes()).selectable(name)

    def checked(self, approved: SearchSet) -> set[int]:
        """Those of the set still in its mailbox, once that is the one of the set (else
        ``UidValidityChanged`` naming it: nothing is acted on)."""
        mail = self.kept_mail()
        status = mail.status(approved.mailbox)
        if status.uidvalidity != approved.uidvalidity:
            raise UidValidityChanged(approved.uidvalidity, status.uidvalidity, approved.mailbox)
        return set(mail.flags(approved.mailbox, approved.uids))

    def sent(self, uids: list[int], change: Callable[[], T]) -> T:
        """``change`` as one chunk's command, through :attr:`trouble`."""
        self.chunks_sent += 1
        trouble = (
            self.trouble if self.trouble is not None and self.trouble.chunk == self.chunks_sent else None
        )
        if trouble is not None and trouble.kind == "unreachable":
            raise ConnectionLost("the connection dropped before the chunk was sent")
        done = change()
        if trouble is not None:
            raise OutcomeUnknown(uids, timed_out=trouble.timed_out)
        return done

    def settling(self, uids: list[int]) -> None:
        """Refuse to settle (its outcome stays unknown) where :attr:`trouble` says the look after fails."""
        if self.trouble is not None and not self.trouble.settles:
            raise OutcomeUnknown(uids, timed_out=self.trouble.timed_out)


@dataclass
class _Moving:
    """A move of the set's chunks. A chunk whose answer was lost is settled as ``imap/bulk_moves.py``
    settles it: what is still in the source is moved now; what left it is found among the destination's
    messages that arrived since the run began and are not yet accounted for, by its content."""

    runs: MemoryRuns
    approved: SearchSet
    to: str
    #: The set's messages as read before the first chunk, the destination's next UID then, and the
    #: destination UIDs already accounted to a message of the set.
    sources: dict[int, bytes] = field(default_factory=dict)
    to_next: int = 1
    claimed: set[int] = field(default_factory=set)

    def prepare(self, targets: list[int]) -> None:
        mail = self.runs.kept_mail()
        self.sources = {uid: mail.raw(self.approved.mailbox, uid) or b"" for uid in targets}
        self.to_next = mail.status(self.to).uidnext

    def send(self, uids: list[int]) -> Copied | None:
        self.runs.checked(self.approved)
        moved = self.runs.sent(uids, lambda: self._move(uids))  # the answer came: its UIDs are claimed
        self.claimed.update(moved.uids.values())
        return moved

    def link(self) -> LinkUse:
        return LinkUse(self.runs.chunks_sent, 0.0)  # one wait a chunk, and no network to wait on

    def settle(self, uids: list[int]) -> Copied | None:
        self.runs.settling(uids)
        mail = self.runs.kept_mail()
        still = self.runs.checked(self.approved) & set(uids)
        arrived = {
            uid: mail.raw(self.to, uid)
            for uid in mail.search(self.to, EVERYTHING)
            if uid >= self.to_next and uid not in self.claimed
        }
        found: dict[int, int] = {}
        for uid in sorted(set(uids) - still):
            match = next((new for new, raw in arrived.items() if raw == self.sources.get(uid)), None)
            if match is not None:
                found[uid] = match
                del arrived[match]
        moved = self._move(sorted(still)) if still else None
        named = {**found, **(moved.uids if moved is not None else {})}
        self.claimed.update(named.values())
        return Copied(mail.status(self.to).uidvalidity, named) if named else None

    def _move(self, uids: list[int]) -> Copied:
        return self.runs.kept_mail().move(self.approved.mailbox, uids, self.to)


@dataclass
class _Flagging:
    """Flags added or removed on the set's chunks, each message a flag changed on noted."""

    runs: MemoryRuns
    approved: SearchSet
    operation: FlagOperation
    flags: tuple[str, ...]
    changes: FlagChanges

    def prepare(self, targets: list[int]) -> None:
        return None

    def send(self, uids: list[int]) -> Copied | None:
        self.runs.checked(self.approved)
        return self.runs.sent(uids, lambda: self._store(uids))

    def link(self) -> LinkUse:
        return LinkUse(self.runs.chunks_sent, 0.0)  # one wait a chunk, and no network to wait on

    def settle(self, uids: list[int]) -> Copied | None:
        self.runs.settling(uids)
        self.runs.checked(self.approved)
        return self._store(uids)

    def _store(self, uids: list[int]) -> None:
        mail = self.runs.kept_mail()
        for flag in self.flags:
            for uid, state in mail.flags(self.approved.mailbox, uids).items():
                has = flag.lower() in {f.lower() for f in state.flags}
                if has != (self.operation == "add"):
                    self.changes.flags[flag].add(uid)
        mail.store(self.approved.mailbox, uids, self.operation, self.flags)
