"""Recall at 10 on the meaning set (tests/support/mail/meaning_set, issue 80 item 5), per half of its
queries: words alone (the engine's BM25 on an index store of the set), meaning alone (the shipped model,
exact cosine over the messages' passages; and through the index's own stored vectors), and ``about`` (words
and meaning fused, services/search_meaning.py). The figures of docs/search.md.

``scripts/meaning_recall [--engine sqlite|sqlite+tantivy|postgresql] [--others N] [--weak]`` builds the set's index in a
temporary directory and prints a Markdown table with the load average (the machine may be shared);
``--others`` mixes the labelled messages into N other messages instead of the set's 1,200 (the same
templates, more of them: the same queries against a larger mailbox). ``--weak``
adds what the shipped model does poorly: each paraphrase's recall by meaning alone, the recall as other
mail is added (none, 100, 300, all 1,200), and very short texts (one-word queries: the first word of each
keyword query; messages of their subject alone).

``--model english|multilingual`` names the shipped model measured (``[index] meaning_model``; english
unless given). ``scripts/meaning_recall --distractors 10000 [--engine ...]`` measures instead the sets in English, German
and French among that many everyday messages, on both engines unless one is named
(scripts/meaning_recall_languages.py, issue 90); ``--personal [N]`` puts N (all unless given) of the set's
one-off personal messages (tests/support/mail/meaning_set/personal.json: sparse mail, each on its own
subject) in place of as many of the everyday distractors; ``--hostile [N]`` likewise N (all unless given) of
its hostile mail (tests/support/mail/meaning_set/hostile.json: topic salad, keyword stuffing, query bait,
junk, a flood), and counts them in each query's first ten.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.support.mail.meaning_set import OTHERS, MeaningSet, meaning_set  # noqa: E402
from tests.support.mail.meaning_set.hostile import hostile_mail  # noqa: E402
from tests.support.mail.meaning_set.personal import personal_mail  # noqa: E402
from tests.support.mail.meaning_set.recall import (  # noqa: E402
    Ranking,
    by_about,
    by_meaning,
    by_nearest,
    by_words,
    fill,
    recall,
    recall_at,
    table,
)
from tests.support.mail.meaning_set.words import content_words  # noqa: E402

from mail_imap_mcp.config import IndexSettings  # noqa: E402  (after the path above)
from mail_imap_mcp.meaning.model import ENGLISH, MULTILINGUAL, TextModel  # noqa: E402
from mail_imap_mcp.meaning.model import shipped_model as shipped  # noqa: E402

if TYPE_CHECKING:
    from mail_imap_mcp.index.store import IndexStore

ENGINES = ["sqlite", "sqlite+tantivy"]
#: The shipped model measured (``--model``).
MODEL = IndexSettings().meaning_model


def shipped_model() -> TextModel:
    """The shipped model ``--model`` names."""
    return shipped(MODEL)


def _weak(labelled: MeaningSet, store: IndexStore) -> None:
    """What the shipped model does poorly, in figures."""
    model = shipped_model()
    ranking = by_meaning(model, labelled)
    print("\nEach paraphrase, meaning only:\n\n| query | recall@10 |\n|---|---:|")
    for query in labelled.queries:
        if query.kind == "paraphrase":
            print(f"| {query.text} ({query.language}) | {recall_at(ranking(query), query.relevant):.2f} |")
    print("\nMeaning only as other mail is added:\n")
    columns = {}
    for count in (0, 100, 300, 1200):
        fewer = dataclasses.replace(
            labelled,
            messages=tuple(
                m for m in labelled.messages if not m.id.startswith("other-") or int(m.id[6:]) < count
            ),
        )
        columns[f"{count:,} others"] = recall(by_meaning(model, fewer), fewer)
    print(table(columns, labelled))
    one_word = tuple(
        dataclasses.replace(query, text=content_words(query.text)[0])
        for query in labelled.queries
        if query.kind == "keyword"
    )
    short = dataclasses.replace(labelled, queries=one_word)
    print("\nVery short texts: one-word queries (the first word of each keyword query):\n")
    print(
        table(
            {
                "words only": recall(by_words(store, short), short),
                "meaning only": recall(by_meaning(model, short), short),
            },
            short,
        )
    )
    print("\nVery short texts: each message embedded by its subject alone, meaning only:\n")
    subjects = by_meaning(model, labelled, passages_of=lambda message: [message.subject])
    print(table({"subject alone": recall(subjects, labelled)}, labelled))


def _halves_table(rankings: dict[str, Ranking], labelled: MeaningSet) -> str:
    """Recall at 10 of each ranking on the English paraphrases' halves A and B (as scripts/meaning_methods
    splits them)."""
    english = [query for query in labelled.queries if query.kind == "paraphrase" and query.language == "en"]
    halves = {"A": english[0::2], "B": english[1::2]}
    lines = [f"| half | {' | '.join(rankings)} |", f"|---|{'---:|' * len(rankings)}"]
    for half, queries in halves.items():
        cells = [mean(recall_at(ranking(q), q.relevant) for q in queries) for ranking in rankings.values()]
        lines.append(f"| {half} ({len(queries)}) | {' | '.join(f'{cell:.2f}' for cell in cells)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--engine",
        choices=(*ENGINES, "postgresql"),
        default=None,
        help="one engine (default: sqlite, and with --distractors sqlite+tantivy too); postgresql: a "
        "PostgreSQL with pgvector started for the run, as the tests start it",
    )
    parser.add_argument(
        "--others", type=int, default=OTHERS, help="other messages the labelled are mixed into"
    )
    parser.add_argument("--weak", action="store_true", help="add what the shipped model does poorly")
    parser.add_argument(
        "--distractors", type=int, help="measure the sets of every language among this many everyday messages"
    )
    #: The mail swapped in for as many distractors: its option, how much there is, what it is.
    swapped = {
        "--personal": (len(personal_mail()), "one-off personal mail"),
        "--hostile": (len(hostile_mail()), "hostile mail"),
    }
    for option, (held, what) in swapped.items():
        parser.add_argument(
            option,
            type=int,
            nargs="?",
            const=held,
            default=0,
            help=f"with --distractors: this many of them {what} (all of it unless given)",
        )
    parser.add_argument(
        "--model",
        choices=(ENGLISH, MULTILINGUAL),
        default=IndexSettings().meaning_model,
        help="the shipped model (default: the default model)",
    )
    args = parser.parse_args()
    for option in swapped:
        if getattr(args, option[2:]) and args.distractors is None:
            parser.error(f"{option} swaps in distractors: give --distractors N too")
    global MODEL
    MODEL = args.model
    if args.distractors is not None:
        import meaning_recall_languages

        meaning_recall_languages.MODEL = args.model
        meaning_recall_languages.report(
            args.distractors, [args.engine] if args.engine else ENGINES, args.personal, args.hostile
        )
        return
    args.engine = args.engine or ENGINES[0]
    labelled = meaning_set(args.others)
    from meaning_recall_languages import engine_settings, opened_store

    with (
        engine_settings([args.engine]) as settings,
        tempfile.TemporaryDirectory(prefix="meaning-recall-") as scratch,
    ):
        engine, store = opened_store(scratch, settings(args.engine))
        try:
            fill(store, labelled)
            columns = {
                f"words only ({args.engine})": recall(by_words(store, labelled), labelled),
                f"meaning only ({shipped_model().name})": recall(
                    by_meaning(shipped_model(), labelled), labelled
                ),
                "meaning only (the index's vectors, hubness reduced, fed back)": recall(
                    by_nearest(store, labelled, shipped_model()), labelled
                ),
                "about (words and meaning fused)": recall(
                    by_about(store, labelled, shipped_model()), labelled
                ),
            }
            rankings = {
                "words only": by_words(store, labelled),
                "meaning only (exact cosine)": by_meaning(shipped_model(), labelled),
                "meaning only (the index's vectors, hubness reduced, fed back)": by_nearest(
                    store, labelled, shipped_model()
                ),
                "about": by_about(store, labelled, shipped_model()),
            }
            relevant = len(set().union(*(query.relevant for query in labelled.queries)))
            print(
                f"recall@10 on the meaning set: {len(labelled.queries)} queries, {relevant} relevant messages "
                f"among {len(labelled.messages):,}; load {', '.join(f'{n:.1f}' for n in os.getloadavg())}\n"
            )
            print(table(columns, labelled))
            print(
                "\nThe English paraphrases in two halves (A: the 1st, 3rd, ... English topic; B: the others):\n"
            )
            print(_halves_table(rankings, labelled))
            if args.weak:
                _weak(labelled, store)
        finally:
            store.close()
            engine.close()


if __name__ == "__main__":
    main()
