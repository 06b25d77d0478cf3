"""The ranking of a search by meaning on a real SQLite store of the index, its vectors kept beside it by a
small vector store of this test and made by a model of a few topics: words and meaning fused, every filter
bounding both, why each message is there, the first page's places listed exactly by the later pages while
mail arrives, ``like`` without the message itself, and the count of messages without vectors."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mail_imap_mcp.index.densities import DensityKeeper
from mail_imap_mcp.index.engines.sqlite.location import open_index
from mail_imap_mcp.index.store import TEXT_COLUMNS, Hit, IndexedMessage, IndexStore, PageAsk
from mail_imap_mcp.index.vectors import VectorCounts
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.query import EVERYTHING, Contains, HasFlag, Query
from mail_imap_mcp.services.search_meaning import NEAREST_POOL, POOL, MeaningRanking, RankedStore
from tests.support.densities import DensitiesInMemory
from tests.support.patience import patient

#: Words of each topic of the model of this test: a text's vector counts its words of each.
TOPICS = (
    ("heating", "radiator", "boiler", "warm", "cold", "heizung"),
    ("invoice", "bill", "amount", "due", "payment", "paid"),
    ("website", "homepage", "landing", "pages", "site"),
    ("redesign", "overhaul", "revamp", "new"),
    ("flight", "trip", "booked", "lisbon", "hotel"),
)


class TopicModel:
    """Texts as unit vectors of the topics their words belong to (a text of none: a row of zeros)."""

    name = "topics-5"
    dimensions = len(TOPICS)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.casefold()):
                for topic, words in enumerate(TOPICS):
                    rows[row, topic] += word in words
        lengths = np.linalg.norm(rows, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(rows, lengths, out=rows, where=lengths > 0)
        return unit

    def rest(self) -> None:
        """Nothing is kept between calls."""


class VectorsBeside(DensitiesInMemory):
    """The SQLite store with each message's vector kept beside it in memory: the vector store contract
    (``index/vectors.py``) over the store's own filters, the densities' half in memory too."""

    def __init__(self, store: IndexStore, model: TopicModel) -> None:
        super().__init__()
        self.store = store
        self.model = model
        self.vectors: dict[tuple[str, int], npt.NDArray[np.float32]] = {}

    def densities_found(self) -> None:
        """What the pass behind the words does once the vectors are made: every message's density."""
        DensityKeeper(self, self.model.name).fill(lambda: False, lambda: None)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def put_texts(self, folder: str, messages: list[IndexedMessage], *, vectors: bool = True) -> None:
        state = self.store.folders().get(folder) or self.store.start_folder(folder, 7)
        self.store.put(state, messages)
        for message in messages:
            if vectors:
                text = " ".join(message.texts[TEXT_COLUMNS.index(name)] for name in ("subject", "body"))
                self.vectors[(folder, message.uid)] = self.model.embed([text])[0]

    def vector_counts(self, model: str, folders: Sequence[str] | None = None) -> VectorCounts:
        held = self.store.folders()
        names = set(held if folders is None else folders) & held.keys()
        counted = sum(folder in names for folder, _ in self.vectors)
        return VectorCounts(counted, sum(held[name].messages for name in names))

    def vectors_of(self, places: Sequence[tuple[str, int]]) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        return {place: self.vectors[place][None, :] for place in places if place in self.vectors}

    def vector_sample(self, limit: int) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        return self.vectors_of(list(self.vectors)[:limit])

    def nearest(
        self, vector: npt.NDArray[np.float32], query: Query | None, folders: Sequence[str], limit: int
    ) -> list[Hit]:
        ask = PageAsk(folders=list(folders), order="arrival", limit=10_000, offset=0)
        matching = self.store.search(query or EVERYTHING, **ask).hits
        scored = [
            replace(hit, rank=1 - float(self.vectors[(hit.folder, hit.uid)] @ vector))
            for hit in matching
            if (hit.folder, hit.uid) in self.vectors
        ]
        return sorted(scored, key=lambda hit: hit.rank)[:limit]


def message(uid: int, subject: str, body: str, flags: tuple[str, ...] = ()) -> IndexedMessage:
    values = {"subject": subject, "body": body}
    texts = tuple(values.get(column, "") for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_700_000_000 + uid, 20260101, 1000 + uid, flags, False, texts, arrival=uid)


