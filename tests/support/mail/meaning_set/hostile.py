"""Hostile mail (issue 90): messages crafted to be found by a search they do not answer.

``hostile.json``: in English, German and French, none relevant to a labelled topic of the meaning set.
Kinds (:data:`KINDS`): ``salad``, a newsletter or spam touching many everyday topics at once (a hub);
``stuffing``, a short pitch and topic words repeated many times; ``bait``, phishing written to look like
the mail a user asks for (each names the labelled topic it imitates); ``junk``, random tokens,
base64-like blobs, emoji, zero-width characters, Cyrillic letters for Latin, mixed scripts; ``flood``, one
phishing text per language sent many times with small changes. ``scripts/meaning_recall --distractors N
--hostile`` swaps them in for as many everyday distractors
(:func:`tests.support.mail.meaning_set.languages.distractors`).

API::

    hostile_mail()                     # Drafted, id "hostile-<kind>-<language>-<n>", the languages in turn
    hostile_kind("hostile-bait-en-3")  # "bait"
    hostile_topic(message_id)          # the labelled topic a bait or flood imitates, or None
"""

from __future__ import annotations

import base64
import json
import random
from functools import cache
from itertools import zip_longest
from typing import Any

from tests.support.mail.meaning_set.others import HERE, Drafted

#: The languages of the hostile mail, in the order they take turns.
HOSTILE_LANGUAGES = ("en", "de", "fr")
#: The kinds of hostile mail.
KINDS = ("salad", "stuffing", "bait", "junk", "flood")
#: Cyrillic letters that look like Latin ones (a ``homoglyphs`` disguise).
_HOMOGLYPHS = str.maketrans("aceopxyACEHKMOPTX", "асеорхуАСЕНКМОРТХ")
_ZERO_WIDTH = "\u200b"


@cache
def hostile_messages() -> dict[str, Any]:
    """``hostile.json``: its messages by language, and its floods by language."""
    loaded: dict[str, Any] = json.loads((HERE / "hostile.json").read_text(encoding="utf-8"))
    return loaded


def _made(kind: str, rng: random.Random) -> str:
    """A junk message's generated text: 400 random tokens, or a base64 blob of 2,400 random bytes."""
    if kind == "tokens":
        letters = "abcdefghijklmnopqrstuvwxyz0123456789"
        return " ".join("".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(400))
    blob = base64.b64encode(rng.randbytes(2400)).decode("ascii")
    return "\n".join(blob[start : start + 76] for start in range(0, len(blob), 76))


def _disguised(text: str, disguise: str | None) -> str:
    if disguise == "homoglyphs":
        return text.translate(_HOMOGLYPHS)
    if disguise == "zero-width":
        return "".join(f"{char}{_ZERO_WIDTH}" if char.isalpha() else char for char in text)
    return text


def _drafted(message_id: str, message: dict[str, Any], language: str) -> Drafted:
    body = message["body"]
    if "stuffing" in message:
        body = f"{body}\n\n{' '.join([message['stuffing']] * message['times'])}"
    if "made" in message:
        body = f"{body}\n\n{_made(message['made'], random.Random(message_id))}"
    disguise = message.get("disguise")
    return Drafted(
        message_id,
        message["from"],
        _disguised(message["subject"], disguise),
        _disguised(body, disguise),
        language,
    )


def _flood(language: str) -> list[Drafted]:
    """The flood of ``language``: its text ``copies`` times, each with its name, weekday, amount,
    reference and link."""
    flood = hostile_messages()["floods"][language]
    copies = []
    for number in range(flood["copies"]):
        slots = {
            "name": flood["names"][number % len(flood["names"])],
            "day": flood["days"][number % len(flood["days"])],
            "amount": f"{1 + (number * 37) % 300 / 100:.2f} {flood['currency']}",
            "reference": f"{'ABCDEFGH'[number % 8]}{(number * 7919) % 1000000:06d}",
            "domain": flood["domains"][number % len(flood["domains"])],
        }
        copies.append(
            Drafted(
                f"hostile-flood-{language}-{number + 1:03d}",
                flood["from"].format(**slots),
                flood["subject"].format(**slots),
                flood["body"].format(**slots),
                language,
            )
        )
    return copies


@cache
def hostile_mail() -> tuple[Drafted, ...]:
    """Every hostile message as the set drafts it, the languages in turn; in each language its written
    messages first, then its flood."""
    by_language = []
    for language in HOSTILE_LANGUAGES:
        counted: dict[str, int] = {}
        written = []
        for message in hostile_messages()["messages"][language]:
            counted[message["kind"]] = counted.get(message["kind"], 0) + 1
            message_id = f"hostile-{message['kind']}-{language}-{counted[message['kind']]:03d}"
            written.append(_drafted(message_id, message, language))
        by_language.append(written + _flood(language))
    return tuple(one for turn in zip_longest(*by_language) for one in turn if one is not None)


def hostile_kind(message_id: str) -> str | None:
    """The kind of the hostile message of ``message_id`` (None if it is no hostile message)."""
    parts = message_id.split("-")
    return parts[1] if parts[0] == "hostile" and len(parts) == 4 else None


@cache
def _topics() -> dict[str, str]:
    topics = {}
    for language in HOSTILE_LANGUAGES:
        counted = 0
        for message in hostile_messages()["messages"][language]:
            if message["kind"] == "bait":
                counted += 1
                topics[f"hostile-bait-{language}-{counted:03d}"] = message["topic"]
    return topics


def hostile_topic(message_id: str) -> str | None:
    """The labelled topic (a topic key) a bait or a flood's copy imitates; None for other messages."""
    if hostile_kind(message_id) == "flood":
        topic: str = hostile_messages()["floods"][message_id.split("-")[2]]["topic"]
        return topic
    return _topics().get(message_id)
