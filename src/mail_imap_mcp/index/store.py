"""What the local index keeps, as plain records, and the small interface every store implements.

A store holds, per account, the indexed folders (:class:`FolderState`: where their sync stands) and one
row per message (:class:`IndexedMessage`: its place, the facts a query filters on and the text it ranks
on). It answers a query tree (:mod:`mail_imap_mcp.query.tree`) with ranked :class:`Hit` rows: each
engine compiles the tree itself (:mod:`.engine`), so nothing of an engine's query language or SQL
crosses this interface. SQLite FTS5 backs it by default (:mod:`.engines.sqlite.store`, its compiler
:mod:`.engines.sqlite.query`); PostgreSQL for a team (:mod:`.engines.postgresql.store`) implements the same
:class:`IndexStore`.

Messages are keyed by (folder, UID) under the folder's UIDVALIDITY. Where the server has an id of its own
for a message in every folder that shows it (Gmail's X-GM-MSGID, :meth:`Personality.identity_of
<mail_imap_mcp.imap.personality.Personality.identity_of>`), it is the message's ``global_id`` too: a
message stored again under another folder replaces its row, so it is never indexed twice. Its labels
(Gmail's X-GM-LABELS) are stored with it and answer ``label:`` and a label folder's search.
"""

from __future__ import annotations

import json
import stat
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple, NotRequired, Protocol, TypedDict, Unpack

from mail_imap_mcp.query.tree import Query

#: The text columns of a message, in the order the store keeps them (and FTS5 weighs them).
TEXT_COLUMNS = (
    "subject",
    "sender",
    "recipients_to",
    "recipients_cc",
    "list_id",
    "message_id",
    "body",
    "quoted",
    "attachments",
    "attachment_text",
)
#: BM25 weight of each column of :data:`TEXT_COLUMNS`: a word in the subject or sender counts most,
#: one in quoted replies and signatures least, so a thread does not drown the message that started it;
#: the text of attachments (``index_attachments``) below the body.
COLUMN_WEIGHTS = (10.0, 6.0, 3.0, 2.0, 2.0, 1.0, 2.0, 0.3, 4.0, 1.0)

#: The text columns each text field of a query searches (``text``: every one).
TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "text": (),  # every column but the place
    "from": ("sender",),
    "to": ("recipients_to",),
    "cc": ("recipients_cc",),
    "subject": ("subject",),
    "body": ("body", "quoted"),
}
#: Headers the index keeps, and their columns.
HEADER_FIELDS = {"list-id": "list_id", "message-id": "message_id"}
#: Headers a message's stored doc keeps after its text columns, searched by nothing: what a hit's sender
#: warnings read besides the From (:mod:`mail_imap_mcp.index.summaries`), in this order.
KEPT_HEADERS = ("reply-to", "sender")
#: The system flags as the store's bits, by the query's name of each (``is:flagged``: ``flagged``, the
#: server's ``\\Flagged``): the one definition every engine writes and its compiler reads.
FLAG_BITS = {"seen": 1, "answered": 2, "flagged": 4, "deleted": 8, "draft": 16}


class Unsupported(ValueError):
    """The index cannot answer this test (a header it does not keep, Bcc, text without a word to
    match); the server's search can."""


def label_key(name: str) -> str:
    """A label as ``label:`` compares it: case ignored, a system label's ``\\`` dropped, spaces and
    slashes written ``-`` (as Gmail's search writes them: ``label:my-project`` is "My Project")."""
    return name.removeprefix("\\").casefold().replace(" ", "-").replace("/", "-")


#: The system flags as the store's bits (:data:`FLAG_BITS`), by their lower-case spelling and by bit as
#: servers spell them.
_BITS = {"\\" + name: bit for name, bit in FLAG_BITS.items()}
_NAMES = {bit: "\\" + name.title() for name, bit in FLAG_BITS.items()}


