"""A page of imap_search_messages ranked by meaning: ``about`` (a description of the mail wanted) or
``like`` (a message: mail closest in meaning to it), answered by the local index alone.

``about`` ranks by its words and its meaning together: the messages any of its words match, ranked by
the engine's BM25 (its ranked search of those words), and the messages nearest its vector
(:func:`~.search_meaning_near.by_meaning`: the store's :data:`NEAREST_POOL` nearest, hubness reduced,
sought again from the vector moved towards its first), each :data:`POOL` long, fused by
:func:`~mail_imap_mcp.meaning.fusion.fuse`. ``like`` ranks by the meaning of the message alone, which it
leaves out. Every filter of the search (``query``, ``from``, dates, flags, mailboxes) bounds both
rankings. The page is the index's (:func:`~.index_search.index_page`: the index brought up to date
first, the summaries, the cursor): the fused order stands in for the store's on the first page, whose
places the later pages list (:mod:`.index_places`), so paging is exact while mail arrives. Each message
says why it is there (``words``, ``meaning`` or ``both``); where part of the index has no vectors yet,
the page says so with the count (``partial``)."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Unpack, cast

from mail_imap_mcp.app.mailbox_lists import MAILBOX_LIST_TTL_S
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.index.passages import passages
from mail_imap_mcp.index.store import (
    FolderState,
    Hit,
    HitPage,
    IndexedMessage,
    IndexStore,
    PageAsk,
    PendingPage,
    Place,
    done,
)
from mail_imap_mcp.index.sync import Indexer
from mail_imap_mcp.index.sync_vectors import vector_store
from mail_imap_mcp.index.vectors import Near, Nearness, VectorCounts, VectorStore
from mail_imap_mcp.mail.cursors import CursorMismatch, IndexCursor
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import ForeignMessageId, InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.mail.records import SearchPage
from mail_imap_mcp.meaning.errors import MEANING_PARTIAL, MeaningFilterRefused, MeaningNotReady
from mail_imap_mcp.meaning.fusion import Why, about_words, fuse
from mail_imap_mcp.meaning.model import MeaningUnavailable, TextModel, model_for
from mail_imap_mcp.query import Query
from mail_imap_mcp.query.tree import EVERYTHING, AnyOf, Contains, all_of, is_everything
from mail_imap_mcp.services.index_places import kept_places
from mail_imap_mcp.services.index_search import index_page
from mail_imap_mcp.services.search_args import SearchArgs
from mail_imap_mcp.services.search_meaning_near import NearestAsk, by_meaning
from mail_imap_mcp.services.search_meaning_rare import rare_word_holders
from mail_imap_mcp.state import StateUnavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

#: Messages each ranking brings to the fusion (by words, by meaning): the answer is at most twice this.
#: 100: a first page through MCP at 10,000 messages in 27 ms, 14 in meaning_page (the ranked words page
#: 18-31 ms; scripts/profile_mcp_page --messages 10000 --about, load 6); with 500, 160 ms (load 27); the
#: same recall at 10 on the meaning set.
POOL = 100
#: Messages nearest by cosine whose hubness is reduced before the meaning brings its first :data:`POOL`
#: to the fusion. Among 10,000 everyday messages crowds of look-alikes (tens of "your order has shipped")
#: held most of the 100 nearest, so a message hubness reduction puts first but 101st by cosine was never
#: ranked; French mail, lower by cosine, lost most. Up to 300 the nearest reads no more rows than 100's;
#: of those 200 did best on the tune half (0.84; 100: 0.79, 300: 0.83), and with 300 pgvector's walk
#: left 3 of 40 first tens apart (docs/search.md, "Why French found less than German").
NEAREST_POOL = 200


@dataclass(frozen=True)
class MeaningAsk:
    """What a search by meaning ranks by: a description (``about``) or a message id (``like``)."""

    about: str | None = None
    like: str | None = None


def _liked(app: Call, account_id: str, message_id: str) -> MessageRef:
    """The message ``like`` names, of the account searched (:class:`InvalidMessageId` naming ``like``)."""
    try:
        ref = parse_message_id(message_id, app.caller)
    except ForeignMessageId:
        raise
    except InvalidMessageId as exc:
        raise InvalidMessageId(str(exc), "like") from exc
    if ref.account_id != account_id:
        raise InvalidMessageId(
            f"it names a message of account {ref.account_id!r}, not of {account_id!r}, the account searched",
            "like",
        )
    return ref


def _text_model(config: Config) -> TextModel:
    """The model the index's vectors are made with (:class:`MeaningNotReady` where it cannot run here)."""
    try:
        return model_for(config)
    except MeaningUnavailable as exc:
        raise MeaningNotReady(str(exc)) from exc


