"""The mail of one Gmail account as the emulation (tests/support/servers/gmail_server.py) keeps it.

Gmail stores a message once, with labels; IMAP folders are views of them (Google's "IMAP Extensions"
page of the Gmail developer documentation): ``INBOX`` is the label ``\\Inbox``, each user label is a
folder of its name, ``[Gmail]/All Mail`` holds every message neither in Spam nor in Trash,
``[Gmail]/Starred`` every one with ``\\Flagged``, and Spam and Trash hold what they hold. A message has
one ``X-GM-MSGID`` and one ``X-GM-THRID`` wherever it is seen, and a UID of its own in each folder,
given when it enters the folder. Removing a message from a label folder removes the label; moving it
to Trash removes every label.
"""

from __future__ import annotations

import datetime as dt
import email.errors
import email.header
import email.utils
import itertools
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from imapclient import imap_utf7

from tests.support.servers import gmail_mime

#: The system folders' parent and names by the account's language (``GMAIL_EMULATION_LOCALE``): English,
#: or as Gmail names them for a German account, under ``[Google Mail]`` (a client must know them by their
#: special-use attributes, not their names).
LOCALES = {
    "en": ("[Gmail]", ("All Mail", "Drafts", "Important", "Sent Mail", "Spam", "Starred", "Trash")),
    "de": (
        "[Google Mail]",
        ("Alle Nachrichten", "Entwürfe", "Wichtig", "Gesendet", "Spam", "Markiert", "Papierkorb"),
    ),
}
PARENT, _LOCAL_NAMES = LOCALES[os.environ.get("GMAIL_EMULATION_LOCALE", "en")]
INBOX = "INBOX"
#: As IMAP names them (modified UTF-7, as the emulation keeps every folder name).
ALL, DRAFTS, IMPORTANT, SENT, SPAM, STARRED, TRASH = (
    f"{PARENT}/{imap_utf7.encode(name).decode('ascii')}" for name in _LOCAL_NAMES
)
#: The system folders, their special-use attribute (RFC 6154) and the label that puts a message there.
SYSTEM = {
    INBOX: ("", "\\Inbox"),
    ALL: ("\\All", ""),
    DRAFTS: ("\\Drafts", "\\Draft"),
    IMPORTANT: ("\\Important", "\\Important"),
    SENT: ("\\Sent", "\\Sent"),
    SPAM: ("\\Junk", ""),
    STARRED: ("\\Flagged", "\\Starred"),
    TRASH: ("\\Trash", ""),
}
#: Labels a user cannot create as folders of their own (X-GM-LABELS names them with a backslash).
SYSTEM_LABELS = {"\\Inbox", "\\Draft", "\\Important", "\\Sent", "\\Starred"}
#: The first X-GM-MSGID: 64-bit values as large as Gmail's, so a client that keeps them in 32 bits fails.
FIRST_MSGID = 1_780_000_000_000_000_001


@dataclass
class Message:
    """A message stored once: its source, arrival, flags (``\\Deleted`` is per folder, not here) and labels."""

    msgid: int
    thrid: int
    raw: bytes
    internaldate: dt.datetime
    flags: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    trashed: bool = False
    spam: bool = False
    modseq: int = 1

    @cached_property
    def entity(self) -> gmail_mime.Entity:
        return gmail_mime.parse(self.raw)

    @cached_property
    def text(self) -> str:
        return gmail_mime.text_of(self.entity).lower()

    def header(self, name: str) -> str:
        values = self.entity.fields.get_all(name) or []
        return " ".join(_decoded(str(value)) for value in values)

    def all_labels(self) -> set[str]:
        """``X-GM-LABELS``: the labels, ``\\Starred`` where the message is flagged."""
        return self.labels | ({"\\Starred"} if "\\Flagged" in self.flags else set())

    @property
    def sent_date(self) -> dt.datetime | None:
        value = self.entity.fields.get("date")
        if value is None:
            return None
        try:
            parsed = email.utils.parsedate_to_datetime(str(value))
        except (TypeError, ValueError):
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _decoded(value: str) -> str:
    try:
        return str(email.header.make_header(email.header.decode_header(value)))
    except (LookupError, ValueError, email.errors.HeaderParseError):
        return value