def flag_bits(flags: Iterable[str]) -> tuple[int, str]:
    """The system flags of ``flags`` as bits and the keywords as one space-separated string, as the
    server spells them (``\\Recent`` left out: it is no flag a query asks for)."""
    bits, keywords = 0, []
    for flag in flags:
        lowered = flag.lower()
        if lowered in _BITS:
            bits |= _BITS[lowered]
        elif not lowered.startswith("\\"):
            keywords.append(flag)
    return bits, " ".join(sorted(set(keywords)))


def pack_texts(texts: Sequence[str], kept: Sequence[str] | None = None) -> bytes:
    """A message's text columns as a store keeps them (compressed: snippets are cut from them), followed
    by its :data:`KEPT_HEADERS` (empty where absent, so a row tells that they were read; None: not read)."""
    values = list(texts) if kept is None else [*texts, *kept]
    return zlib.compress(json.dumps(values, ensure_ascii=False).encode(), 6)


def unpack_texts(doc: bytes) -> list[str]:
    """The text columns :func:`pack_texts` kept."""
    return unpack_doc(doc)[0]


def unpack_doc(doc: bytes) -> tuple[list[str], tuple[str, ...] | None]:
    """The text columns and the :data:`KEPT_HEADERS` that :func:`pack_texts` kept (None: a row written
    before they were kept, which cannot tell what they were)."""
    values: list[str] = json.loads(zlib.decompress(doc))
    kept = tuple(values[len(TEXT_COLUMNS) :])
    return values[: len(TEXT_COLUMNS)], kept if kept else None


def flag_names(bits: int) -> tuple[str, ...]:
    """The system flags of stored ``bits``, as servers spell them (``\\Seen``)."""
    return tuple(name for bit, name in _NAMES.items() if bits & bit)


#: How long a write waits for another process's transaction before it gives up (:class:`IndexBusy`),
#: unless told otherwise (:meth:`IndexStore.wait_for_writers`: a search waits its remaining budget).
WRITER_WAIT_S = 30.0


class IndexPermissions(Exception):
    """The index file or its directory can be read by other users: it is not used."""

    def __init__(self, path: Path, mode: int) -> None:
        super().__init__(
            f"{path} can be read by other users (mode {stat.filemode(mode)}); the index holds the text of "
            f"mail: run `chmod go-rwx {path}` or set [server] index_dir to a private directory"
        )
        self.path = path


class IndexUnusable(Exception):
    """The file is no index of this version, or the engine cannot read it (corrupt)."""


class IndexWriteFailed(Exception):
    """The index could not be written (a full disk, a read-only file): indexing stops, searches use the
    server."""


class IndexBusy(IndexWriteFailed):
    """Another process held the index's write lock longer than this writer waits: nothing was written;
    a later write may succeed."""


@dataclass(frozen=True)
class FolderState:
    """Where one folder's sync stands: every message below ``uidnext`` has been looked at, and its flags
    are current as of ``highestmodseq`` (0: the server has no CONDSTORE). ``complete``: the first build
    of the folder has reached the UIDNEXT it saw when it started."""

    name: str
    uidvalidity: int
    uidnext: int = 1
    highestmodseq: int = 0
    messages: int = 0
    complete: bool = False


@dataclass(frozen=True)
class IndexedMessage:
    """One message as the index keeps it."""

    uid: int
    #: Sent date (Date header, else arrival) as seconds since the epoch: the order of ``sort: "date"``.
    sent: int
    #: The arrival day (INTERNALDATE, in its own zone) as ``YYYYMMDD``: what ``before``/``after`` compare.
    arrival_day: int
    size: int
    flags: tuple[str, ...]
    has_attachment: bool
    #: The text of each of :data:`TEXT_COLUMNS`, in that order.
    texts: tuple[str, ...]
    #: The attachments' file names, lower-case (what ``filename:`` matches).
    filenames: tuple[str, ...] = ()
    #: The server's own id of the message in every folder (Gmail's X-GM-MSGID), where it has one.
    global_id: int | None = None
    #: Its labels as the server names them (Gmail's X-GM-LABELS), where it has labels.
    labels: tuple[str, ...] = ()
    #: The text of its attachments was read (``index_attachments`` on when it was indexed).
    attachments_read: bool = False
    #: INTERNALDATE as seconds since the epoch: the order of ``sort: "arrival"`` across folders.
    arrival: int = 0
    #: The values of :data:`KEPT_HEADERS`, bounded as a summary reads them ("" where absent).
    kept: tuple[str, ...] = ("",) * len(KEPT_HEADERS)