def meaning_page(
    app: Call,
    args: SearchArgs,
    search: Query,
    filter_digest: str,
    asked: MeaningAsk,
    *,
    adds_roles: tuple[str, ...] = (),
) -> SearchPage:
    """The page of ``args`` ranked by ``asked``, among the messages ``search`` matches (``filter_digest``:
    the fingerprint of the filters, ``about`` and ``like`` among them)."""
    account_id = app.connection(args.account_id).account_id
    cursor = IndexCursor.decode(args.cursor, app.caller.user) if args.cursor else None
    if args.cursor and cursor is None:
        raise CursorMismatch()  # a cursor of a search the server answered
    like = _liked(app, account_id, asked.like) if asked.like is not None else None
    ranking = MeaningRanking(
        _text_model(app.config), asked.about, like, cursor.total if cursor is not None else 0
    )
    # The mailbox of the message ``like`` names is asked about in the search's own freshness round trip
    # and synced where it changed, searched or not: the index never ranks by a copy the server has no more.
    try:
        answer = index_page(
            app,
            args,
            search,
            filter_digest,
            order="relevance",
            adds_roles=adds_roles,
            ranked_by=ranking.ranked,
            also_fresh=() if like is None else (like.mailbox,),
        )
    except MessageGone:
        # Its mailbox not in the index (deleted, the check found): the server is asked for the message as
        # a read asks, whose error says why in a read's words (that mailbox not found, not the message).
        if like is not None and ranking.liked_mailbox_unknown:
            _still_there(app, like)
        raise
    page = answer.page
    if page is None:
        if answer.unanswerable is not None:
            raise MeaningFilterRefused(*answer.unanswerable)
        raise MeaningNotReady(answer.why_not or "the local index cannot answer this search now")
    if like is not None and like.mailbox in answer.unsure:
        _still_there(app, like)
    if cursor is None:
        whys = ranking.whys
        if page.next_cursor is not None:
            following = IndexCursor.decode(page.next_cursor, app.caller.user)
            if following is not None and following.places:
                _keep_whys(app, account_id, following.places, ranking.kept, whys)
    else:
        whys = _kept_whys(app, account_id, cursor.places)
    page.messages = [replace(m, why=whys.get((m.mailbox, m.uid))) for m in page.messages]
    if ranking.counts is not None and ranking.counts.partial:
        page.fetch_issues.append(_partial(ranking.counts))
    page.ranked = True
    return page


def _still_there(app: Call, like: MessageRef) -> None:
    """:class:`MessageGone` (or the mailbox's own error, as a read says it) where the message ``like``
    names is no longer on the server: asked of the server (EXAMINE and a FETCH of one header field) only
    where the search's freshness check left its mailbox behind, so the index's copy is not known fresh
    (a message's text never changes: there, the copy is the message)."""
    if app.mail(like.account_id).header_fields(like, ["message-id"]) is None:
        raise MessageGone(like)


def _partial(counts: VectorCounts) -> Issue:
    missing = counts.indexed - counts.with_vectors
    return Issue(
        code=MEANING_PARTIAL,
        stage="search",
        message=f"{missing:,} of the {counts.indexed:,} indexed messages have no vectors yet (the index is "
        "adding them in the background): they were ranked by their words alone. Search again later for "
        "a complete answer.",
        retryable=True,
    )


#: The letter of each reason in the state (a first page's reasons, kept for its later pages).
_WHY_LETTERS: dict[Why, str] = {"words": "w", "meaning": "m", "both": "b"}
_LETTER_WHYS = {letter: why for why, letter in _WHY_LETTERS.items()}


def _keep_whys(
    app: Call, account_id: str, key: int, kept: Sequence[tuple[str, int]], whys: Mapping[tuple[str, int], Why]
) -> None:
    """Keep why each of the first page's kept places is there, beside the places (the same key)."""
    letters = "".join(_WHY_LETTERS[whys[place]] for place in kept)
    try:
        app.store.set(
            app.caller.key("meaning_whys", account_id, str(key)), letters.encode(), MAILBOX_LIST_TTL_S
        )
    except StateUnavailable as exc:  # the later pages then say no reason
        log.warning("a search's reasons not kept in the shared state: %s", exc.detail)


def _kept_whys(app: Call, account_id: str, key: int) -> dict[tuple[str, int], Why]:
    """Why each place a first page kept under ``key`` is there (empty: not known any more)."""
    places = kept_places(app, account_id, key)
    try:
        letters = app.store.get(app.caller.key("meaning_whys", account_id, str(key)))
    except StateUnavailable as exc:
        log.warning("a search's reasons not read from the shared state: %s", exc.detail)
        return {}
    if places is None or letters is None:
        return {}
    return {
        (place.folder, place.uid): _LETTER_WHYS[letter]
        for place, letter in zip(places, letters.decode(), strict=False)
    }


