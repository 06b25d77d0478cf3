"""The hostile mail of the meaning set (tests/support/mail/meaning_set/hostile.json, issue 90) keeps its
shape: in each of English, German and French, 4 topic salads (each naming the key words of 6 labelled
topics or more), 4 stuffed messages (a short pitch, its topic words then many times over), 8 baits (each
imitating a labelled topic, with a link to log in or pay at), 6 junk messages (random tokens, a base64
blob, emoji, zero-width characters, Cyrillic letters for Latin, mixed scripts) and a flood of 50 copies of
one phishing text with small changes; none is a labelled message; and ``distractors(count, hostile=n)``
swaps n of them in for as many everyday messages (never a personal one), the count kept."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.support.mail.meaning_set.hostile import (
    HOSTILE_LANGUAGES,
    KINDS,
    hostile_kind,
    hostile_mail,
    hostile_topic,
)
from tests.support.mail.meaning_set.key_words import KEY_WORDS
from tests.support.mail.meaning_set.languages import distractors, mailboxes, topics

#: Each kind's messages in each language.
COUNTS = {"salad": 4, "stuffing": 4, "bait": 8, "junk": 6, "flood": 50}
_LINK = re.compile(r"http://[a-z0-9.-]+\.example\b")


def _of(kind: str, language: str) -> list[str]:
    return [
        f"{message.subject}\n{message.body}"
        for message in hostile_mail()
        if hostile_kind(message.id) == kind and message.language == language
    ]


def test_each_kind_in_each_language_in_its_number() -> None:
    found = Counter((hostile_kind(message.id), message.language) for message in hostile_mail())
    assert found == {(kind, language): COUNTS[kind] for kind in KINDS for language in HOSTILE_LANGUAGES}
    assert len({message.id for message in hostile_mail()}) == len(hostile_mail())
    assert [message.language for message in hostile_mail()[:6]] == [*HOSTILE_LANGUAGES, *HOSTILE_LANGUAGES]


def test_a_salad_names_six_labelled_topics_or_more_and_a_stuffed_message_repeats_its_words() -> None:
    for language in HOSTILE_LANGUAGES:
        for text in _of("salad", language):
            named = {word for word in KEY_WORDS[language] if re.search(rf"\b{re.escape(word)}", text, re.I)}
            assert len(named) >= 6, (language, text[:60])
        for text in _of("stuffing", language):
            words = Counter(re.findall(r"\w+", text.casefold()))
            assert words.most_common(1)[0][1] >= 40, (language, text[:60])
            assert len(text.split("\n\n")[0].split()) <= 20, (language, text[:60])


def test_a_bait_imitates_a_labelled_topic_and_asks_to_log_in_or_pay_at_a_link() -> None:
    keys = {topic["key"] for topic in topics()} | {"invoice", "tax", "job"}
    for message in hostile_mail():
        if hostile_kind(message.id) in ("bait", "flood"):
            assert hostile_topic(message.id) in keys, message.id
            assert _LINK.search(message.body), message.id
        else:
            assert hostile_topic(message.id) is None, message.id


def test_junk_holds_random_tokens_a_blob_emoji_zero_width_homoglyphs_and_mixed_scripts() -> None:
    for language in HOSTILE_LANGUAGES:
        texts = _of("junk", language)
        assert any(len(text.split()) > 400 for text in texts), language
        assert any(re.search(r"[A-Za-z0-9+/]{76}\n", text) for text in texts), language
        assert any(sum(char >= "\U0001f300" for char in text) >= 50 for text in texts), language
        assert any(text.count("\u200b") >= 50 for text in texts), language
        assert any(re.search(r"[a-z][асеорху]|[асеорху][a-z]", text) for text in texts), language
        assert any(re.search(r"[\u4e00-\u9fff]", text) and re.search(r"[α-ω]", text) for text in texts)


def test_a_flood_is_one_text_with_small_changes() -> None:
    for language in HOSTILE_LANGUAGES:
        copies = _of("flood", language)
        assert len(set(copies)) == len(copies) == COUNTS["flood"], language
        shared = set.intersection(*(set(copy.split()) for copy in copies))
        assert len(shared) >= 25, language
        assert all(len(set(copy.split()) - shared) <= 12 for copy in copies), language


def test_no_hostile_message_is_labelled_relevant() -> None:
    hostile = {message.id for message in hostile_mail()}
    for mailbox in mailboxes(2000, hostile=len(hostile)):
        ids = {message.id for message in mailbox.labelled.messages}
        assert hostile <= ids, mailbox.name
        for queries in mailbox.sets.values():
            assert not any(query.relevant & hostile for query in queries), mailbox.name


def test_hostile_mail_replaces_as_many_everyday_distractors_never_a_personal_one() -> None:
    everyday = distractors(2000)
    with_personal = distractors(2000, 300)
    both = distractors(2000, 300, 216)
    assert len(both) == 2000
    assert [m for m in both if m.id.startswith("hostile-")] == list(hostile_mail())
    assert [m for m in both if m.id.startswith("personal-")] == [
        m for m in with_personal if m.id.startswith("personal-")
    ]
    kept = [m for m in both if not m.id.startswith(("hostile-", "personal-"))]
    assert len(kept) == 2000 - 300 - 216 and set(kept) <= set(everyday)
    alone = distractors(2000, hostile=100)
    assert Counter(hostile_kind(m.id) for m in alone if m.id.startswith("hostile-")).total() == 100
    assert distractors(2000, 0, 0) == everyday


def test_personal_and_hostile_mail_may_fill_every_everyday_place_and_no_more() -> None:
    full = distractors(300, 250, 50)
    assert len(full) == 300
    assert sum(m.id.startswith("personal-") for m in full) == 250
    assert sum(m.id.startswith("hostile-") for m in full) == 50
    with pytest.raises(ValueError, match="51 hostile messages asked, 50 at most"):
        distractors(300, 250, 51)