@dataclass(frozen=True)
class Hit:
    """One message a query matched: its place, rank (lower is better), and what the index keeps of it
    (enough for its summary, :mod:`mail_imap_mcp.index.summaries`)."""

    folder: str
    uidvalidity: int
    uid: int
    rank: float
    sent: int
    #: The text of each of :data:`TEXT_COLUMNS`.
    texts: tuple[str, ...]
    flags: tuple[str, ...] = ()
    size: int = 0
    has_attachment: bool = False
    #: Its labels as the server names them (Gmail's X-GM-LABELS; none elsewhere).
    labels: tuple[str, ...] = ()
    #: INTERNALDATE as seconds since the epoch.
    arrival: int = 0
    #: The values of :data:`KEPT_HEADERS` its doc keeps (None: a row written before they were kept: its
    #: summary is the server's, :mod:`mail_imap_mcp.services.index_read`).
    kept: tuple[str, ...] | None = None

    @property
    def body(self) -> str:
        """What the sender wrote (the text to cut a snippet from)."""
        return self.texts[TEXT_COLUMNS.index("body")]


@dataclass
class HitPage:
    """The hits of one page and how many match in all."""

    hits: list[Hit]
    total: int
    folders: list[str] = field(default_factory=list)
    #: Ranked, but every word of the query is in more than half the messages, which BM25 weighs at
    #: nothing: the matches are listed newest first.
    unweighted: bool = False
    #: The first matches in the page's order, as (folder, UID), up to the ``keep`` asked for: what later
    #: pages list, in this order, whatever arrives meanwhile (:data:`Place`). A future: a store may hand
    #: the page over first and find them after, on the same snapshot (None: none were asked for).
    places: Future[list[Place]] | None = None
    #: How the store pages: None by kept places and offsets (above), else by key (:class:`Keyed`).
    keyed: Keyed | None = None


@dataclass(frozen=True)
class Keyed:
    """A page of a store that pages by key: the next page goes on after this page's last row, in the first
    page's order, over the rows the index held when the first page was read (no offset, no kept places)."""

    #: What the next page hands back as :attr:`PageAsk.after`: opaque to the caller, at most
    #: :data:`RESUME_BYTES` (None: no row follows).
    resume: bytes | None
    #: A later page: the matches that arrived since the first page, left out.
    newer: int = 0


#: The size a store's :attr:`Keyed.resume` keeps within (a cursor carries it).
RESUME_BYTES = 64


class StaleResume(ValueError):
    """An ``after`` this store did not make, or made for another order (a cursor of another engine):
    the search starts again."""


def done(places: list[Place]) -> Future[list[Place]]:
    """``places`` as a future already resolved (:attr:`HitPage.places` found with the page)."""
    future: Future[list[Place]] = Future()
    future.set_result(places)
    return future


class Place(NamedTuple):
    """Where a message is: its folder and UID; and, where a first page kept it, its INTERNALDATE and size
    (0: not known), which a move keeps: a later page finds it at its new place by them."""

    folder: str
    uid: int
    arrival: int = 0
    size: int = 0


#: A page's order: ``relevance`` best match first; ``date`` newest sent date first; ``arrival`` newest
#: INTERNALDATE first, then the folder's place in the searched list, then UID ascending (the server's
#: order of a search of several mailboxes); ``uid`` the highest UID first (its order of one mailbox).
Order = Literal["relevance", "date", "arrival", "uid"]


#: A page's total where it was asked ``uncounted`` and not counted (:class:`PageAsk`).
UNCOUNTED = -1