@dataclass
class Folder:
    """One folder: its UIDs (each message's own here, in order of arrival) and its ``\\Deleted`` marks."""

    name: str
    uidvalidity: int
    uidnext: int = 1
    uids: dict[int, int] = field(default_factory=dict)  # uid -> msgid, in UID order
    by_msgid: dict[int, int] = field(default_factory=dict)  # msgid -> uid
    deleted: set[int] = field(default_factory=set)

    def add(self, msgid: int) -> int:
        uid = self.uidnext
        self.uidnext += 1
        self.uids[uid] = msgid
        self.by_msgid[msgid] = uid
        return uid

    def remove(self, msgid: int) -> None:
        uid = self.by_msgid.pop(msgid)
        del self.uids[uid]
        self.deleted.discard(uid)


class Account:
    """One user's mail; every method is called with ``lock`` held."""

    def __init__(self, uidvalidity: Iterator[int]) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.messages: dict[int, Message] = {}
        self.modseq = 1
        self._uidvalidity = uidvalidity
        self._msgids = itertools.count(FIRST_MSGID)
        self.folders: dict[str, Folder] = {}
        #: The fault armed by XEMULATION FAIL-LABEL-STORE: messages the next label STORE still changes.
        self.failing_label_store: int | None = None
        for name in SYSTEM:
            self.create(name)

    # ------------------------------------------------------------------ folders

    def create(self, name: str) -> Folder:
        folder = Folder(name, next(self._uidvalidity))
        self.folders[name] = folder
        return folder

    def delete(self, name: str) -> None:
        """DELETE of a label folder: the label leaves every message (the messages stay)."""
        self.folders.pop(name)
        for message in self.messages.values():
            if name in message.labels:
                message.labels.discard(name)
                self.touch(message)

    def rename(self, old: str, new: str) -> None:
        folder = self.folders.pop(old)
        folder.name = new
        self.folders[new] = folder
        for message in self.messages.values():
            if old in message.labels:
                message.labels.discard(old)
                message.labels.add(new)
                self.touch(message)

    def label_of(self, folder: str) -> str | None:
        """The label that puts a message in ``folder`` (None: All Mail, Spam and Trash)."""
        if folder in SYSTEM:
            return SYSTEM[folder][1] or None
        return folder

    def holds(self, folder: str, message: Message) -> bool:
        """Whether ``folder`` shows ``message``."""
        if folder == TRASH:
            return message.trashed
        if folder == SPAM:
            return message.spam and not message.trashed
        if message.trashed or message.spam:
            return False
        label = self.label_of(folder)
        return label is None or label in message.all_labels()

    # ------------------------------------------------------------------ messages

    def touch(self, message: Message) -> None:
        """After a change of ``message``: a new modseq, and its place in every folder."""
        self.modseq += 1
        message.modseq = self.modseq
        for folder in self.folders.values():
            inside = message.msgid in folder.by_msgid
            if self.holds(folder.name, message) and not inside:
                folder.add(message.msgid)
            elif inside and not self.holds(folder.name, message):
                folder.remove(message.msgid)
        self.changed.notify_all()

    def append(self, folder: str, raw: bytes, flags: set[str], when: dt.datetime | None) -> Message:
        """A new message stored in ``folder`` (APPEND): the folder's label, or Trash, or Spam."""
        raw = re.sub(rb"\r?\n", b"\r\n", raw)
        msgid = next(self._msgids)
        message = Message(
            msgid, msgid, raw, when or dt.datetime.now(dt.UTC), flags - {"\\Deleted", "\\Recent"}
        )
        message.thrid = self._thread_of(message)
        if folder == TRASH:
            message.trashed = True
        elif folder == SPAM:
            message.spam = True
        elif folder == STARRED:
            message.flags.add("\\Flagged")
        elif (label := self.label_of(folder)) is not None:
            message.labels.add(label)
        if folder == DRAFTS:
            message.flags.add("\\Draft")
        self.messages[msgid] = message
        self.touch(message)
        return message

    def _thread_of(self, message: Message) -> int:
        """The X-GM-THRID of a new message: that of a message it answers, else its own X-GM-MSGID."""
        refs = re.findall(r"<[^>]+>", message.header("in-reply-to") + " " + message.header("references"))
        known = {m.header("message-id").strip(): m for m in self.messages.values()}
        for ref in reversed(refs):
            if ref in known:
                return known[ref].thrid
        return message.msgid

    def set_labels(self, message: Message, labels: set[str]) -> None:
        """``STORE X-GM-LABELS``: ``\\Starred`` is the ``\\Flagged`` flag; a new user label becomes a folder."""
        starred = "\\Starred" in labels
        message.flags = (message.flags - {"\\Flagged"}) | ({"\\Flagged"} if starred else set())
        message.labels = labels - {"\\Starred"}
        for label in message.labels - SYSTEM_LABELS:
            if label not in self.folders:
                self.create(label)
        self.touch(message)

    def copy_into(self, message: Message, target: str) -> None:
        """COPY to ``target``: Gmail adds the target's label (Trash: the message is deleted, every label
        removed; Spam: reported as spam; All Mail: nothing)."""
        if target == TRASH:
            message.trashed, message.labels = True, set()
            message.flags.discard("\\Flagged")
        elif target == SPAM:
            message.spam = True
        else:
            message.trashed = message.spam = False
            if target == STARRED:
                message.flags.add("\\Flagged")
            elif (label := self.label_of(target)) is not None:
                message.labels.add(label)
        self.touch(message)

    def take_out(self, message: Message, source: str) -> None:
        """What MOVE or EXPUNGE from ``source`` does to a message: a label folder loses its label, All Mail
        sends it to Trash, Trash and Spam delete it for good."""
        if source in (TRASH, SPAM):
            self.messages.pop(message.msgid)
            message.trashed, message.spam, message.labels = True, False, set()
            for folder in self.folders.values():
                if message.msgid in folder.by_msgid:
                    folder.remove(message.msgid)
            self.modseq += 1
            self.changed.notify_all()
            return
        if source == ALL:
            self.copy_into(message, TRASH)
            return
        if source == STARRED:
            message.flags.discard("\\Flagged")
        elif (label := self.label_of(source)) is not None:
            message.labels.discard(label)
        self.touch(message)


