"""One-off personal mail (issue 90): the sparse distractors' control.

``personal.json``: messages from friends, family, neighbours, clubs and volunteers in English, German and
French, each on its own subject and none on a labelled topic of the meaning set. The everyday distractors
(``others.json``, :mod:`tests.support.mail.realmail`) are crowds of look-alikes, each message near many
others; the labelled mail is not, and neither is a real mailbox's personal mail. ``scripts/meaning_recall
--distractors N --personal`` swaps these messages in for as many everyday distractors
(:func:`tests.support.mail.meaning_set.languages.distractors`).

API::

    personal_mail()                    # Drafted, id "personal-<language>-<n>", the languages in turn
"""

from __future__ import annotations

import json
from functools import cache
from itertools import zip_longest

from tests.support.mail.meaning_set.others import HERE, Drafted

#: The languages of the personal mail, in the order they take turns.
PERSONAL_LANGUAGES = ("en", "de", "fr")


@cache
def personal_messages() -> dict[str, list[dict[str, str]]]:
    """The messages of ``personal.json`` by language: from, subject, body."""
    loaded: dict[str, list[dict[str, str]]] = json.loads(
        (HERE / "personal.json").read_text(encoding="utf-8")
    )["messages"]
    return loaded


@cache
def personal_mail() -> tuple[Drafted, ...]:
    """Every personal message as the set drafts it, the languages in turn (English, German, French,
    English...), so that the first ``n`` hold the three languages alike."""
    by_language = [
        [
            Drafted(f"personal-{language}-{number:03d}", m["from"], m["subject"], m["body"], language)
            for number, m in enumerate(personal_messages()[language], 1)
        ]
        for language in PERSONAL_LANGUAGES
    ]
    return tuple(one for turn in zip_longest(*by_language) for one in turn if one is not None)