class PageAsk(TypedDict):
    """What a page asks of the store (:meth:`IndexStore.search`): its folders (in the search's order),
    order, size and offset; the first page the places of its first ``keep`` matches, a later one the
    ``places`` it lists. A store that pages by key (:class:`Keyed`) keeps no places: a later page hands
    back the previous page's :attr:`Keyed.resume` as ``after``."""

    folders: Sequence[str]
    order: Order
    limit: int
    offset: int
    keep: NotRequired[int]
    places: NotRequired[Sequence[Place] | None]
    after: NotRequired[bytes | None]
    #: The caller reads no total (``about``'s words): a store may answer :data:`UNCOUNTED` where counting
    #: would cost more than the page (a ranked OR of words each in most messages, on SQLite).
    uncounted: NotRequired[bool]
    #: The caller asks only whether at most ``limit`` messages match, and which (the rare-word rule of
    #: ``about``): a store may answer any ``limit + 1`` of them unsorted and their number as the total
    #: (above ``limit``: "more"), neither counting nor sorting every match; one that ignores it is right.
    bounded: NotRequired[bool]


class PendingPage(Protocol):
    """A search under way (:meth:`IndexStore.start_search`)."""

    def result(self) -> HitPage:
        """The page, once ready."""
        ...

    def cancel(self) -> None:
        """Not needed after all."""
        ...


class IndexStore(Protocol):
    """One account's index."""

    def folders(self) -> dict[str, FolderState]:
        """Every indexed folder's state, by name."""
        ...

    def start_folder(self, name: str, uidvalidity: int) -> FolderState:
        """The folder's state; a folder new to the index, or one whose UIDVALIDITY changed (its rows are
        dropped: it is indexed again), starts empty."""
        ...

    def put(self, state: FolderState, messages: Sequence[IndexedMessage]) -> None:
        """Add or replace ``messages`` and record ``state``, in one transaction."""
        ...

    def update(
        self,
        state: FolderState,
        *,
        flags: dict[int, tuple[str, ...]],
        removed: Iterable[int],
        labels: dict[int, tuple[str, ...]] | None = None,
    ) -> None:
        """Set the flags (and labels) of messages, remove others, and record ``state``, in one
        transaction."""
        ...

    def uids(self, folder: str) -> list[int]:
        """The UIDs the index holds for ``folder``, ascending."""
        ...

    def unread_attachments(self, folder: str) -> list[int]:
        """The UIDs of ``folder``'s messages with attachments indexed without their text (indexed while
        ``index_attachments`` was off), newest first."""
        ...

    def flags_of(self, folder: str) -> dict[int, tuple[int, str]]:
        """The flags (as :func:`flag_bits`) the index holds for ``folder``'s messages, by UID."""
        ...

    def drop_folder(self, name: str) -> None:
        """Forget a folder and its messages (deleted or renamed on the server)."""
        ...

    def count(self) -> int:
        """The messages indexed, in every folder."""
        ...

    def search(self, query: Query, **ask: Unpack[PageAsk]) -> HitPage:
        """The page of messages of ``folders`` that the query tree ``query`` matches (compiled by the
        engine; :class:`Unsupported` where it cannot answer it), best (or newest) first: ranked,
        every match is ranked; with it the places of the first ``keep`` matches. ``places``: the page
        is those of them that still match, in that order (a later page of a search whose first page
        kept them), ``order`` and ``offset`` aside. A store that pages by key says so
        (:attr:`HitPage.keyed`), keeps no places, and goes on from ``after`` (:class:`StaleResume`
        when it did not make it)."""
        ...

    def start_search(self, query: Query, **ask: Unpack[PageAsk]) -> PendingPage:
        """:meth:`search` begun in the background, to be taken (or dropped) later."""
        ...

    def wait_for_writers(self, seconds: float) -> None:
        """Wait at most ``seconds`` for another process's write before a write gives up
        (:class:`IndexBusy`)."""
        ...

    def close(self) -> None: ...