MAIL = [
    message(1, "Invoice 4411 - homepage overhaul", "Amount due for the new landing pages."),
    message(2, "Radiator in the flat", "The boiler is broken: no heating until Monday."),
    message(3, "Our website", "Newsletter of the website club.", flags=("\\Seen",)),
    message(4, "Flight to Lisbon", "Your trip is booked."),
    message(5, "Website redesign quote", "The bill for the website work is attached."),
    message(6, "Lunch on Friday", "Shall we meet at noon?"),
]


@pytest.fixture
def vectors(tmp_path: Path) -> VectorsBeside:
    beside = VectorsBeside(open_index(tmp_path / "index" / "a.sqlite3").store, TopicModel())
    beside.put_texts("INBOX", MAIL)
    return beside


def first_page(
    ranking: MeaningRanking,
    store: VectorsBeside,
    query: Query = EVERYTHING,
    *,
    limit: int = 10,
    keep: int = 0,
) -> tuple[list[int], int, list[Any]]:
    ask = PageAsk(folders=["INBOX"], order="relevance", limit=limit, offset=0, keep=keep)
    store.densities_found()
    page = RankedStore(store, ranking).search(query, **ask)
    places = page.places.result() if page.places is not None else []
    return [hit.uid for hit in page.hits], page.total, places


def about(text: str) -> MeaningRanking:
    return MeaningRanking(TopicModel(), text, None, 0)


def test_about_ranks_words_and_meaning_together_and_says_why(vectors: VectorsBeside) -> None:
    ranking = about("the bill for the website redesign")
    uids, total, _ = first_page(ranking, vectors)
    # Found by both first; the invoice that shares no word with the description, by its meaning; the
    # website club by its word (and a little meaning); lunch and the flight by neither.
    assert uids[0] == 5 and set(uids) == {1, 3, 5} and total == 3
    assert ranking.whys == {("INBOX", 5): "both", ("INBOX", 1): "meaning", ("INBOX", 3): "both"}
    assert ranking.counts == VectorCounts(6, 6)


def test_every_filter_bounds_both_rankings(vectors: VectorsBeside) -> None:
    unread, _, _ = first_page(
        about("the bill for the website redesign"), vectors, HasFlag("seen", present=False)
    )
    assert set(unread) == {1, 5}
    worded, _, _ = first_page(
        about("the bill for the website redesign"), vectors, Contains("text", "landing")
    )
    assert worded == [1]


def test_a_description_without_a_word_to_search_ranks_by_meaning_alone(vectors: VectorsBeside) -> None:
    ranking = about("radiator")
    uids, _, _ = first_page(ranking, vectors)
    assert uids == [2] and ranking.whys == {("INBOX", 2): "both"}
    ranking = about("it is too cold in here")
    assert first_page(ranking, vectors)[0] == [2] and ranking.whys == {("INBOX", 2): "meaning"}


def test_a_message_alone_is_found_behind_more_look_alikes_than_the_fusion_takes(tmp_path: Path) -> None:
    """120 copies of one notice are nearer the description by cosine than the one message about it, and
    each is near all the others: hubness reduction puts the one first, provided it is among the nearest it
    ranks (:data:`~mail_imap_mcp.services.search_meaning.NEAREST_POOL`, more than the fusion's ``POOL``).
    Among 10,000 everyday messages the nearest of a French bank's card mail was 231st by cosine, behind
    crowds of notices of failed payments, and never ranked."""
    beside = VectorsBeside(open_index(tmp_path / "index" / "a.sqlite3").store, TopicModel())
    crowd = [message(uid, "Payment failed", "We could not charge your account.") for uid in range(1, 121)]
    alone = message(200, "Techniker kommt Dienstag", "Bitte die Heizkörper freiräumen.")
    beside.put_texts("INBOX", [*crowd, alone], vectors=False)
    for one in crowd:
        beside.vectors[("INBOX", one.uid)] = np.array([0.45, 0.893, 0, 0, 0], dtype=np.float32)
    beside.vectors[("INBOX", 200)] = np.array([0.3, 0, 0.954, 0, 0], dtype=np.float32)
    assert POOL < len(crowd) < NEAREST_POOL
    ranking = about("radiator")
    uids, _, _ = first_page(ranking, beside)
    assert uids[0] == 200 and ranking.whys[("INBOX", 200)] == "meaning"