@dataclass
class MeaningRanking:
    """One page's ranking by meaning, run inside the index's search (:class:`RankedStore`): what it
    found is read back by :func:`meaning_page`."""

    model: TextModel
    about: str | None
    like: MessageRef | None
    #: A later page: the first page's total (the store counts the filters' matches, not the fused ones).
    first_total: int
    #: Why each message of the fused order is there (a first page).
    whys: dict[tuple[str, int], Why] = field(default_factory=dict)
    #: The places the first page keeps, in order.
    kept: list[tuple[str, int]] = field(default_factory=list)
    #: How far the vectors are (None: not asked).
    counts: VectorCounts | None = None
    #: The message ``like`` names was not found, nor its mailbox, in the index.
    liked_mailbox_unknown: bool = False
    #: ``about``'s vector, once made (a page searched again after a sync ranks by the same).
    _vector_made: npt.NDArray[np.float32] | None = field(default=None, init=False, repr=False)
    #: ``like``'s message's texts and vector, once made.
    _liked_made: tuple[tuple[str, ...], npt.NDArray[np.float32]] | None = field(
        default=None, init=False, repr=False
    )

    def ranked(self, indexer: Indexer) -> Indexer:
        """``indexer`` whose searches are ranked by meaning (its syncs write as they did)."""
        ranked = copy.copy(indexer)
        ranked.store = RankedStore(indexer.store, self)
        return ranked

    def page(self, store: IndexStore, query: Query, ask: PageAsk) -> HitPage:
        """The fused page ``ask`` asks for among the messages ``query`` matches."""
        vectors = _vectors_of(store)
        folders = list(ask["folders"])
        everywhere = vectors.vector_counts(self.model.name)
        # Partial or not is said of the folders searched: one without vectors elsewhere is none of this
        # answer's (counted only while a pass is under way).
        self.counts = (
            everywhere if not everywhere.partial else vectors.vector_counts(self.model.name, folders)
        )
        own = None if self.like is None else (self.like.mailbox, self.like.uid)
        vector = self._vector(store)
        words = self._start_by_words(store, query, folders)  # on a read connection of its own meanwhile
        pending = words
        try:
            among = None if is_everything(query) else query
            ask_near = NearestAsk(vectors, among, folders, NEAREST_POOL, own)
            with ask_near.opened() as near:
                found_by_meaning = by_meaning(ask_near, vector, fed_back=self.like is None, near=near)[:POOL]
                pending = None
                found = words.result() if words is not None else None
                by_words = [] if found is None or found.unweighted else found.hits
                rare = set()
                if found is not None and by_words:
                    rare = rare_word_holders(store, query, folders, about_words(self.about or ""), found)
                return self._fused(near, by_words, found_by_meaning, folders, ask, rare)
        except BaseException:
            if pending is not None:
                pending.cancel()
            raise

    def _fused(
        self,
        near: Nearness,
        by_words: list[Hit],
        meaning: list[Near],
        folders: list[str],
        ask: PageAsk,
        rare: set[tuple[str, int]],
    ) -> HitPage:
        """The page ``ask`` asks for of both rankings fused (``rare``: the messages holding a word few
        messages hold); the texts of the messages found by meaning alone read for the page's hits only
        (``near``'s snapshot)."""
        meant = {(one.folder, one.uid): one for one in meaning}
        worded = {(hit.folder, hit.uid): hit for hit in by_words}
        fused = fuse(
            [(h.folder, h.uid) for h in by_words], [(one.folder, one.uid) for one in meaning], rare=rare
        )
        self.whys = {one.key: one.why for one in fused}
        keep = ask.get("keep", 0)
        self.kept = [one.key for one in fused[:keep]]
        offset, limit = ask["offset"], ask["limit"]
        shown = fused[offset : offset + limit]
        alone = [meant[one.key] for one in shown if one.key not in worded]
        read = {(hit.folder, hit.uid): hit for hit in near.hits(alone)}
        hits = [
            replace(worded[one.key] if one.key in worded else read[one.key], rank=-one.score) for one in shown
        ]
        places = None
        if keep:
            found = [worded[one.key] if one.key in worded else meant[one.key] for one in fused[:keep]]
            places = done([Place(one.folder, one.uid, one.arrival, one.size) for one in found])
        return HitPage(hits, len(fused), folders, places=places)

    def _start_by_words(self, store: IndexStore, query: Query, folders: list[str]) -> PendingPage | None:
        """The search of the messages any word of ``about`` matches, best first by BM25, begun (None for
        ``like``, or a description without a word to search); a ranking by the words of more than half
        the messages (``unweighted``) ranks nothing."""
        words = about_words(self.about or "")
        if not words:
            return None
        any_word = AnyOf(tuple(Contains("text", word) for word in words))
        return store.start_search(
            all_of(query, any_word), folders=folders, order="relevance", limit=POOL, offset=0, uncounted=True
        )

    def _vector(self, store: IndexStore) -> npt.NDArray[np.float32]:
        """The vector to rank by: ``about``'s, or that of the message ``like`` names (its passages' mean),
        read from the store each time: a page searched again after a sync finds it gone (MessageGone)."""
        if self.like is not None:
            return self._liked_vector(store, self.like)
        if self._vector_made is None:
            self._vector_made = self.model.embed([self.about or ""])[0]
        return self._vector_made

    def _liked_vector(self, store: IndexStore, like: MessageRef) -> npt.NDArray[np.float32]:
        """The vector of the message ``like`` names as the store has it now, embedded once a page: a
        message's text never changes, a page searched again after a sync reads it only to see it there."""
        at = [Place(like.mailbox, like.uid)]
        found = store.search(
            EVERYTHING, folders=[like.mailbox], order="relevance", limit=1, offset=0, places=at
        ).hits
        if not found or found[0].uidvalidity != like.uidvalidity:
            self.liked_mailbox_unknown = like.mailbox not in store.folders()
            raise MessageGone(like)
        texts = found[0].texts
        if self._liked_made is None or self._liked_made[0] != texts:
            # The passages its vectors were made of, embedded again: its stored vectors, before quantisation.
            self._liked_made = (texts, _mean(self.model.embed(passages(texts))))
        return self._liked_made[1]


