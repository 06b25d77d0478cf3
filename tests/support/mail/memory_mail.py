"""A mail backend that keeps its mailboxes in memory, for tests only: every family of
``mail/backend.py`` (reading, writing, watching) with UIDs, UIDVALIDITY, flags, keywords, MODSEQ and
special-use roles, as an IMAP server keeps them. tests/support/shared/mail_contract.py runs the same
cases on it and on the real servers, so it cannot drift from them; service logic that is not about IMAP is
tested on it in the pure tier.

Searches answer the query tree as IMAP SEARCH does (substrings, case-insensitively; dates by day of
arrival), and refuse what IMAP SEARCH cannot answer with the same errors (the tree is compiled to IMAP
keys first, which raises them).
"""

from __future__ import annotations

import email
import email.policy
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from email.message import EmailMessage
from typing import BinaryIO, TypeVar

from mail_imap_mcp import mime, query
from mail_imap_mcp.config import Config
from mail_imap_mcp.imap.fetch import summary_record
from mail_imap_mcp.mail import backend
from mail_imap_mcp.mail.errors import MailboxMissing, MessageGone, UidValidityChanged, still_names
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.pages import PageReads
from mail_imap_mcp.mail.part_errors import PartError, PartGone
from mail_imap_mcp.mail.parts import HEAD_BYTES, PartRead, PartWindow, WindowWriter, locate
from mail_imap_mcp.mail.reading import Body, ReadOptions, message_record
from mail_imap_mcp.mail.records import MessageRecord, SummaryRecord
from mail_imap_mcp.mail.replies import MAX_ANSWERS_READ, Candidate, answer_of, answer_search, answered_by
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.mail.write_errors import DestinationMissing, ExtensionMissing
from mail_imap_mcp.mime.summary import cut_snippet, first
from mail_imap_mcp.mime.transfer import StreamDecoder
from mail_imap_mcp.state import Caller
from tests.support.mail.memory_drafts import MemoryDrafts
from tests.support.mail.memory_mailboxes import MemoryMailboxes
from tests.support.mail.memory_pages import MemoryPageReads
from tests.support.mail.memory_runs import MemoryRuns

#: How much of a message's source :meth:`MemoryMail.source` writes at a time.
SOURCE_CHUNK_BYTES = 1 << 20

T = TypeVar("T")
_UIDVALIDITIES = itertools.count(1_700_000_000)
_FIELDS = {"from": ("From",), "to": ("To",), "cc": ("Cc",), "bcc": ("Bcc",), "subject": ("Subject",)}


