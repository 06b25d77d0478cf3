"""Recall at 10 of the meaning set's sets in every language among everyday distractors (issue 90):
``scripts/meaning_recall --distractors 10000``. For each mailbox of
tests/support/mail/meaning_set/languages.py (English; German and English over German; French and English
over French; the three languages in one mailbox), each engine and each half of the topics (tune,
held-out): words alone, meaning alone (the shipped model's exact cosine, and the index's own vectors as
``about`` ranks by them), ``about``, and ``like``: each of a query's relevant messages asked ``like``
(the mail nearest it in meaning, without it), the share of the others among its first ten (against at
most ten), averaged over them (it asks no text: the same for every query of a topic). A query with more than ten relevant messages (a topic of the
three-language mailbox) counts its first ten against ten."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from statistics import mean
from typing import TYPE_CHECKING

from tests.support.mail.meaning_set.languages import HALVES, Mailbox, mailboxes
from tests.support.mail.meaning_set.recall import (
    K,
    Ranking,
    Remembered,
    by_about,
    by_like,
    by_meaning,
    by_nearest,
    by_words,
    fill,
    like_recall,
)

from mail_imap_mcp.config import AccountConfig, Config, IndexSettings
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.meaning.model import TextModel
from mail_imap_mcp.meaning.model import shipped_model as shipped

if TYPE_CHECKING:
    from tests.support.mail.meaning_set import SetQuery

    from mail_imap_mcp.index.store import IndexStore

#: The shipped model measured (``scripts/meaning_recall --model``; the default model by default).
MODEL = IndexSettings().meaning_model


_remembered: dict[str, Remembered] = {}


def shipped_model() -> TextModel:
    """The shipped model :data:`MODEL` names, each text embedded once for the process."""
    if MODEL not in _remembered:
        _remembered[MODEL] = Remembered(shipped(MODEL))
    return _remembered[MODEL]


#: The rankings of a row, in the table's order.
COLUMNS = ("words", "meaning (exact cosine)", "meaning (index)", "about", "like")


def _recall(ranking: Ranking, mailbox: Mailbox, queries: list[str]) -> dict[str, float]:
    """Recall at :data:`K` (against at most ``K`` relevant) of ``ranking``, over each half and all."""
    return _halves(
        mailbox,
        queries,
        lambda query: len(query.relevant.intersection(ranking(query)[:K])) / min(K, len(query.relevant)),
    )


def _like(store: IndexStore, mailbox: Mailbox, model: TextModel, queries: list[str]) -> dict[str, float]:
    """``like``'s recall at :data:`K` of each query's relevant messages, over each half and all."""
    liked = by_like(store, mailbox.labelled, model)
    #: Each topic's figure, once: every query of a topic has the same relevant messages.
    kept: dict[frozenset[str], float] = {}

    def score(query: SetQuery) -> float:
        if query.relevant not in kept:
            kept[query.relevant] = like_recall(liked, query.relevant)
        return kept[query.relevant]

    return _halves(mailbox, queries, score)


def _halves(mailbox: Mailbox, queries: list[str], score: Callable[[SetQuery], float]) -> dict[str, float]:
    """``score`` of each of ``queries``, averaged over each half and all."""
    asked = {query.id: query for found in mailbox.sets.values() for query in found}
    found = {name: score(asked[name]) for name in queries}
    by_half = {half: [found[name] for name in queries if mailbox.half[name] == half] for half in HALVES}
    return {"all": mean(found.values()), **{half: mean(cells) for half, cells in by_half.items() if cells}}


def _rows(mailbox: Mailbox, engine: str, scratch: str) -> list[str]:
    """The table's rows of one mailbox on one engine."""
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    config = Config.model_validate(
        {"server": {"index_dir": scratch}, "index": IndexSettings(index_engine=engine).model_dump()}
    )
    opened = open_engine(config)
    store = opened.location("recall", account).open().store
    try:
        fill(store, mailbox.labelled)
        model = shipped_model()
        rankings = {
            "words": by_words(store, mailbox.labelled),
            "meaning (exact cosine)": by_meaning(model, mailbox.labelled),
            "meaning (index)": by_nearest(store, mailbox.labelled, model),
            "about": by_about(store, mailbox.labelled, model),
        }
        rows = []
        for name, queries in mailbox.sets.items():
            ids = [query.id for query in queries]
            cells = {
                column: _recall(rankings[column], mailbox, ids) for column in COLUMNS if column != "like"
            }
            cells["like"] = _like(store, mailbox, model, ids)
            for half in ("all", *HALVES):
                counted = sum(1 for query in ids if half == "all" or mailbox.half[query] == half)
                values = " | ".join(f"{cells[column][half]:.2f}" for column in COLUMNS)
                rows.append(f"| {name} | {engine} | {half} ({counted}) | {values} |")
        return rows
    finally:
        store.close()
        opened.close()


def report(distractors: int, engines: list[str], personal: int = 0) -> None:
    """Print the table of every mailbox among ``distractors`` everyday messages (``personal`` of them
    one-off personal mail), on each of ``engines``."""
    started = time.process_time()
    print(
        f"recall@10 among {distractors:,} distractors ({personal} of them personal mail), model "
        f"{shipped_model().name}; load "
        f"{', '.join(f'{n:.1f}' for n in os.getloadavg())}\n"
    )
    print(f"| set | engine | half (queries) | {' | '.join(COLUMNS)} |")
    print(f"|---|---|---|{'---:|' * len(COLUMNS)}")
    for mailbox in mailboxes(distractors, personal):
        for engine in engines:
            with tempfile.TemporaryDirectory(prefix="meaning-recall-") as scratch:
                for row in _rows(mailbox, engine, scratch):
                    print(row, flush=True)
    print(
        f"\n{time.process_time() - started:.0f} CPU-s; load at the end "
        f"{', '.join(f'{n:.1f}' for n in os.getloadavg())}"
    )