def _mean(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The unit mean of ``rows`` (a message's passages: one vector for all of it)."""
    import numpy as np

    mean = rows.mean(axis=0) if len(rows) else np.zeros(rows.shape[1], dtype=np.float32)
    length = float(np.linalg.norm(mean))
    return cast("npt.NDArray[np.float32]", (mean / length if length else mean).astype(np.float32))


def _vectors_of(store: IndexStore) -> VectorStore:
    """``store`` as the vector store it is (:class:`MeaningNotReady` where its engine keeps none)."""
    vectors = vector_store(store)
    if vectors is None:
        raise MeaningNotReady("this index engine keeps no vectors")
    return vectors


#: The threads that make fused pages: a first page is made while its search asks the server what changed
#: (the index's freshness round trip), as a ranked page of words is.
_PAGES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="meaning-page")


class _Pending:
    """A fused page being made in a thread of :data:`_PAGES`."""

    def __init__(self, page: Future[HitPage]) -> None:
        self._page = page

    def result(self) -> HitPage:
        return self._page.result()

    def cancel(self) -> None:
        """Not made, or made to its end: the ranking it writes is then the next search's alone."""
        if not self._page.cancel():
            wait([self._page])


class RankedStore:
    """An index store whose searches are ranked by meaning (a first page) or list the places the first
    page kept (a later one); everything else is the store's."""

    def __init__(self, store: IndexStore, ranking: MeaningRanking) -> None:
        self._store = store
        self._ranking = ranking

    def search(self, query: Query, **ask: Unpack[PageAsk]) -> HitPage:
        if ask.get("places") is None:
            return self._ranking.page(self._store, query, ask)
        page = self._store.search(query, **ask)
        page.total = self._ranking.first_total or page.total
        return page

    def start_search(self, query: Query, **ask: Unpack[PageAsk]) -> PendingPage:
        return _Pending(_PAGES.submit(lambda: self.search(query, **ask)))

    def folders(self) -> dict[str, FolderState]:
        return self._store.folders()

    def start_folder(self, name: str, uidvalidity: int) -> FolderState:
        return self._store.start_folder(name, uidvalidity)

    def put(self, state: FolderState, messages: Sequence[IndexedMessage]) -> None:
        self._store.put(state, messages)

    def update(self, state: FolderState, **changes: Any) -> None:
        self._store.update(state, **changes)

    def uids(self, folder: str) -> list[int]:
        return self._store.uids(folder)

    def unread_attachments(self, folder: str) -> list[int]:
        return self._store.unread_attachments(folder)

    def flags_of(self, folder: str) -> dict[int, tuple[int, str]]:
        return self._store.flags_of(folder)

    def drop_folder(self, name: str) -> None:
        self._store.drop_folder(name)

    def count(self) -> int:
        return self._store.count()

    def wait_for_writers(self, seconds: float) -> None:
        self._store.wait_for_writers(seconds)

    def close(self) -> None:
        """Nothing: the store is the index runtime's, which closes it."""
