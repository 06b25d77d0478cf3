"""Search by meaning the same on every engine and in every language (issue 89, items 6, 7 and 8), on the
meaning set (tests/support/mail/meaning_set) with a few messages of these cases added, in a real index
store of each engine (SQLite, sqlite+tantivy, PostgreSQL with its vectors in a table, and with pgvector),
the vectors made by the index's own pass with the shipped model:

* the sender's name is no part of what is embedded: two messages that differ only by it have the same
  vectors (it made a sender's mail near all of its own: 62% of ``like``'s first ten);
* a word few messages hold keeps its weight whatever the model thinks: ``about: "Wohnung"`` lists the
  only two messages holding it first, though the meaning ranks other mail first (beside "invoice",
  among the first ten);
* function words of the languages the index sees do not match: a message holding only "wird", "um",
  "hat", "qu'", "fait" is not found by the words;
* hubness is reduced against the same messages on every engine, and equal scores are listed in one order
  (item 7, in part: the stored vectors still differ by engine, docs/search.md)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from bisect import bisect_left
from collections.abc import Iterator

import pytest

from mail_imap_mcp.index.store import IndexStore, PageAsk
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from mail_imap_mcp.query import EVERYTHING
from mail_imap_mcp.services.search_meaning import MeaningRanking
from tests.support.mail.meaning_set import FOLDERS, MeaningSet, SetMessage, meaning_set
from tests.support.mail.meaning_set.recall import ENGINE_SERVERS, engine_store, with_vectors

#: Messages added to the set: id, sender, subject, body (German where the case is German).
ADDED = (
    (
        "twin-named",
        "Dana Okafor <dana@okafor.example>",
        "Boiler service on Tuesday",
        "The engineer comes at nine to service the boiler and bleed the radiators.",
    ),
    (
        "twin-office",
        "Lettings Office <office@lettings.example>",
        "Boiler service on Tuesday",
        "The engineer comes at nine to service the boiler and bleed the radiators.",
    ),
    (
        "wohnung-week",
        "Jana Brandt <jana@brandt.example>",
        "Termine nächste Woche",
        "Am Dienstag ist das Teammeeting um zehn, am Mittwoch die Besichtigung der Wohnung, am Freitag "
        "der Zahnarzt. Denk bitte an die Unterlagen für die Steuer.",
    ),
    (
        "wohnung-photos",
        "Paul Brandt <paul@brandt.example>",
        "Fotos vom Wochenende",
        "Hier die Bilder vom Ausflug an den See und vom Grillen am Abend. Die Wohnung zeige ich euch beim "
        "nächsten Mal.",
    ),
    (
        "function-words",
        "Lea Roux <lea@roux.example>",
        "Kurz notiert",
        "Es wird um acht sein, hat sie gesagt. Qu'il fait beau!",
    ),
)


def with_added(labelled: MeaningSet) -> MeaningSet:
    """``labelled`` and :data:`ADDED` after its newest message, in INBOX."""
    last = max(labelled.messages, key=lambda message: message.sent)
    uid = max(message.uid for message in labelled.in_folder("INBOX"))
    added = tuple(
        SetMessage(key, "INBOX", uid + n, sender, subject, body, last.sent + dt.timedelta(hours=n), "de")
        for n, (key, sender, subject, body) in enumerate(ADDED, start=1)
    )
    return dataclasses.replace(labelled, messages=labelled.messages + added)


LABELLED = with_added(meaning_set())


@pytest.fixture(scope="module", params=tuple(ENGINE_SERVERS))
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexStore]:
    """The set and :data:`ADDED` in an index store of each engine, with their vectors."""
    with engine_store(request, tmp_path_factory.mktemp("engines"), LABELLED) as store:
        with_vectors(store, shipped_model(ENGLISH))
        yield store


def place(key: str) -> tuple[str, int]:
    message = LABELLED.by_id[key]
    return (message.folder, message.uid)


def about(store: IndexStore, text: str) -> MeaningRanking:
    """``about: text``'s first page of ten ranked on ``store`` (its reasons and kept order in the ranking)."""
    ranking = MeaningRanking(shipped_model(ENGLISH), text, None, 0)
    ask = PageAsk(folders=["INBOX", "Archive"], order="relevance", limit=10, offset=0, keep=50)
    ranking.page(store, EVERYTHING, ask)
    return ranking


