"""The meaning set's German and French mail (issue 90), and the mailboxes it is measured in.

``languages.json``: 14 topics, each written as 4 German and 4 French messages, asked by a paraphrase in
German, in French and in English that shares no content word with its messages; each topic in a half,
``tune`` or ``held-out``. Every mailbox mixes its labelled mail into ``distractors`` everyday messages
(:func:`distractors`): the set's own templates (``others.json``: shops, banks, bookings, newsletters,
people and their replies; some in German and French) and :mod:`tests.support.mail.realmail`'s threads
with quoted text in five styles, newsletters, notifications and invoices.

API::

    for mailbox in mailboxes(10_000):  # English, German, French, three languages
                                       # (personal=300: 300 of the 10,000 one-off personal mail;
                                       # hostile=216: 216 of them hostile mail)
        mailbox.labelled               # a MeaningSet: its messages and its queries
        for name, queries in mailbox.sets.items():   # "German", "English over German", ...
            ...                        # SetQuery; mailbox.half[query.id]: "tune" or "held-out"
"""

from __future__ import annotations

import email
import email.policy
import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from tests.support.mail.meaning_set import HERE, MeaningSet, SetQuery, placed
from tests.support.mail.meaning_set.hostile import hostile_mail
from tests.support.mail.meaning_set.others import Drafted, iter_other_messages
from tests.support.mail.meaning_set.personal import personal_mail
from tests.support.mail.realmail import realistic_corpus

#: The languages a topic is written in, and how a set names them.
LANGUAGES = {"de": "German", "fr": "French"}
HALVES = ("tune", "held-out")
#: The distractors' seed, and the share of them made by realmail (one in this many).
SEED = 90
_REALMAIL_EVERY = 7
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Mailbox:
    """One mailbox of labelled mail among distractors, and the sets of queries asked of it."""

    name: str
    labelled: MeaningSet
    sets: dict[str, list[SetQuery]]
    #: Each query's half: ``tune`` or ``held-out``.
    half: dict[str, str]


@cache
def topics() -> list[dict[str, Any]]:
    """The topics of ``languages.json``: key, half, queries by language, messages by language."""
    loaded: list[dict[str, Any]] = json.loads((HERE / "languages.json").read_text(encoding="utf-8"))["topics"]
    return loaded


def _english_topics() -> list[dict[str, Any]]:
    """The English topics of ``relevant.json`` (the English set), each in the half its place gives it
    (the 1st, 3rd, ... tune), as scripts/meaning_recall halves them."""
    found = json.loads((HERE / "relevant.json").read_text(encoding="utf-8"))["topics"]
    english = [topic for topic in found if topic["language"] == "en"]
    return [{**topic, "half": HALVES[number % 2]} for number, topic in enumerate(english)]


def _realmail(count: int, seed: int) -> list[Drafted]:
    """``count`` messages of :func:`realistic_corpus` as the set drafts them: sender, subject, the text
    a reader sees (the plain part, or the HTML's text)."""
    drafted = []
    for number, made in enumerate(realistic_corpus(count, seed)):
        message = email.message_from_bytes(made.raw, policy=email.policy.default)
        part = message.get_body(preferencelist=("plain", "html"))
        body = part.get_content() if part is not None else ""
        language = "de" if made.kind == "reply-de" else "fr" if made.kind == "reply-fr" else "en"
        drafted.append(
            Drafted(
                f"real-{number:05d}",
                str(message["From"]),
                str(message["Subject"]),
                _TAG.sub(" ", body),
                language,
            )
        )
    return drafted