# ---------------------------------------------------------------------- X-GM-RAW


_RAW_TOKEN = re.compile(r'\s*(\(|\)|\{|\}|-?[A-Za-z_]+:"[^"]*"|-?"[^"]*"|-?[^\s(){}"]+)')
_AGE = re.compile(r"(\d+)([dmy])")


def raw_matcher(query: str, account: Account, now: dt.datetime) -> Callable[[Message], bool]:
    """A test of Gmail's search syntax (``X-GM-RAW``) for the operators the emulation knows: words and
    "phrases", ``from: to: cc: subject: label: in: is: has:attachment filename: older_than:
    newer_than: after: before: larger: smaller: rfc822msgid: category:`` (from an ``X-Gmail-Category``
    test header: Gmail's classifier is not emulated), ``-`` (not: of a term, a phrase or a group), ``OR``,
    ``( )`` and ``{ }`` (any of); anything else raises ``ValueError`` (Gmail answers BAD).

    As Gmail's help page "Search operators you can use with Gmail" (support.google.com/mail/answer/7190)
    documents them: ``-`` removes the messages that match what follows it (``dinner -movie``), ``( )``
    groups terms, so ``-(a OR b)`` removes those with either; ``filename:`` finds an attachment "with a
    certain name or file type" (``filename:pdf``, ``filename:homework.txt``): Gmail matches whole words,
    so ``pdf`` finds ``report.PDF`` and ``homework.txt`` that name, and ``home`` does not find it."""
    tokens = list(_RAW_TOKEN.findall(query))
    position = 0

    def sequence(closing: str | None) -> tuple[Callable[[Message], bool], str]:
        nonlocal position
        groups: list[list[Callable[[Message], bool]]] = [[]]
        while position < len(tokens):
            token = tokens[position]
            position += 1
            if token == closing:
                return _combine(groups, any_of=closing == "}"), token
            if token in (")", "}"):
                raise ValueError(f"unbalanced {token!r}")
            if token == "OR":
                groups.append([])
                continue
            negate = token.startswith("-") and len(token) > 1
            token = token[1:] if negate else token
            if token == "-" and position < len(tokens) and tokens[position] in ("(", "{"):
                negate, token = True, tokens[position]  # -(a OR b): not the group
                position += 1
            if token in ("(", "{"):
                test, _ = sequence(")" if token == "(" else "}")
            else:
                test = _term(token, account, now)
            groups[-1].append((lambda t: lambda m: not t(m))(test) if negate else test)
        if closing is not None:
            raise ValueError(f"missing {closing!r}")
        return _combine(groups, any_of=False), ""

    test, _ = sequence(None)
    return test


def _combine(groups: list[list[Callable[[Message], bool]]], *, any_of: bool) -> Callable[[Message], bool]:
    if any_of:  # { a b }: any of its terms
        flat = [t for group in groups for t in group]
        return lambda m: any(t(m) for t in flat)
    alternatives = [group for group in groups if group]
    return lambda m: any(all(t(m) for t in group) for group in alternatives) if alternatives else True


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _contains(haystack: str, needle: str) -> bool:
    words = _words(needle)
    if not words:
        return True
    return re.search(r"\b" + r"\W+".join(map(re.escape, words)) + r"\b", haystack.lower()) is not None