def test_later_pages_list_the_first_pages_places_exactly_while_mail_arrives(vectors: VectorsBeside) -> None:
    ranking = about("the bill for the website redesign")
    first, total, kept = first_page(ranking, vectors, limit=1, keep=100)
    assert [place.uid for place in kept[:1]] == first and len(kept) == total == 3
    # A better match arrives, and one listed is deleted: the next pages list the kept places still there,
    # in the first page's order, and no message twice; the total stays the first page's.
    vectors.put_texts("INBOX", [message(9, "Bill: website redesign", "Invoice for the homepage revamp.")])
    state = vectors.store.folders()["INBOX"]
    vectors.store.update(state, flags={}, removed=[kept[2].uid])
    later = MeaningRanking(TopicModel(), "the bill for the website redesign", None, total)
    rest = RankedStore(vectors, later).search(
        EVERYTHING, folders=["INBOX"], order="relevance", limit=10, offset=1, places=kept[1:]
    )
    assert [hit.uid for hit in rest.hits] == [kept[1].uid] and rest.total == total
    assert 9 in first_page(about("the bill for the website redesign"), vectors)[0]  # a new search finds it


def test_like_ranks_by_the_meaning_of_a_message_and_leaves_it_out(vectors: VectorsBeside) -> None:
    vectors.put_texts("INBOX", [message(7, "Heizung kaputt", "Es ist kalt, the radiator is cold.")])
    like = MeaningRanking(TopicModel(), None, MessageRef("a", "INBOX", 7, 7), 0)
    uids, _, _ = first_page(like, vectors)
    assert uids == [2] and like.whys == {("INBOX", 2): "meaning"}
    gone = MeaningRanking(TopicModel(), None, MessageRef("a", "INBOX", 7, 99), 0)
    with pytest.raises(MessageGone):
        first_page(gone, vectors)
    recreated = MeaningRanking(TopicModel(), None, MessageRef("a", "INBOX", 8, 7), 0)
    with pytest.raises(MessageGone):
        first_page(recreated, vectors)


def test_messages_without_vectors_yet_are_counted_and_ranked_by_their_words(vectors: VectorsBeside) -> None:
    vectors.put_texts("INBOX", [message(8, "Website bill", "")], vectors=False)
    ranking = about("the bill for the website redesign")
    uids, _, _ = first_page(ranking, vectors)
    assert 8 in uids and ranking.whys[("INBOX", 8)] == "words"
    assert ranking.counts == VectorCounts(6, 7) and ranking.counts.partial


def test_messages_without_vectors_in_a_folder_not_searched_leave_the_ranking_complete(
    vectors: VectorsBeside,
) -> None:
    vectors.put_texts("Archive", [message(8, "Website bill", "")], vectors=False)
    ranking = about("the bill for the website redesign")
    first_page(ranking, vectors)  # of INBOX
    assert ranking.counts == VectorCounts(6, 6) and not ranking.counts.partial


def test_a_first_page_is_made_while_its_search_asks_the_server_what_changed(
    vectors: VectorsBeside, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index's search begins the page, then asks the server what changed, then takes the page: a fused
    # page made before its start returned added that round trip to every search by meaning.
    asked = threading.Event()
    nearest = vectors.nearest

    def nearest_once_asked(*args: Any) -> list[Hit]:
        if not asked.wait(patient(30)):
            raise AssertionError("the page was made before its search went on")
        return nearest(*args)

    ask = PageAsk(folders=["INBOX"], order="relevance", limit=3, offset=0)
    alone = RankedStore(vectors, about("the bill for the website redesign")).search(EVERYTHING, **ask)
    monkeypatch.setattr(vectors, "nearest", nearest_once_asked)
    begun = RankedStore(vectors, about("the bill for the website redesign")).start_search(EVERYTHING, **ask)
    asked.set()
    assert [hit.uid for hit in begun.result().hits] == [hit.uid for hit in alone.hits]