def test_the_sender_s_name_is_not_embedded_two_messages_differing_by_it_have_the_same_vectors(
    store: IndexStore,
) -> None:
    from mail_imap_mcp.index.sync_vectors import vector_store

    vectors = vector_store(store)
    assert vectors is not None
    found = vectors.vectors_of([place("twin-named"), place("twin-office")])
    named, office = found[place("twin-named")], found[place("twin-office")]
    assert named.shape == office.shape and (named == office).all()


#: A description with a word two messages hold, and the first places they take: alone, they are first;
#: beside a word many messages hold (whose messages the meaning ranks first too), among the first ten.
RARE_CASES = [("Wohnung", 2), ("Wohnung invoice", 10)]


@pytest.mark.parametrize(("text", "within"), RARE_CASES)
def test_a_word_few_messages_hold_keeps_its_weight_whatever_the_meaning_ranks(
    store: IndexStore, text: str, within: int
) -> None:
    ranking = about(store, text)
    holders = {place("wohnung-week"), place("wohnung-photos")}
    assert holders <= set(ranking.kept[:within]), [LABELLED.id_at(*at) for at in ranking.kept[:10]]
    assert all(ranking.whys[held] != "meaning" for held in holders)


def test_function_words_of_every_language_do_not_match(store: IndexStore) -> None:
    ranking = about(store, "Was wird um die Wohnung, hat sie gesagt? Qu'il fait")
    # "gesagt" is a word of the message: found by it, never by "wird", "um", "hat", "qu'", "fait" alone.
    assert ranking.whys.get(place("function-words"), "meaning") in ("words", "both")
    ranking = about(store, "Was wird um die Wohnung? Qu'il fait")
    assert ranking.whys.get(place("function-words"), "meaning") == "meaning", ranking.whys.get(
        place("function-words")
    )


def test_equal_scores_are_listed_in_one_order_on_every_engine(store: IndexStore) -> None:
    """The twins have the same vectors, so the same score: the newer first, then the older, on every
    engine, whatever order its store gives them in."""
    from mail_imap_mcp.index.sync_vectors import vector_store
    from mail_imap_mcp.services.search_meaning import POOL
    from mail_imap_mcp.services.search_meaning_near import NearestAsk, by_meaning

    model = shipped_model(ENGLISH)
    vectors = vector_store(store)
    assert vectors is not None
    ask = NearestAsk(vectors, None, ["INBOX", "Archive"], POOL)
    for text in ("the boiler service", "an engineer bleeds the radiators on Tuesday"):
        places = [(one.folder, one.uid) for one in by_meaning(ask, model.embed([text])[0], fed_back=False)]
        assert places.index(place("twin-office")) + 1 == places.index(place("twin-named")), text


def test_hubness_is_reduced_against_the_same_messages_on_every_engine(store: IndexStore) -> None:
    """The reference a message's hubness is measured against is the same messages on every engine: the
    first sent at or after each of ``limit`` times spread from the oldest to the newest (each engine
    spread its own row ids: among 4,332 messages PostgreSQL's first ten by meaning were SQLite's for 3 of
    the set's 40 queries)."""
    from mail_imap_mcp.index.sync_vectors import vector_store

    vectors = vector_store(store)
    assert vectors is not None
    stored = [message for folder in FOLDERS for message in LABELLED.in_folder(folder)]  # as stored
    by_time = sorted(stored, key=lambda message: int(message.sent.timestamp()))  # stable: equal as stored
    times = [int(message.sent.timestamp()) for message in by_time]
    for limit in (100, 1000):
        spread = (times[0] + (times[-1] - times[0] + 1) * n // limit for n in range(limit))
        expected = {(by_time[at].folder, by_time[at].uid) for at in (bisect_left(times, t) for t in spread)}
        assert set(vectors.vector_sample(limit)) == expected, limit
    assert set(vectors.vector_sample(len(stored))) == {(message.folder, message.uid) for message in stored}