@cache
def distractors(count: int, personal: int = 0, hostile: int = 0) -> tuple[Drafted, ...]:
    """``count`` everyday messages no query asks for, the same for the same ``count``: every
    :data:`_REALMAIL_EVERY` th from realmail, the others from the set's templates; with ``personal``, that
    many of them (spread evenly) replaced by one-off personal mail (:func:`personal_mail`), with
    ``hostile``, that many others by hostile mail (:func:`hostile_mail`), the count kept."""
    real = _realmail(count // _REALMAIL_EVERY, SEED)
    templated = iter_other_messages(count - len(real), SEED)
    everyday = tuple(
        real.pop(0) if real and number % _REALMAIL_EVERY == 0 else next(templated) for number in range(count)
    )
    mixed = _swapped_in(everyday, everyday, personal_mail(), personal, "personal", half_step=False)
    return _swapped_in(mixed, everyday, hostile_mail(), hostile, "hostile", half_step=True)


def _swapped_in(
    mixed: tuple[Drafted, ...],
    everyday: tuple[Drafted, ...],
    mail: tuple[Drafted, ...] | list[Drafted],
    count: int,
    what: str,
    *,
    half_step: bool,
) -> tuple[Drafted, ...]:
    """``mixed`` with the first ``count`` of ``mail`` in place of as many of its everyday messages (of
    ``everyday``: never one swapped in already), one every ``len(everyday) / count``, from the first
    message or from half a step in."""
    free = [place for place, message in enumerate(mixed) if message is everyday[place]]
    most = min(len(mail), len(free))
    if count > most:
        raise ValueError(f"{count} {what} messages asked, {most} at most beside the others swapped in")
    swapped = list(mixed)
    place = 0
    for number in range(count):
        place = max(place, ((2 * number + half_step) * len(everyday)) // (2 * count))
        while place < len(swapped) and swapped[place] is not everyday[place]:
            place += 1
        if place == len(swapped):  # past the last free place: the first free one left
            place = next(n for n in free if swapped[n] is everyday[n])
        swapped[place] = mail[number]
    return tuple(swapped)


def _spread(relevant: list[Drafted], others: tuple[Drafted, ...]) -> MeaningSet:
    """The relevant messages spread evenly among ``others``, placed as the meaning set places its mail."""
    step = max(1, len(others) // max(1, len(relevant)))
    mixed: list[Drafted] = []
    waiting = list(relevant)
    for number, other in enumerate(others):
        if waiting and number % step == step // 2:
            mixed.append(waiting.pop(0))
        mixed.append(other)
    return MeaningSet(placed([*mixed, *waiting]), ())


def _drafted(key: str, language: str, messages: list[dict[str, str]]) -> list[Drafted]:
    return [
        Drafted(f"{key}-{language}-{number}", m["from"], m["subject"], m["body"], language)
        for number, m in enumerate(messages, 1)
    ]


def _query(key: str, asked: str, text: str, relevant: list[Drafted]) -> SetQuery:
    return SetQuery(f"{key}/{asked}", text, "paraphrase", asked, frozenset(m.id for m in relevant))


def mailboxes(count: int, personal: int = 0, hostile: int = 0) -> list[Mailbox]:
    """The four mailboxes, each among ``count`` distractors (``personal`` of them one-off personal mail,
    ``hostile`` of them hostile mail, :func:`distractors`): the English set's topics (asked by its
    English paraphrases and keywords), the German and the French topics (asked in their language and in
    English), and the three languages in one mailbox, where a topic's mail in every language is relevant
    to each of its questions (the English set's topics of the same key: heating, dentist, school, car
    insurance, job)."""
    others = distractors(count, personal, hostile)
    english = {t["key"]: (t, _drafted(t["key"], "en", t["messages"])) for t in _english_topics()}
    found: list[Mailbox] = []
    asked_english = {
        "English": [_query(key, "en", t["paraphrase"], mail) for key, (t, mail) in english.items()],
        "English keywords": [
            SetQuery(f"{key}/keyword", t["keyword"], "keyword", "en", frozenset(m.id for m in mail))
            for key, (t, mail) in english.items()
        ],
    }
    half = {
        query.id: english[query.id.split("/")[0]][0]["half"] for qs in asked_english.values() for query in qs
    }
    relevant = [m for _, mail in english.values() for m in mail]
    found.append(Mailbox("English", _spread(relevant, others), asked_english, half))
    for language, name in LANGUAGES.items():
        mail = {t["key"]: _drafted(t["key"], language, t["messages"][language]) for t in topics()}
        asked = {
            name: [_query(t["key"], language, t["queries"][language], mail[t["key"]]) for t in topics()],
            f"English over {name}": [
                _query(t["key"], "en", t["queries"]["en"], mail[t["key"]]) for t in topics()
            ],
        }
        halves = {f"{t['key']}/{by}": t["half"] for t in topics() for by in (language, "en")}
        found.append(Mailbox(name, _spread([m for ms in mail.values() for m in ms], others), asked, halves))
    found.append(_three_languages(others, english))
    return found


def _three_languages(others: tuple[Drafted, ...], english: dict[str, Any]) -> Mailbox:
    """The English, German and French mail in one mailbox; each topic asked in each language it has."""
    mail: dict[str, list[Drafted]] = {key: list(drafted) for key, (_, drafted) in english.items()}
    asked: dict[str, dict[str, str]] = {key: {"en": t["paraphrase"]} for key, (t, _) in english.items()}
    half = {key: t["half"] for key, (t, _) in english.items()}
    for topic in topics():
        key = topic["key"]
        for language in LANGUAGES:
            mail.setdefault(key, []).extend(_drafted(key, language, topic["messages"][language]))
        asked.setdefault(key, {}).update(topic["queries"])
        half.setdefault(key, topic["half"])
    queries = [
        _query(key, language, text, mail[key])
        for key, texts in asked.items()
        for language, text in texts.items()
    ]
    relevant = [m for drafted in mail.values() for m in drafted]
    return Mailbox(
        "three languages",
        _spread(relevant, others),
        {"three languages": queries},
        {query.id: half[query.id.split("/")[0]] for query in queries},
    )
