"""The one-off personal mail of the meaning set (tests/support/mail/meaning_set/personal.json, issue 90)
keeps its shape: at least 100 messages in each of English, German and French, each with a sender, a
subject of its own and a body of two sentences or more, none naming a labelled topic's key words; and
``distractors(count, personal=n)`` swaps n of them in for as many everyday messages, the count kept."""

from __future__ import annotations

import re
from collections import Counter

from tests.support.mail.meaning_set.key_words import KEY_WORDS as OFF_TOPIC
from tests.support.mail.meaning_set.languages import distractors, mailboxes
from tests.support.mail.meaning_set.personal import PERSONAL_LANGUAGES, personal_mail, personal_messages


def test_at_least_a_hundred_messages_in_each_language_each_on_its_own_subject() -> None:
    found = personal_messages()
    assert set(found) == set(PERSONAL_LANGUAGES)
    for language, messages in found.items():
        assert len(messages) >= 100, language
        subjects = Counter(message["subject"].casefold() for message in messages)
        assert [subject for subject, times in subjects.items() if times > 1] == [], language
        for message in messages:
            assert message["from"].endswith(".example>") and "<" in message["from"], message["subject"]
            assert len(re.findall(r"[.!?](?:\s|$)", message["body"])) >= 2, message["subject"]
    assert len({message["from"] for messages in found.values() for message in messages}) >= 300


def test_no_personal_message_names_a_labelled_topics_key_words() -> None:
    named = {
        (language, message["subject"]): found
        for language, words in OFF_TOPIC.items()
        for message in personal_messages()[language]
        if (
            found := re.findall(rf"\b(?:{'|'.join(map(re.escape, words))})", " ".join(message.values()), re.I)
        )
    }
    assert named == {}


def test_the_personal_mail_takes_the_languages_in_turn_with_ids_of_its_own() -> None:
    mail = personal_mail()
    assert len(mail) == sum(len(messages) for messages in personal_messages().values())
    assert len({message.id for message in mail}) == len(mail)
    assert [message.language for message in mail[:6]] == [*PERSONAL_LANGUAGES, *PERSONAL_LANGUAGES]
    assert all(message.id.startswith(f"personal-{message.language}-") for message in mail)


def test_personal_mail_replaces_as_many_everyday_distractors_and_the_default_is_unchanged() -> None:
    everyday = distractors(2000)
    assert not any(message.id.startswith("personal-") for message in everyday)
    swapped = distractors(2000, 300)
    assert len(swapped) == 2000
    personal = [message for message in swapped if message.id.startswith("personal-")]
    assert personal == list(personal_mail()[:300])
    assert Counter(message.language for message in personal) == {"en": 100, "de": 100, "fr": 100}
    kept = [message for message in swapped if not message.id.startswith("personal-")]
    assert len(kept) == 1700 and set(kept) <= set(everyday)
    every = distractors(2000, len(personal_mail()))
    assert {message.id for message in every} >= {message.id for message in personal_mail()}
    for mailbox in mailboxes(2000, 300):
        ids = {message.id for message in mailbox.labelled.messages}
        assert {message.id for message in personal} <= ids, mailbox.name
        labelled = set().union(*(query.relevant for queries in mailbox.sets.values() for query in queries))
        assert len(mailbox.labelled.messages) == 2000 + len(labelled), mailbox.name