@dataclass
class StoredMessage:
    """One message as a mailbox keeps it."""

    uid: int
    raw: bytes
    flags: set[str]
    modseq: int
    arrived: datetime

    def parsed(self) -> EmailMessage:
        message = email.message_from_bytes(self.raw, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        return message


@dataclass
class StoredMailbox:
    """One mailbox: its role, UIDVALIDITY, next UID, highest MODSEQ and messages by UID."""

    name: str
    role: str | None
    uidvalidity: int = field(default_factory=lambda: next(_UIDVALIDITIES))
    uidnext: int = 1
    highestmodseq: int = 1
    messages: dict[int, StoredMessage] = field(default_factory=dict)
    #: Each keyword the mailbox has seen, by its lower case, as first spelt: Dovecot and Cyrus keep one
    #: spelling of a keyword per mailbox for good (from a STORE that matched no message too), whatever a
    #: later APPEND, STORE or COPY says (Courier keeps one while a message carries it).
    keywords: dict[str, str] = field(default_factory=dict)

    def bump(self) -> int:
        self.highestmodseq += 1
        return self.highestmodseq

    def spelt(self, flags: Iterable[str]) -> set[str]:
        """``flags`` as the mailbox spells them: system flags as IMAP does, keywords as first seen here."""
        return {_SYSTEM.get(flag.lower()) or self.keywords.setdefault(flag.lower(), flag) for flag in flags}


class MemoryMail(MemoryDrafts, MemoryRuns, MemoryMailboxes):
    """Every backend family on one account held in memory (drafts': :class:`MemoryDrafts`; runs on a whole
    search: ``memory_runs.py``; mailboxes made, renamed and deleted: ``memory_mailboxes.py``); ``roles`` maps the mailboxes made at the start to their roles (INBOX is
    always there); ``separator``: the hierarchy's (``/`` as Dovecot's, ``.`` as
    Cyrus's and Courier's); ``exclusive``: whether a keyword can be set once (``mark_once``), as on a server
    with CONDSTORE (not Courier); ``append_limit``: the APPENDLIMIT it names; ``exact_expunge``: whether
    it removes exactly the given messages (a server with UIDPLUS); ``lands_as``: what a move or copy into a
    mailbox of a role is besides (Gmail's: ``{TRASH: "delete", JUNK: "spam"}``); ``rename_keeps_uidvalidity``:
    whether a renamed mailbox keeps its UIDVALIDITY and UIDs (Dovecot, Cyrus) or is another one, its messages
    numbered afresh from 1 (Courier)."""

    def __init__(
        self,
        roles: dict[str, str | None] | None = None,
        separator: str = "/",
        account_id: str = "default",
        *,
        exclusive: bool = True,
        append_limit: int | None = None,
        exact_expunge: bool = True,
        lands_as: dict[str, backend.Landing] | None = None,
        rename_keeps_uidvalidity: bool = True,
    ) -> None:
        self.separator = separator
        self.account_id = account_id
        self.exclusive = exclusive
        self.limit = append_limit
        self.exact_expunge = exact_expunge
        self.lands_as = lands_as or {}
        self.rename_keeps_uidvalidity = rename_keeps_uidvalidity
        self._boxes: dict[str, StoredMailbox] = {INBOX: StoredMailbox(INBOX, None)}
        for name, role in (roles or {}).items():
            self.create(name, role)

    def create(self, name: str, role: str | None = None) -> None:
        """Make mailbox ``name`` playing ``role`` (a special-use attribute such as ``\\Trash``)."""
        self._boxes[name] = StoredMailbox(name, role)

    def delete(self, name: str) -> None:
        """Drop mailbox ``name``; made again, it has a new UIDVALIDITY."""
        del self._boxes[name]

    def names(self) -> list[str]:
        """Every mailbox's name."""
        return list(self._boxes)

    def renamed(self, name: str, new_name: str) -> None:
        """Mailbox ``name`` under ``new_name``, with its messages and role (and UIDVALIDITY where the
        backend keeps it on a rename)."""
        box = self._boxes.pop(name)
        box.name = new_name
        if not self.rename_keeps_uidvalidity:  # Courier: another mailbox, its messages numbered afresh
            kept = [box.messages[uid] for uid in sorted(box.messages)]
            for uid, message in enumerate(kept, start=1):
                message.uid = uid
            box.messages = {message.uid: message for message in kept}
            box.uidvalidity, box.uidnext = next(_UIDVALIDITIES), len(kept) + 1
        self._boxes[new_name] = box

    # -- reading ----------------------------------------------------------------------------------------

    def mailboxes(self) -> list[MailboxInfo]:
        return [
            MailboxInfo(box.name, self.separator, [box.role] if box.role else [], box.role, selectable=True)
            for box in self._boxes.values()
        ]

    def status(self, mailbox: str) -> backend.MailboxStatus:
        box = self._box(mailbox, "STATUS")
        unseen = sum("\\Seen" not in m.flags for m in box.messages.values())
        return backend.MailboxStatus(
            len(box.messages), unseen, box.uidvalidity, box.uidnext, box.highestmodseq
        )

    def search(self, mailbox: str, wanted: query.Query) -> list[int]:
        query.search_keys(wanted)  # what IMAP SEARCH cannot answer is refused here as there
        box = self._box(mailbox, "EXAMINE")
        return sorted(uid for uid, message in box.messages.items() if _matches(wanted, message))

    def flags(self, mailbox: str, uids: Sequence[int]) -> dict[int, backend.MessageFlags]:
        box = self._box(mailbox, "EXAMINE")
        return {uid: _flags(box.messages[uid]) for uid in uids if uid in box.messages}

    def summaries(
        self, mailbox: str, uids: Sequence[int], snippet_chars: int, tag: str = ""
    ) -> list[SummaryRecord]:
        box = self._box(mailbox, "EXAMINE")
        found = [box.messages[uid] for uid in uids if uid in box.messages]
        return [self._summary(box, message, snippet_chars, tag) for message in found]

    def _summary(
        self, box: StoredMailbox, message: StoredMessage, snippet_chars: int, tag: str
    ) -> SummaryRecord:
        """The summary as a server's FETCH answer makes it (``imap/fetch.py``'s ``summary_record``, from
        what the message's own source says of its structure)."""
        ref = MessageRef(self.account_id, box.name, box.uidvalidity, message.uid, tag)
        headers = mime.parse_header_block(message.raw)
        end = message.raw.find(b"\r\n\r\n")
        text = mime.snippet_from_prefix(
            message.raw[end + 4 :] if end >= 0 else b"",
            [],
            header_content_type=first(headers, "content-type"),
            header_encoding=first(headers, "content-transfer-encoding"),
        )
        snippet = cut_snippet(text or "", snippet_chars) if snippet_chars else None
        answer = {
            b"INTERNALDATE": message.arrived,
            b"FLAGS": tuple(message.flags),
            b"RFC822.SIZE": len(message.raw),
        }
        parts = mime.parse_full_message(message.raw).attachments
        return summary_record(ref, answer, parts, snippet, headers)

    def raw(self, mailbox: str, uid: int) -> bytes | None:
        message = self._box(mailbox, "EXAMINE").messages.get(uid)
        return message.raw if message else None

    def header(self, mailbox: str, uid: int) -> bytes | None:
        raw = self.raw(mailbox, uid)
        if raw is None:
            return None
        end = raw.find(b"\r\n\r\n")
        return raw if end < 0 else raw[: end + 4]

    def headers(
        self, mailbox: str, uidvalidity: int, uids: Sequence[int], per_read: int
    ) -> dict[int, dict[str, list[str]]]:
        box = self._box(mailbox, "EXAMINE")
        if box.uidvalidity != uidvalidity:
            raise UidValidityChanged(uidvalidity, box.uidvalidity, mailbox)
        return {
            uid: mime.parse_header_block(header[: backend.MAX_HEADER_BYTES])
            for uid in uids
            if (header := self.header(mailbox, uid)) is not None
        }

    def header_fields(self, ref: MessageRef, names: Sequence[str]) -> dict[str, list[str]] | None:
        box = self._box(ref.mailbox, "EXAMINE")
        still_names(ref, box.uidvalidity)
        header = self.header(ref.mailbox, ref.uid)
        if header is None:
            return None
        wanted = {name.lower() for name in names}
        return {name: values for name, values in mime.parse_header_block(header).items() if name in wanted}

    def part(self, ref: MessageRef, part_id: str, sink: BinaryIO, window: PartWindow) -> PartRead:
        box = self._box(ref.mailbox, "EXAMINE")
        still_names(ref, box.uidvalidity)
        try:
            return _part(box.messages.get(ref.uid), part_id, sink, window)
        except PartError as exc:
            exc.ref = ref
            raise

    def source(
        self, ref: MessageRef, sink: BinaryIO, accept: Callable[[int], None], told: Callable[[int, int], None]
    ) -> int:
        box = self._box(ref.mailbox, "EXAMINE")
        still_names(ref, box.uidvalidity)
        message = box.messages.get(ref.uid)
        if message is None:
            raise MessageGone(ref)
        accept(len(message.raw))
        for start in range(0, len(message.raw), SOURCE_CHUNK_BYTES):
            sink.write(message.raw[start : start + SOURCE_CHUNK_BYTES])
            told(min(start + SOURCE_CHUNK_BYTES, len(message.raw)), len(message.raw))
        return len(message.raw)

    def message(self, ref: MessageRef, options: ReadOptions) -> tuple[MessageRecord, list[str]]:
        box = self._box(ref.mailbox, "EXAMINE")
        still_names(ref, box.uidvalidity)
        message = box.messages.get(ref.uid)
        if message is None:
            raise MessageGone(ref)
        parsed = mime.parse_full_message(message.raw)
        warnings: list[str] = []
        summary = self._summary(box, message, 0, ref.tag)
        body = Body(parsed.text, parsed.html, False, parsed.attachments)
        return message_record(
            summary, mime.parse_header_block(message.raw), body, options, warnings
        ), warnings

    def answered(
        self, sent: Callable[[list[MailboxInfo]], str | None], candidates: Sequence[Candidate]
    ) -> set[str] | None:
        mailbox = sent(self.mailboxes())
        if mailbox is None:
            return None
        search = answer_search(candidates)
        if search is None:
            return set()
        box = self._box(mailbox, "EXAMINE")
        found = self.search(mailbox, search)[-MAX_ANSWERS_READ:]
        answers = [answer_of(self.header(mailbox, uid) or b"", box.messages[uid].arrived) for uid in found]
        return answered_by(candidates, answers)

    # -- writing ----------------------------------------------------------------------------------------

    def store(
        self, mailbox: str, uids: Sequence[int], change: backend.FlagOperation, flags: Sequence[str]
    ) -> None:
        box = self._box(mailbox, "SELECT")
        given = box.spelt(
            flags
        )  # the mailbox knows a keyword once stored, on no message though (Dovecot, Cyrus)
        for uid in uids:
            message = box.messages.get(uid)
            if message is None:
                continue
            after = {
                "add": message.flags | given,
                "remove": {f for f in message.flags if f.lower() not in {g.lower() for g in given}},
                "replace": given,
            }[change]
            if after != message.flags:
                message.flags, message.modseq = after, box.bump()

    def copy(self, mailbox: str, uids: Sequence[int], destination: str) -> backend.Copied:
        return self._transfer(mailbox, uids, destination, move=False)

    def move(self, mailbox: str, uids: Sequence[int], destination: str) -> backend.Copied:
        return self._transfer(mailbox, uids, destination, move=True)

    def _transfer(self, mailbox: str, uids: Sequence[int], destination: str, *, move: bool) -> backend.Copied:
        box = self._box(mailbox, "SELECT")
        if destination not in self._boxes:
            raise DestinationMissing(destination)
        target = self._boxes[destination]
        placed: dict[int, int] = {}
        for uid in sorted(set(uids) & box.messages.keys()):
            message = box.messages[uid]
            placed[uid] = self._add(target, message.raw, message.flags, message.arrived)
            if move:
                del box.messages[uid]
                box.bump()
        return backend.Copied(target.uidvalidity, placed)

    def append(self, mailbox: str, message: bytes, flags: Sequence[str] = ()) -> backend.Appended:
        box = self._box(mailbox, "APPEND")
        uid = self._add(box, message, flags, datetime.now(UTC))
        return backend.Appended(box.uidvalidity, uid)

    def expunge(self, mailbox: str, uids: Sequence[int]) -> None:
        box = self._box(mailbox, "SELECT")
        for uid in uids:
            if box.messages.pop(uid, None) is not None:
                box.bump()

    def check_expunge(self) -> None:
        if not self.exact_expunge:
            raise ExtensionMissing("UIDPLUS", "remove exactly these messages for good (UID EXPUNGE)")

    def landing(self, destination: str) -> tuple[backend.Landing, str] | None:
        box = self._boxes.get(destination)
        landing = self.lands_as.get(box.role or "") if box is not None else None
        return (landing, box.name) if box is not None and landing is not None else None

    def append_limit(self) -> int | None:
        return self.limit

    def mark_once(self, ref: MessageRef, keyword: str) -> backend.MarkedOnce:
        message = self._verified(ref).messages.get(ref.uid)
        if not self.exclusive:
            return "unsupported"
        if message is None:
            raise MessageGone(ref)
        if keyword.lower() in {flag.lower() for flag in message.flags}:
            return "held"
        self.store(ref.mailbox, [ref.uid], "add", [keyword])
        return "set"

    def unmark(self, ref: MessageRef, keyword: str) -> None:
        self._verified(ref)
        self.store(ref.mailbox, [ref.uid], "remove", [keyword])

    # -- watching ---------------------------------------------------------------------------------------

    def changed_since(self, mailbox: str, modseq: int) -> backend.Changed:
        box = self._box(mailbox, "EXAMINE")
        changed = {uid: _flags(m) for uid, m in box.messages.items() if m.modseq > modseq}
        return backend.Changed(changed, box.highestmodseq)

    # -- search pages (tests/support/mail/memory_pages.py) ----------------------------------------------

    def pages(self, work: Callable[[PageReads], T]) -> T:
        return work(MemoryPageReads(self))

    # -- the store --------------------------------------------------------------------------------------

    def kept(self, mailbox: str) -> StoredMailbox:
        """Mailbox ``mailbox`` as kept (not the drafts family's :meth:`stored`, of one message);
        :class:`MailboxMissing` where there is none."""
        return self._box(mailbox, "EXAMINE")

    def _box(self, mailbox: str, command: str) -> StoredMailbox:
        box = self._boxes.get(mailbox)
        if box is None:
            raise MailboxMissing(mailbox, command, "Mailbox doesn't exist")
        return box

    def _verified(self, ref: MessageRef) -> StoredMailbox:
        """The mailbox of ``ref`` selected as a write selects it: the same UIDVALIDITY, or refused."""
        box = self._box(ref.mailbox, "SELECT")
        still_names(ref, box.uidvalidity)
        return box

    @staticmethod
    def _add(box: StoredMailbox, raw: bytes, flags: Iterable[str], arrived: datetime) -> int:
        uid, box.uidnext = box.uidnext, box.uidnext + 1
        box.messages[uid] = StoredMessage(uid, raw, box.spelt(flags), box.bump(), arrived)
        return uid


_SYSTEM = {flag.lower(): flag for flag in ("\\Seen", "\\Answered", "\\Flagged", "\\Deleted", "\\Draft")}


def _part(message: StoredMessage | None, part_id: str, sink: BinaryIO, window: PartWindow) -> PartRead:
    """The window of part ``part_id`` of the whole message at once, as a server's chunks would give it."""
    if message is None:
        raise PartGone()
    leaves = mime.message_leaves(message.raw)
    part = locate([leaf for leaf, _ in leaves], part_id)
    payload = next(data for leaf, data in leaves if leaf.section == part_id)
    decoder = StreamDecoder(part.encoding)
    decoded = decoder.feed(payload) + decoder.finish()
    max_bytes = window.max_bytes
    if window.accept is not None:
        max_bytes = min(max_bytes, window.accept(part, decoded[:HEAD_BYTES]) or max_bytes)
    writer = WindowWriter(sink, window.skip_bytes, max_bytes)
    full = writer.write(decoded)
    return writer.result(part, complete=not full, fetched=len(payload), fetches=1)


def _flags(message: StoredMessage) -> backend.MessageFlags:
    return backend.MessageFlags(message.uid, frozenset(message.flags), message.modseq)


def _matches(node: query.Query, message: StoredMessage) -> bool:  # one answer per node
    match node:
        case query.AllOf(parts):
            return all(_matches(part, message) for part in parts)
        case query.AnyOf(parts):
            return any(_matches(part, message) for part in parts)
        case query.Not(part):
            return not _matches(part, message)
        case query.NeedsReply():
            return _matches(node.expanded(), message)
        case query.HasFlag(flag, present):
            return (f"\\{flag}".lower() in {f.lower() for f in message.flags}) == present
        case query.HasKeyword(keyword, present):
            return (keyword.lower() in {f.lower() for f in message.flags}) == present
        case query.DateBound(bound, day):
            arrived: date = message.arrived.date()
            return arrived >= day if bound == "since" else arrived < day
        case query.SizeBound(bound, octets):
            return len(message.raw) > octets if bound == "larger" else len(message.raw) < octets
        case query.Header(name, value):
            values = message.parsed().get_all(name) or []
            return any(value.lower() in str(found).lower() for found in values)
        case query.Contains(field_name, value):
            return value.lower() in _text_of(message, field_name).lower()
    raise AssertionError(f"not searchable in memory: {node!r}")


def _text_of(message: StoredMessage, field_name: str) -> str:
    parsed = message.parsed()
    if field_name in _FIELDS:
        return " ".join(str(value) for name in _FIELDS[field_name] for value in parsed.get_all(name) or [])
    body = parsed.get_body(preferencelist=("plain", "html"))
    text = body.get_content() if body is not None else ""
    if field_name == "body":
        return str(text)
    return "\n".join(f"{name}: {value}" for name, value in parsed.items()) + "\n" + str(text)


class MemoryCall:
    """What a service uses of its call (``call.Call``) for mail kept in memory: whose call it is, the
    settings (each account's, ``[server]``'s) and each account's :class:`MemoryMail`, how many times
    the mail was reached, no local index, and the mailbox lists a search's first pages kept."""

    def __init__(
        self,
        accounts: dict[str, MemoryMail],
        settings: dict[str, dict[str, object]] | None = None,
        server: dict[str, object] | None = None,
        caller: Caller | None = None,
    ) -> None:
        self.accounts = accounts
        given = settings or {}
        self.config = Config.model_validate(
            {
                "accounts": {name: {**_SETTINGS, **given.get(name, {})} for name in accounts},
                "server": server or {},
            }
        )
        self.caller = caller or Caller()
        self.reached = 0
        self.mailbox_lists: dict[tuple[str, str], tuple[str, ...]] = {}

    def mail(self, account_id: str) -> MemoryMail:
        self.reached += 1
        return self.accounts[account_id]

    def resolve_account(self, account_id: str) -> str:
        return account_id

    def index_of(self, account_id: str, *, start: bool = True) -> None:
        return None

    def mailbox_list(self, account_id: str, digest: str) -> tuple[str, ...] | None:
        return self.mailbox_lists.get((account_id, digest))

    def remember_mailbox_list(self, account_id: str, digest: str, names: Sequence[str]) -> None:
        self.mailbox_lists[account_id, digest] = tuple(names)


_SETTINGS = {"host": "imap.example.org", "username": "me", "password": "pw"}
