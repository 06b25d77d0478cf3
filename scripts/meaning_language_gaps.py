"""How far each question of the German and French sets is from its topic's mail, by the question's
language and the mail's (issue 90): ``scripts/meaning_language_gaps [--distractors N] [--model ...]``.

For each topic of tests/support/mail/meaning_set/languages.json and each pair (question's language ->
mail's language: en, de and fr over de and fr), the mean cosine of the question to its topic's four
messages, each message by its best passage as the index ranks it (the shipped model's exact cosine);
with ``--distractors N``, also where each of the four ranks by that cosine in the mailbox of its language
(languages.py: the N everyday distractors and the set's mail of that language), first rank 1. The means of
each half (tune, held-out) close the table.

It tells a question that says its topic loosely from mail the model places far: where the German question
over the French mail comes nearer than the French question does, the French mail is not what is far."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.support.mail.meaning_set.languages import HALVES, mailboxes, topics  # noqa: E402
from tests.support.mail.meaning_set.recall import passages  # noqa: E402

from mail_imap_mcp.config import IndexSettings  # noqa: E402  (after the path above)
from mail_imap_mcp.meaning.model import ENGLISH, MULTILINGUAL, TextModel, shipped_model  # noqa: E402

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from tests.support.mail.meaning_set import MeaningSet

#: The pairs measured: the question's language, the mail's.
PAIRS = (("de", "de"), ("fr", "fr"), ("en", "de"), ("en", "fr"), ("de", "fr"), ("fr", "de"))
#: The pairs whose ranks are printed with ``--distractors``.
RANKED = (("de", "de"), ("fr", "fr"), ("de", "fr"), ("en", "fr"))


class Mail:
    """The passages of some messages embedded once: each message's best cosine to a question."""

    def __init__(self, model: TextModel, labelled: MeaningSet) -> None:
        import numpy as np

        owners, texts = [], []
        for number, message in enumerate(labelled.messages):
            for passage in passages(message):
                owners.append(number)
                texts.append(passage)
        self.ids = [message.id for message in labelled.messages]
        self._owners = np.asarray(owners)
        self._rows = model.embed(texts)

    def best(self, question: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Each message's best passage's cosine to ``question``."""
        import numpy as np

        found = np.full(len(self.ids), -2.0, dtype=np.float32)
        np.maximum.at(found, self._owners, self._rows @ question)
        return found

    def ranks(self, question: npt.NDArray[np.float32], wanted: list[str]) -> list[int]:
        """Where each of ``wanted`` ranks by :meth:`best` (1: first), in order."""
        import numpy as np

        order = np.argsort(-self.best(question), kind="stable")
        place = {self.ids[row]: rank for rank, row in enumerate(order.tolist(), start=1)}
        return sorted(place[one] for one in wanted)


def report(model: TextModel, distractors: int | None) -> None:
    """Print the table of every topic, and each half's means."""
    keys = [topic["key"] for topic in topics()]
    questions = {
        (topic["key"], language): model.embed([topic["queries"][language]])[0]
        for topic in topics()
        for language in ("en", "de", "fr")
    }
    own: dict[str, Mail] = {}
    wanted: dict[tuple[str, str], list[str]] = {}
    named = {"German": "de", "French": "fr"}
    for mailbox in mailboxes(distractors or 0):
        if (language := named.get(mailbox.name)) is not None:
            own[language] = Mail(model, mailbox.labelled)
            for key in keys:
                wanted[key, language] = [f"{key}-{language}-{n}" for n in range(1, 5)]
    cosines: dict[tuple[str, str, str], float] = {}
    for key in keys:
        for asked, written in PAIRS:
            found = own[written].best(questions[key, asked])
            at = {one: n for n, one in enumerate(own[written].ids)}
            cosines[key, asked, written] = float(mean(float(found[at[one]]) for one in wanted[key, written]))
    pairs = " | ".join(f"{a} -> {w}" for a, w in PAIRS)
    ranked = " | ".join(f"ranks {a} -> {w}" for a, w in RANKED) if distractors else ""
    print(
        f"mean cosine of each question to its topic's 4 messages, model {model.name}"
        + (f"; ranks among {distractors:,} distractors" if distractors else "")
        + f"; load {', '.join(f'{n:.1f}' for n in os.getloadavg())}\n"
    )
    print(f"| topic | half | {pairs} |{' ' + ranked + ' |' if ranked else ''}")
    print(f"|---|---|{'---:|' * len(PAIRS)}{'---|' * len(RANKED) if ranked else ''}")
    half = {topic["key"]: topic["half"] for topic in topics()}
    for key in keys:
        cells = " | ".join(f"{cosines[key, a, w]:.3f}" for a, w in PAIRS)
        if distractors:
            places = [own[w].ranks(questions[key, a], wanted[key, w]) for a, w in RANKED]
            cells += " | " + " | ".join(", ".join(str(p) for p in one) for one in places)
        print(f"| {key} | {half[key]} | {cells} |")
    for name in HALVES:
        chosen = [key for key in keys if half[key] == name]
        cells = " | ".join(f"{mean(cosines[key, a, w] for key in chosen):.3f}" for a, w in PAIRS)
        print(f"| mean | {name} | {cells} |{' |' * len(RANKED) if ranked else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distractors", type=int, help="also rank each message among this many others")
    parser.add_argument("--model", choices=(ENGLISH, MULTILINGUAL), default=IndexSettings().meaning_model)
    args = parser.parse_args()
    report(shipped_model(args.model), args.distractors)


if __name__ == "__main__":
    main()
