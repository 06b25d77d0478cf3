"""scripts/meaning_language_gaps.py: each message's best passage's cosine to a question, and where the
messages wanted rank by it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from meaning_language_gaps import Mail

from tests.support.mail.meaning_set import MeaningSet, placed
from tests.support.mail.meaning_set.others import Drafted

#: The words the fake model sees, one dimension each.
WORDS = ("carte", "train", "loyer")


class WordModel:
    """A model whose vector of a text counts the words of :data:`WORDS` it holds (length 1)."""

    name = "words"
    dimensions = len(WORDS)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.array([[text.lower().count(word) for word in WORDS] for text in texts], dtype=np.float32)
        lengths = np.linalg.norm(rows, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(rows, lengths, out=np.zeros_like(rows), where=lengths > 0)
        return unit

    def rest(self) -> None:
        """Nothing is kept between calls."""


def _mail() -> Mail:
    drafted = [
        Drafted("train", "a@example.org", "Le train", "Le train part à huit heures.", "fr"),
        Drafted("card", "b@example.org", "Votre carte", "Votre carte est bloquée.", "fr"),
        Drafted("both", "c@example.org", "Le loyer", "Le loyer, puis la carte.", "fr"),
        # Two passages: 40 trains, then the card alone.
        Drafted("long", "d@example.org", "Avis", "Le train part. " * 40 + "Votre carte arrive.", "fr"),
    ]
    return Mail(WordModel(), MeaningSet(placed(drafted), ()))


def test_a_message_is_as_near_as_its_best_passage() -> None:
    mail = _mail()
    found = mail.best(WordModel().embed(["carte"])[0])
    cosines = {one: round(float(value), 3) for one, value in zip(mail.ids, found, strict=True)}
    assert cosines == {"train": 0.0, "card": 1.0, "both": 0.447, "long": 1.0}


def test_the_messages_wanted_rank_from_one_nearest_first() -> None:
    mail = _mail()
    question = WordModel().embed(["carte"])[0]
    # Equal cosines keep the mailbox's order: the card, then the long notice.
    assert mail.ranks(question, ["both", "card"]) == [1, 3]
    assert mail.ranks(question, ["train", "long"]) == [2, 4]
