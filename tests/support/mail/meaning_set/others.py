"""The meaning set's other mail: everyday business and personal messages no query of the set asks for,
made from the templates and vocabularies of ``others.json``, the same for the same ``count`` and
``seed``."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
#: Categories whose mail comes from a person (made of the vocabulary's names), not a fixed sender.
_PERSON = "person"


@dataclass(frozen=True)
class Drafted:
    """One generated message, before the set gives it a date, a folder and a UID."""

    id: str
    sender: str
    subject: str
    body: str
    language: str


@cache
def _templates() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((HERE / "others.json").read_text(encoding="utf-8"))
    return loaded


def _key(name: str) -> str:
    """A name as a domain label: ``Kettle & Co`` -> ``kettleco``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _slots(rng: random.Random, vocabulary: dict[str, list[str]]) -> dict[str, str]:
    slots = {name: rng.choice(values) for name, values in vocabulary.items()}
    for name in ("shop", "company", "service"):
        slots[f"{name}_key"] = _key(slots[name])
    return slots


def other_messages(count: int, seed: int) -> list[Drafted]:
    """``count`` messages of :func:`iter_other_messages`, as a list."""
    return list(iter_other_messages(count, seed))


def iter_other_messages(count: int, seed: int) -> Iterator[Drafted]:
    """``count`` messages over the categories, each drawn by its weight: a subject, the body that goes
    with it (sometimes another of the category's after it) and a closing, every slot filled from the
    vocabulary."""
    templates = _templates()
    categories = templates["categories"]
    weights = [category["weight"] for category in categories]
    rng = random.Random(seed)
    for number in range(count):
        category = rng.choices(categories, weights)[0]
        slots = _slots(rng, templates["vocabulary"])
        if category["from"] == _PERSON:
            sender = "{first} {last} <{first_l}.{last_l}@{domain}>".format(
                first_l=slots["first"].lower(), last_l=slots["last"].lower(), **slots
            )
        else:
            sender = category["from"].format(**slots)
        lead = rng.randrange(len(category["subjects"]))
        subject = category["subjects"][lead].format(**slots)
        if category["from"] == _PERSON and rng.random() < 0.25:
            subject = "Re: " + subject
        bodies = category["bodies"]
        sentences = [bodies[lead % len(bodies)]]
        if rng.random() < 0.3:
            sentences.append(rng.choice([body for body in bodies if body != sentences[0]]))
        closing = rng.choice(templates["closings"][category["language"]])
        body = "\n\n".join(sentence.format(**slots) for sentence in [*sentences, closing] if sentence)
        yield Drafted(f"other-{number:04d}", sender, subject, body, category["language"])
