"""Recall at 10 of the meaning set's sets in every language among everyday distractors (issue 90):
``scripts/meaning_recall --distractors 10000``. For each mailbox of
tests/support/mail/meaning_set/languages.py (English; German and English over German; French and English
over French; the three languages in one mailbox), each engine and each half of the topics (tune,
held-out): words alone, meaning alone (the shipped model's exact cosine, and the index's own vectors as
``about`` ranks by them), ``about``, and ``like``: each of a query's relevant messages asked ``like``
(the mail nearest it in meaning, without it), the share of the others among its first ten (against at
most ten), averaged over them (it asks no text: the same for every query of a topic). A query with more than ten relevant messages (a topic of the
three-language mailbox) counts its first ten against ten.

With hostile mail (``--hostile``, tests/support/mail/meaning_set/hostile.py), a second table: the mean
number of hostile messages in a query's first ten, by kind, for words, meaning and ``about``; a bait or a
flood's copy among the first ten of a question of the very topic it imitates is counted apart ("on its
topic": it shares the question's subject, though it is not the mail asked for)."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from statistics import mean
from typing import TYPE_CHECKING, Any

from tests.support.mail.meaning_set.hostile import KINDS, hostile_kind, hostile_topic
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

    from mail_imap_mcp.index.engine import IndexEngine
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
#: The rankings the hostile mail is counted in, and the hostile table's cells after the kinds.
HOSTILE_COLUMNS = COLUMNS[:4]
HOSTILE_CELLS = (*KINDS, "all", "all, tune", "all, held-out", "on its topic")


def hostile_counts(ranking: Ranking, mailbox: Mailbox, queries: list[SetQuery]) -> dict[str, float]:
    """The mean number of hostile messages in the first :data:`K` of ``ranking`` for each of ``queries``:
    by kind (a bait or flood on its own topic left out), all of them (over every query and each half), and
    the baits and floods on the topic they imitate."""
    found: dict[str, list[int]] = {cell: [] for cell in HOSTILE_CELLS}
    for query in queries:
        counted = dict.fromkeys(HOSTILE_CELLS, 0)
        for message_id in ranking(query)[:K]:
            kind = hostile_kind(message_id)
            if kind is None:
                continue
            counted["all"] += 1
            if hostile_topic(message_id) == query.id.split("/")[0]:
                counted["on its topic"] += 1
            else:
                counted[kind] += 1
        half = mailbox.half[query.id]
        counted[f"all, {half}"] = counted["all"]
        for cell in HOSTILE_CELLS:
            if not cell.startswith("all, ") or cell == f"all, {half}":
                found[cell].append(counted[cell])
    return {cell: mean(values) if values else 0.0 for cell, values in found.items()}


def _remembering(ranking: Ranking) -> Ranking:
    """``ranking``, each query ranked once (recall and the hostile table read the same ranking)."""
    ranked: dict[str, list[str]] = {}

    def remembered(query: SetQuery) -> list[str]:
        if query.id not in ranked:
            ranked[query.id] = ranking(query)
        return ranked[query.id]

    return remembered


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


@contextlib.contextmanager
def engine_settings(engines: list[str]) -> Iterator[Callable[[str], dict[str, Any]]]:
    """What makes each engine's ``[index]`` table: ``postgresql`` in a new database of a PostgreSQL with
    pgvector started for the run (as the tests start it, on loopback) and stopped at its end."""
    if "postgresql" not in engines:
        yield lambda engine: IndexSettings(index_engine=engine).model_dump()
        return
    from tests.support.servers.postgres import PostgresServer, index_table, pgvector_bin

    with PostgresServer(programs=pgvector_bin()) as server:

        def settings(engine: str) -> dict[str, Any]:
            if engine == "postgresql":
                return IndexSettings.model_validate(index_table(server)).model_dump()
            return IndexSettings(index_engine=engine).model_dump()

        yield settings


def opened_store(scratch: str, settings: dict[str, Any]) -> tuple[IndexEngine, IndexStore]:
    """The engine of the ``[index]`` table ``settings`` (files in ``scratch``) and a new store in it."""
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    config = Config.model_validate({"server": {"index_dir": scratch}, "index": settings})
    opened = open_engine(config)
    return opened, opened.location("recall", account).open().store


def _rows(
    mailbox: Mailbox, engine: str, settings: dict[str, Any], scratch: str, hostile: list[str]
) -> list[str]:
    """The table's rows of one mailbox on one engine; the hostile table's rows added to ``hostile``."""
    opened, store = opened_store(scratch, settings)
    try:
        fill(store, mailbox.labelled)
        model = shipped_model()
        rankings = {
            "words": _remembering(by_words(store, mailbox.labelled)),
            "meaning (exact cosine)": _remembering(by_meaning(model, mailbox.labelled)),
            "meaning (index)": _remembering(by_nearest(store, mailbox.labelled, model)),
            "about": _remembering(by_about(store, mailbox.labelled, model)),
        }
        rows = []
        holds_hostile = any(hostile_kind(message.id) for message in mailbox.labelled.messages)
        for name, queries in mailbox.sets.items():
            ids = [query.id for query in queries]
            if holds_hostile:
                for column in HOSTILE_COLUMNS:
                    counts = hostile_counts(rankings[column], mailbox, queries)
                    shown = " | ".join(f"{counts[cell]:.2f}" for cell in HOSTILE_CELLS)
                    hostile.append(f"| {name} | {engine} | {column} | {shown} |")
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


def report(distractors: int, engines: list[str], personal: int = 0, hostile: int = 0) -> None:
    """Print the table of every mailbox among ``distractors`` everyday messages (``personal`` of them
    one-off personal mail, ``hostile`` of them hostile mail), on each of ``engines``; with hostile mail,
    the hostile table after it."""
    started = time.process_time()
    print(
        f"recall@10 among {distractors:,} distractors ({personal} of them personal mail, {hostile} hostile), model "
        f"{shipped_model().name}; load "
        f"{', '.join(f'{n:.1f}' for n in os.getloadavg())}\n"
    )
    print(f"| set | engine | half (queries) | {' | '.join(COLUMNS)} |")
    print(f"|---|---|---|{'---:|' * len(COLUMNS)}")
    hostile_rows: list[str] = []
    with engine_settings(engines) as settings:
        for mailbox in mailboxes(distractors, personal, hostile):
            for engine in engines:
                with tempfile.TemporaryDirectory(prefix="meaning-recall-") as scratch:
                    for row in _rows(mailbox, engine, settings(engine), scratch, hostile_rows):
                        print(row, flush=True)
    if hostile_rows:
        print(
            "\nHostile messages in the first ten, a query's mean, by kind (a bait or flood on the topic it "
            "imitates counted apart):\n"
        )
        print(f"| set | engine | ranking | {' | '.join(HOSTILE_CELLS)} |")
        print(f"|---|---|---|{'---:|' * len(HOSTILE_CELLS)}")
        print("\n".join(hostile_rows))
    print(
        f"\n{time.process_time() - started:.0f} CPU-s; load at the end "
        f"{', '.join(f'{n:.1f}' for n in os.getloadavg())}"
    )
