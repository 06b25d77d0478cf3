"""The mail backend Protocols (``mail/backend.py``) over one account's IMAP connection: each call one
``AccountConnection.run`` (a write one ``run_write``), with the session's own commands and checks (the
view, UIDPLUS for exact expunges, MOVE or COPY and expunge)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, TypeVar

from mail_imap_mcp import mime
from mail_imap_mcp.imap.bulk_runs import ImapRuns
from mail_imap_mcp.imap.bulk_sets import search_uids
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.directory import matching_directory
from mail_imap_mcp.imap.drafts import ImapDrafts
from mail_imap_mcp.imap.errors import command_refused
from mail_imap_mcp.imap.fetch import MAX_HEADER_BYTES, expunged, fetch_summaries, find_item
from mail_imap_mcp.imap.flags import not_permitted
from mail_imap_mcp.imap.mailbox_changes import SessionMailboxes, leave
from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.pages import ImapPageReads
from mail_imap_mcp.imap.parts import read_part
from mail_imap_mcp.imap.read import copy_raw, read_message
from mail_imap_mcp.imap.replies import answered_in
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.session_writes import FlagState
from mail_imap_mcp.imap.uidplus import copied_of
from mail_imap_mcp.mail.backend import (
    Appended,
    Changed,
    Copied,
    FlagOperation,
    Landing,
    MailboxChanges,
    MailboxStatus,
    MarkedOnce,
    MessageFlags,
)
from mail_imap_mcp.mail.errors import MailboxMissing, MessageGone, UidValidityChanged, still_names
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.pages import PageReads
from mail_imap_mcp.mail.parts import PartRead, PartWindow
from mail_imap_mcp.mail.reading import ReadOptions
from mail_imap_mcp.mail.records import MessageRecord, SummaryRecord
from mail_imap_mcp.mail.replies import Candidate
from mail_imap_mcp.mail.write_errors import DestinationMissing
from mail_imap_mcp.query import Query, needs_utf8, search_keys

_MODES: dict[FlagOperation, str] = {"add": "+", "remove": "-", "replace": ""}
_STATUS = (b"MESSAGES", b"UNSEEN", b"UIDVALIDITY", b"UIDNEXT")
#: How much of a message's source is read where its BODYSTRUCTURE cannot be trusted (imap/fetch.py).
RAW_WINDOW_BYTES = 256 * 1024

T = TypeVar("T")


class ImapMail(ImapDrafts, ImapRuns):
    """Every backend family on ``connection``'s account (drafts': :class:`~.drafts.ImapDrafts`; runs on a
    whole search: ``imap/bulk_runs.py``)."""

    def __init__(self, connection: AccountConnection) -> None:
        self._connection = connection

    def mailboxes(self) -> list[MailboxInfo]:
        return self._connection.run(list_mailboxes)

    def status(self, mailbox: str) -> MailboxStatus:
        def status(session: ImapSession) -> MailboxStatus:
            session.examine(mailbox)  # the missing mailbox said as every read says it
            session.deselect()  # STATUS of the selected mailbox may answer from a stale view (Courier)
            items = [*_STATUS, b"HIGHESTMODSEQ"] if session.profile.condstore else list(_STATUS)
            answer = _folder_status(session, mailbox, items)
            modseq = answer.get(b"HIGHESTMODSEQ")
            messages, unseen, uidvalidity, uidnext = (int(answer[key]) for key in _STATUS)
            highest = int(modseq) if modseq is not None else None
            return MailboxStatus(messages, unseen, uidvalidity, uidnext, highest)

        return self._connection.run(status)

    def search(self, mailbox: str, query: Query) -> list[int]:
        def search(session: ImapSession) -> list[int]:
            session.examine(mailbox)
            keys = search_keys(query) or [b"ALL"]
            return sorted(session.uid_search(keys, charset="UTF-8" if needs_utf8(query) else None))

        return self._connection.run(search)

    def flags(self, mailbox: str, uids: Sequence[int]) -> dict[int, MessageFlags]:
        def flags(session: ImapSession) -> dict[int, MessageFlags]:
            state = session.examine(mailbox)
            found = session.fetch_flags(uids, modseq=session.profile.condstore and state.modseqs)
            return _flags(found)

        return self._connection.run(flags) if uids else {}

    def summaries(
        self, mailbox: str, uids: Sequence[int], snippet_chars: int, tag: str = ""
    ) -> list[SummaryRecord]:
        account_id = self._connection.account_id

        def summaries(session: ImapSession) -> list[SummaryRecord]:
            state = session.examine(mailbox)
            return fetch_summaries(
                session,
                account_id=account_id,
                tag=tag,
                mailbox=mailbox,
                uidvalidity=state.uidvalidity,
                uids=list(uids),
                snippet_chars=snippet_chars,
                raw_window_bytes=RAW_WINDOW_BYTES,
            ).messages

        return self._connection.run(summaries) if uids else []

    def raw(self, mailbox: str, uid: int) -> bytes | None:
        return self._section(mailbox, uid, "BODY.PEEK[]", b"BODY[]")

    def header(self, mailbox: str, uid: int) -> bytes | None:
        return self._section(mailbox, uid, "BODY.PEEK[HEADER]", b"BODY[HEADER]")

    def headers(
        self, mailbox: str, uidvalidity: int, uids: Sequence[int], per_read: int
    ) -> dict[int, dict[str, list[str]]]:
        def read(session: ImapSession) -> dict[int, dict[str, list[str]]]:
            state = session.examine(mailbox)
            if state.uidvalidity != uidvalidity:
                raise UidValidityChanged(uidvalidity, state.uidvalidity, mailbox)
            headers: dict[int, dict[str, list[str]]] = {}
            for start in range(0, len(uids), per_read):
                chunk = list(uids[start : start + per_read])
                for uid, response in session.fetch(
                    chunk, [f"BODY.PEEK[HEADER]<0.{MAX_HEADER_BYTES}>"]
                ).items():
                    if not expunged(response):
                        headers[uid] = mime.parse_header_block(find_item(response, b"BODY[HEADER]") or b"")
            return headers

        return self._connection.run(read)

    def header_fields(self, ref: MessageRef, names: Sequence[str]) -> dict[str, list[str]] | None:
        item = f"BODY.PEEK[HEADER.FIELDS ({' '.join(name.upper() for name in names)})]"

        def read(session: ImapSession) -> dict[str, list[str]] | None:
            still_names(ref, session.examine(ref.mailbox).uidvalidity)
            block = find_item(session.fetch([ref.uid], [item]).get(ref.uid) or {}, b"BODY[")
            return mime.parse_header_block(block) if block else None

        return self._connection.run(read)

    def part(self, ref: MessageRef, part_id: str, sink: BinaryIO, window: PartWindow) -> PartRead:
        start = sink.tell()

        def read(session: ImapSession) -> PartRead:
            sink.seek(start)  # a read run again on a new connection starts the sink over
            sink.truncate()
            still_names(ref, session.examine(ref.mailbox).uidvalidity)
            return read_part(session, ref, part_id, sink, window)

        return self._connection.run(read)

    def source(
        self, ref: MessageRef, sink: BinaryIO, accept: Callable[[int], None], told: Callable[[int, int], None]
    ) -> int:
        start = sink.tell()

        def read(session: ImapSession) -> int:
            sink.seek(start)  # a read run again on a new connection starts the sink over
            sink.truncate()
            still_names(ref, session.examine(ref.mailbox).uidvalidity)
            return copy_raw(session, ref, sink, accept=accept, told=told)

        return self._connection.run(read)

    def message(self, ref: MessageRef, options: ReadOptions) -> tuple[MessageRecord, list[str]]:
        def read(session: ImapSession) -> tuple[MessageRecord, list[str]]:
            still_names(ref, session.examine(ref.mailbox).uidvalidity)
            return read_message(session, ref, options)  # MessageGone: the registry says it, naming ref

        return self._connection.run(read)

    def answered(
        self, sent: Callable[[list[MailboxInfo]], str | None], candidates: Sequence[Candidate]
    ) -> set[str] | None:
        def answered(session: ImapSession) -> set[str] | None:
            mailbox = sent(list_mailboxes(session))  # one LIST, then EXAMINE with the SEARCH, one FETCH
            return None if mailbox is None else answered_in(session, mailbox, candidates)

        return self._connection.run(answered)

    def _section(self, mailbox: str, uid: int, item: str, key: bytes) -> bytes | None:
        def read(session: ImapSession) -> bytes | None:
            session.examine(mailbox)
            value = session.fetch([uid], [item]).get(uid, {}).get(key)
            return bytes(value) if value is not None else None

        return self._connection.run(read)

    def store(self, mailbox: str, uids: Sequence[int], change: FlagOperation, flags: Sequence[str]) -> None:
        def store(session: ImapSession) -> None:
            session.select(mailbox)
            session.store_flags(uids, _MODES[change], flags)

        self._connection.run_write(store)

    def copy(self, mailbox: str, uids: Sequence[int], destination: str) -> Copied:
        return self._transfer(mailbox, uids, destination, move=False)

    def move(self, mailbox: str, uids: Sequence[int], destination: str) -> Copied:
        return self._transfer(mailbox, uids, destination, move=True)

    def _transfer(self, mailbox: str, uids: Sequence[int], destination: str, *, move: bool) -> Copied:
        def transfer(session: ImapSession) -> Copied:
            session.select(mailbox)
            # A move takes its messages away: which were there is looked up before, as an OK without
            # COPYUID cannot tell a move of nothing from one whose new UIDs the server did not say.
            there = _present(session, uids) if move else None
            try:
                copied = session.uid_move(uids, destination) if move else session.uid_copy(uids, destination)
                named = copied_of(copied)
                if named is None:
                    # No COPYUID (none without UIDPLUS; RFC 4315 lets a server with it leave it out): those
                    # of the UIDs that were there were copied, their new UIDs unknown (a copy leaves the
                    # source as it was). None there: nothing copied, and Dovecot then answers OK even where
                    # the destination is missing: STATUS says so.
                    unnamed = there if there is not None else _present(session, uids)
                    found = _folder_status(session, destination, [b"UIDVALIDITY"])
                    return Copied(int(found[b"UIDVALIDITY"]), {}, tuple(unnamed))
            except MailboxMissing:
                raise DestinationMissing(destination) from None
            return named

        return self._connection.run_write(transfer)

    def append(self, mailbox: str, message: bytes, flags: Sequence[str] = ()) -> Appended:
        def append(session: ImapSession) -> Appended:
            leave(session, mailbox)  # Courier refuses an APPEND to the mailbox the connection has EXAMINEd
            with session.write_command():
                made = session.append(mailbox, message, flags)
            if made is None:
                raise ValueError("the server names no appended message (no UIDPLUS)")
            return Appended(*made)

        return self._connection.run_write(append)

    def expunge(self, mailbox: str, uids: Sequence[int]) -> None:
        def expunge(session: ImapSession) -> None:
            session.select(mailbox)
            session.uid_expunge(uids)

        self._connection.run_write(expunge)

    def check_expunge(self) -> None:
        self._connection.run(lambda session: session.personality.transfer_commands("delete", permanent=True))

    def landing(self, destination: str) -> tuple[Landing, str] | None:
        def look(session: ImapSession) -> tuple[Landing, str] | None:
            lands_as = session.personality.lands_as
            if not lands_as:  # one LIST of that name, only where some role is more than a mailbox
                return None
            for box in matching_directory(session, destination).boxes:
                landing = lands_as.get(box.special_use or "")
                if landing is not None:
                    return landing, box.name
            return None

        return self._connection.run(look)

    def append_limit(self) -> int | None:
        return self._connection.run(lambda session: session.profile.append_limit)

    def mark_once(self, ref: MessageRef, keyword: str) -> MarkedOnce:
        def mark(session: ImapSession) -> MarkedOnce:
            state = session.select(ref.mailbox, uidvalidity=ref.uidvalidity)
            if not session.profile.condstore or not state.modseqs or not_permitted(state, [], [keyword]):
                return "unsupported"
            found = session.fetch_flags([ref.uid], modseq=True).get(ref.uid)
            if found is None:
                raise MessageGone(ref)
            if keyword.lower() in {flag.lower() for flag in found.flags}:
                return "held"
            if found.modseq is None:
                return "unsupported"
            modified = session.store_flags([ref.uid], "+", [keyword], unchanged_since=found.modseq)
            return "held" if modified else "set"

        return self._connection.run_write(mark)

    def unmark(self, ref: MessageRef, keyword: str) -> None:
        def unmark(session: ImapSession) -> None:
            session.select(ref.mailbox, uidvalidity=ref.uidvalidity)
            if ref.uid in session.fetch_flags([ref.uid]):
                session.store_flags([ref.uid], "-", [keyword])

        self._connection.run_write(unmark)

    def changing_mailboxes(self, work: Callable[[MailboxChanges], T]) -> T:
        return self._connection.run_write(lambda session: work(SessionMailboxes(session)))

    def create_mailbox(self, mailbox: str) -> None:
        self.changing_mailboxes(lambda changes: changes.create_mailbox(mailbox))

    def rename_mailbox(self, mailbox: str, new_name: str) -> None:
        self.changing_mailboxes(lambda changes: changes.rename_mailbox(mailbox, new_name))

    def delete_mailbox(self, mailbox: str) -> None:
        self.changing_mailboxes(lambda changes: changes.delete_mailbox(mailbox))

    def messages(self, mailbox: str) -> int:
        return self._connection.run(lambda session: SessionMailboxes(session).messages(mailbox))

    def pages(self, work: Callable[[PageReads], T]) -> T:
        account_id = self._connection.account_id
        return self._connection.run(lambda session: work(ImapPageReads(session, account_id)))

    def changed_since(self, mailbox: str, modseq: int) -> Changed:
        def changed(session: ImapSession) -> Changed:
            session.examine(mailbox)
            every = session.uid_search([b"ALL"])
            found = _flags(session.fetch_flags(every, modseq=True)) if every else {}
            session.deselect()
            highest = int(_folder_status(session, mailbox, [b"HIGHESTMODSEQ"])[b"HIGHESTMODSEQ"])
            return Changed({uid: f for uid, f in found.items() if (f.modseq or 0) > modseq}, highest)

        return self._connection.run(changed)


def _folder_status(session: ImapSession, mailbox: str, items: list[bytes]) -> dict[bytes, Any]:
    """STATUS of ``mailbox`` (not the selected one), the server's refusal as its domain error
    (:class:`~mail_imap_mcp.mail.errors.MailboxMissing` where there is none)."""
    try:
        answer: dict[bytes, Any] = session.client.folder_status(mailbox, items)
    except Exception as exc:
        raise command_refused(exc) or exc from None
    return answer


def _flags(found: dict[int, FlagState]) -> dict[int, MessageFlags]:
    return {uid: MessageFlags(uid, frozenset(state.flags), state.modseq) for uid, state in found.items()}


def _present(session: ImapSession, uids: Sequence[int]) -> list[int]:
    """Those of ``uids`` in the selected mailbox (one UID SEARCH), in the order given."""
    found = set(search_uids(session, uids))
    return [uid for uid in uids if uid in found]
