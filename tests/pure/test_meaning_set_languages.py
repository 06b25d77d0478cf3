"""The meaning set's German and French mail (tests/support/mail/meaning_set/languages.json, issue 90)
keeps its shape: at least 13 topics of at least 4 messages in each language, each asked in German, French
and English by a paraphrase sharing no content word with its messages, each topic in a half (tune or
held-out), both halves used; and the mailboxes the benchmark measures hold what they claim."""

from __future__ import annotations

from collections import Counter

from tests.support.mail.meaning_set.languages import HALVES, LANGUAGES, distractors, mailboxes, topics
from tests.support.mail.meaning_set.words import content_stems


def test_at_least_thirteen_topics_of_four_messages_in_each_language() -> None:
    found = topics()
    assert len(found) >= 13
    assert len({topic["key"] for topic in found}) == len(found)
    for topic in found:
        assert set(topic["messages"]) == set(LANGUAGES), topic["key"]
        assert all(len(messages) >= 4 for messages in topic["messages"].values()), topic["key"]
        assert all(m["from"] and m["subject"] and m["body"] for ms in topic["messages"].values() for m in ms)


def test_each_topic_is_asked_in_its_languages_and_in_english_in_a_half() -> None:
    for topic in topics():
        assert set(topic["queries"]) == {*LANGUAGES, "en"}, topic["key"]
        assert all(content_stems(text) for text in topic["queries"].values()), topic["key"]
    halves = Counter(topic["half"] for topic in topics())
    assert set(halves) == set(HALVES)
    assert abs(halves["tune"] - halves["held-out"]) <= 1


def test_a_paraphrase_shares_no_content_word_with_the_mail_it_should_find() -> None:
    shared = {
        (topic["key"], asked, language, message["subject"]): words
        for topic in topics()
        for asked, text in topic["queries"].items()
        for language, messages in topic["messages"].items()
        if asked in (language, "en")
        for message in messages
        if (words := content_stems(text) & content_stems(" ".join(message.values())))
    }
    assert shared == {}


def test_the_mailboxes_hold_their_sets_among_everyday_mail_of_three_languages() -> None:
    found = {mailbox.name: mailbox for mailbox in mailboxes(2000)}
    assert list(found) == ["English", "German", "French", "three languages"]
    assert list(found["German"].sets) == ["German", "English over German"]
    for mailbox in found.values():
        ids = mailbox.labelled.by_id
        assert len(ids) == len(mailbox.labelled.messages) >= 2000
        queries = [query for asked in mailbox.sets.values() for query in asked]
        assert all(query.relevant <= ids.keys() for query in queries), mailbox.name
        assert {mailbox.half[query.id] for query in queries} == set(HALVES), mailbox.name
    mixed = found["three languages"].sets["three languages"]
    heating = next(query for query in mixed if query.id == "heating/en")
    assert {found["three languages"].labelled.by_id[i].language for i in heating.relevant} == {
        "en",
        "de",
        "fr",
    }


def test_the_distractors_are_varied_the_same_on_every_build_and_some_german_and_french() -> None:
    made = distractors(2000)
    assert made == distractors(2000)
    assert len(made) == 2000
    assert {message.language for message in made} == {"en", "de", "fr"}
    assert len({message.sender for message in made}) > 200
    assert any(message.id.startswith("real-") for message in made)
    assert any(message.subject.startswith("Re: ") for message in made)
