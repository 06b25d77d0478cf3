"""The meaning set (tests/support/mail/meaning_set, issue 80) is what it claims to be: at least 120
relevant messages among at least 1,000 others, 40 queries, half paraphrases that share no content word
with any message they should find, half keywords that share one with each; some in German and French;
the same on every build."""

from __future__ import annotations

from collections import Counter

from tests.support.mail.meaning_set import OTHERS, SEED, SetMessage, meaning_set
from tests.support.mail.meaning_set.others import other_messages
from tests.support.mail.meaning_set.words import STOP_WORDS, content_stems, content_words, stem


def _stems_of(message: SetMessage) -> set[str]:
    """Every content stem of every text column the index keeps of ``message``."""
    return set().union(*(content_stems(text) for text in message.texts))


def test_the_set_holds_relevant_messages_among_a_thousand_others() -> None:
    labelled = meaning_set()
    relevant = set().union(*(query.relevant for query in labelled.queries))
    assert len(relevant) >= 120
    assert len(labelled.messages) - len(relevant) >= 1000
    assert relevant <= labelled.by_id.keys()
    assert len(labelled.by_id) == len(labelled.messages)
    assert len({(m.folder, m.uid) for m in labelled.messages}) == len(labelled.messages)


def test_forty_queries_half_paraphrases_half_keywords_some_german_and_french() -> None:
    queries = meaning_set().queries
    assert len(queries) == 40
    assert Counter(query.kind for query in queries) == {"paraphrase": 20, "keyword": 20}
    languages = Counter(query.language for query in queries)
    assert languages["de"] >= 2 and languages["fr"] >= 2
    halves = meaning_set().halves()
    assert list(halves)[:2] == ["paraphrase, English", "keyword, English"]
    assert len(halves["paraphrase, English"]) == len(halves["keyword, English"]) >= 16


def test_a_paraphrase_shares_no_content_word_with_the_messages_it_should_find() -> None:
    labelled = meaning_set()
    shared = {
        (query.id, message_id): sorted(content_stems(query.text) & _stems_of(labelled.by_id[message_id]))
        for query in labelled.queries
        if query.kind == "paraphrase"
        for message_id in query.relevant
    }
    assert {place: words for place, words in shared.items() if words} == {}
    assert all(content_words(query.text) for query in labelled.queries)


def test_a_keyword_query_shares_a_word_with_each_message_it_should_find() -> None:
    labelled = meaning_set()
    missing = [
        (query.id, message_id)
        for query in labelled.queries
        if query.kind == "keyword"
        for message_id in query.relevant
        if not content_stems(query.text) & _stems_of(labelled.by_id[message_id])
    ]
    assert missing == []


def test_the_check_sees_a_word_shared_in_another_form() -> None:
    assert stem("radiators") == stem("radiator")
    assert stem("paying") == stem("pay")
    assert content_stems("the heaters") & content_stems("heating")
    assert not content_stems("what did you say about it") - {"say"}
    assert {"the", "der", "les"} <= STOP_WORDS


def test_the_other_mail_is_the_same_on_every_build() -> None:
    assert other_messages(OTHERS, SEED) == other_messages(OTHERS, SEED)
    assert other_messages(OTHERS, SEED) != other_messages(OTHERS, SEED + 1)
    labelled = meaning_set()
    assert {message.language for message in labelled.messages} == {"en", "de", "fr"}
    assert len({(message.subject, message.body) for message in labelled.messages}) > 1200