def _folder_of_in(value: str, account: Account) -> str | None:
    names = {
        "inbox": INBOX,
        "sent": SENT,
        "drafts": DRAFTS,
        "draft": DRAFTS,
        "spam": SPAM,
        "trash": TRASH,
        "starred": STARRED,
        "important": IMPORTANT,
        "all": ALL,
        "anywhere": None,
    }
    if value.lower() in names:
        return names[value.lower()]
    return _label_folder(value, account)


def _label_folder(value: str, account: Account) -> str:
    """Gmail's spelling of a label in search (case-insensitive; ``-`` or ``/`` for ``/``, ``-`` for a space;
    a label's own name, where IMAP writes its folder in modified UTF-7: ``label:Café``, ``Caf&AOk-``)."""

    def spelled(name: str) -> str:
        return name.casefold().replace("/", "-").replace(" ", "-")

    wanted = spelled(value)
    for name in account.folders:
        if spelled(imap_utf7.decode(name.encode("utf-8"))) == wanted:
            return name
    return "\x00no such label"


def _age(value: str) -> dt.timedelta:
    found = _AGE.fullmatch(value.lower())
    if not found:
        raise ValueError(f"bad age {value!r}")
    days = int(found.group(1)) * {"d": 1, "m": 30, "y": 365}[found.group(2)]
    return dt.timedelta(days=days)


def _day(value: str) -> dt.datetime:
    if value.isdigit():
        return dt.datetime.fromtimestamp(int(value), dt.UTC)
    year, month, day = (int(part) for part in re.split(r"[/-]", value))
    return dt.datetime(year, month, day, tzinfo=dt.UTC)


def _size(value: str) -> int:
    found = re.fullmatch(r"(\d+)([kmKM]?)", value)
    if not found:
        raise ValueError(f"bad size {value!r}")
    return int(found.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[found.group(2).lower()]


def _term(token: str, account: Account, now: dt.datetime) -> Callable[[Message], bool]:
    if token.startswith('"'):
        phrase = token.strip('"')
        return lambda m: _contains(m.header("subject") + "\n" + m.header("from") + "\n" + m.text, phrase)
    operator, colon, value = token.partition(":")
    if not colon:
        word = token
        return lambda m: _contains(
            " ".join([m.header(h) for h in ("subject", "from", "to", "cc")]) + "\n" + m.text, word
        )
    operator, value = operator.lower(), value.strip('"')
    if operator in ("from", "to", "cc", "bcc", "subject"):
        return lambda m: _contains(m.header(operator), value)
    if operator in ("label", "in"):
        folder = _folder_of_in(value, account) if operator == "in" else _label_folder(value, account)
        if folder is None:
            return lambda m: True
        return lambda m: account.holds(folder, m)
    if operator == "is":
        tests: dict[str, Callable[[Message], bool]] = {
            "unread": lambda m: "\\Seen" not in m.flags,
            "read": lambda m: "\\Seen" in m.flags,
            "starred": lambda m: "\\Flagged" in m.flags,
            "important": lambda m: "\\Important" in m.labels,
        }
        if value.lower() not in tests:
            raise ValueError(f"is:{value} is not known to the emulation")
        return tests[value.lower()]
    if operator == "has":
        if value.lower() != "attachment":
            raise ValueError(f"has:{value} is not known to the emulation")
        return lambda m: gmail_mime.has_attachment(m.entity)
    if operator == "filename":
        return lambda m: any(_contains(name, value) for name in gmail_mime.filenames(m.entity))
    if operator in ("older_than", "newer_than"):
        limit = now - _age(value)
        if operator == "older_than":
            return lambda m: m.internaldate < limit
        return lambda m: m.internaldate >= limit
    if operator in ("after", "before", "older", "newer"):
        day = _day(value)
        if operator in ("after", "newer"):
            return lambda m: m.internaldate >= day
        return lambda m: m.internaldate < day
    if operator in ("larger", "smaller"):
        size = _size(value)
        if operator == "larger":
            return lambda m: len(m.raw) > size
        return lambda m: len(m.raw) < size
    if operator == "category":  # Gmail's classifier is not emulated: a test header says the category
        return lambda m: (m.header("x-gmail-category").strip().lower() or "primary") == value.lower()
    if operator == "rfc822msgid":
        return lambda m: m.header("message-id").strip().strip("<>") == value.strip("<>")
    raise ValueError(f"{operator}: is not an operator the emulation knows")
