"""What a page of search by meaning costs in the index store (issue 80): ``about`` (its words ranked by
BM25 and its vector's nearest messages, fused) and ``like`` (a message's nearest), beside a ranked page of
the same words, at 100,000 and 1,000,000 messages.

``scripts/bench_meaning_search [--messages N ...] [--engine sqlite sqlite+tantivy] [--vectors model|random]
[--runs R] [--model english|multilingual]`` builds each store in a temporary directory as ``scripts/bench_vectors`` does (the
benchmarks' generated mail in 40 folders, stored as the sync stores it; the vectors by the pass behind
the words with the shipped model, or ``random`` unit vectors where embedding a million messages would take
most of the run: what a page costs does not depend on what the vectors say). Then, in a fresh process
that opens the store as a search does, it times first pages of 20 over every folder, each keeping its
first 2,000 places for its cursor as a first page through MCP does:

* ``words``: the store's ranked page of the words of each description, any of them (``about``'s words);
* ``about``: :class:`~mail_imap_mcp.services.search_meaning.MeaningRanking`'s page, the fused order of
  both (embedding the description included); ``about, no feedback``: the same without the description's
  vector fed back (:mod:`mail_imap_mcp.meaning.feedback`: one nearest, not two), and ``about, plain``:
  without feedback nor hubness reduction (the re-rank replaced by the nearest's own order), each timed
  right after ``about`` on the same store;
* ``like``: the same for a message (its passages embedded again, its nearest messages);
* and the parts of ``about``: ``words pool``, the store's first ``POOL`` by BM25 of its words,
  ``nearest pool``, the description embedded and the store's ``POOL`` nearest messages (``POOL``:
  :data:`mail_imap_mcp.services.search_meaning.POOL`), and ``hubness``, those nearest ordered again with
  hubness reduced (:func:`~mail_imap_mcp.services.search_meaning_hubs.dehubbed`: their densities, found
  by the pass and kept beside their vectors, read back), and ``hubness, cold``: the same with the
  reference read again and every density found against it (what a search pays just after the pass has
  drawn the reference again, until it has found the densities again).

With ``random`` vectors, the densities are found after them as the pass finds them (``index/densities.py``:
the reference drawn, every message's density found, a batch per transaction): the processor time of
that, a message, is printed too.

The descriptions are the meaning set's 32 English queries (tests/support/mail/meaning_set). Each case
runs over all of them ``runs`` times after one warm pass; it prints the median and the least (ms), the
CPU time of an ``about`` page with and without feedback (the median of ``runs`` passes over them, the two
alternately: what the load does not lengthen), the
first ``about`` of the process (the vectors' signatures read into memory) and the resident memory before
and after it, with the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "scripts")]

import bench_vectors  # noqa: E402  (after the path above)
from tests.support.mail.meaning_set import meaning_set  # noqa: E402

from mail_imap_mcp.config import IndexSettings  # noqa: E402
from mail_imap_mcp.index.densities import DensityKeeper  # noqa: E402
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore  # noqa: E402
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore  # noqa: E402
from mail_imap_mcp.index.store import Hit, IndexStore, PageAsk  # noqa: E402
from mail_imap_mcp.index.sync_vectors import fill_vectors  # noqa: E402
from mail_imap_mcp.index.vectors import Densities, VectorStore  # noqa: E402
from mail_imap_mcp.mail.ids import MessageRef  # noqa: E402
from mail_imap_mcp.meaning import feedback  # noqa: E402
from mail_imap_mcp.meaning.fusion import about_words  # noqa: E402
from mail_imap_mcp.meaning.model import ENGLISH, MULTILINGUAL, shipped_model  # noqa: E402
from mail_imap_mcp.query.tree import EVERYTHING, AnyOf, Contains  # noqa: E402
from mail_imap_mcp.services import search_meaning_near  # noqa: E402
from mail_imap_mcp.services.index_places import KEPT_PLACES  # noqa: E402
from mail_imap_mcp.services.search_meaning import POOL, MeaningRanking  # noqa: E402
from mail_imap_mcp.services.search_meaning_hubs import dehubbed, forget  # noqa: E402

STORES = {"sqlite": SqliteStore, "sqlite+tantivy": TantivyStore}
PAGE = 20
#: Messages ``like`` is timed on: one in each of this many folders.
LIKED = 8


def build(engine: str, count: int, vectors: str, path: Path, model_name: str) -> dict[str, float]:
    """The store of ``count`` messages at ``path``: words, then vectors; seconds and bytes of each."""
    store = STORES[engine](path)
    try:
        words_s = bench_vectors.build_words(store, count)
        words_bytes = bench_vectors.file_bytes(path)
        started = time.perf_counter()
        if vectors == "model":
            fill_vectors(store, shipped_model(model_name), lambda: False)
        else:
            bench_vectors.random_vectors(store, shipped_model(model_name).dimensions)
        vectors_s = time.perf_counter() - started
        # Random vectors are put whole: the pass then finds every density against its reference, once.
        densities_cpu = time.process_time()
        keeper = DensityKeeper(
            cast(VectorStore, store), shipped_model(model_name).name if vectors == "model" else "random"
        )
        keeper.fill(lambda: False, lambda: None)
        densities_cpu = time.process_time() - densities_cpu
        vectors_bytes = bench_vectors.file_bytes(path) - words_bytes
    finally:
        store.close()
    return {
        "words_s": words_s,
        "vectors_s": vectors_s,
        "words_b": words_bytes / count,
        "vectors_b": vectors_bytes / count,
        "density_ms": densities_cpu * 1000 / max(keeper.found, 1),
    }


def _timed(action: Callable[[Any], object], inputs: list[Any], runs: int) -> tuple[float, float]:
    """The median and least ms of ``action`` over ``inputs``, each ``runs`` times (after a warm pass)."""
    for each in inputs:
        action(each)
    samples = []
    for _ in range(runs):
        for each in inputs:
            started = time.perf_counter()
            action(each)
            samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), min(samples)


def _cpu(action: Callable[[Any], object], inputs: list[Any]) -> float:
    """The process's CPU ms a call of ``action`` takes over ``inputs`` (its threads' too: the words' part
    of ``about`` runs on a thread of its own), which the machine's load does not lengthen as it does the
    wall time."""
    started = time.process_time()
    for each in inputs:
        action(each)
    return (time.process_time() - started) * 1000 / len(inputs)


def measure(engine: str, path: Path, runs: int, model_name: str) -> dict[str, Any]:
    """In this (fresh) process: the store opened as a search opens it, each case timed."""
    store: IndexStore = STORES[engine](path)
    model = shipped_model(model_name)
    texts = [query.text for query in meaning_set().queries if query.language == "en"]
    folders = sorted(store.folders())
    ask: PageAsk = {"folders": folders, "order": "relevance", "limit": PAGE, "offset": 0, "keep": KEPT_PLACES}

    def words(text: str) -> object:
        tree = AnyOf(tuple(Contains("text", word) for word in about_words(text)))
        return store.search(tree, **ask).hits

    def about(text: str) -> object:
        return MeaningRanking(model, text, None, 0).page(store, EVERYTHING, ask)

    def like(ref: MessageRef) -> object:
        return MeaningRanking(model, None, ref, 0).page(store, EVERYTHING, ask)

    def words_pool(text: str) -> object:
        tree = AnyOf(tuple(Contains("text", word) for word in about_words(text)))
        return store.search(tree, folders=folders, order="relevance", limit=POOL, offset=0).hits

    vectors = cast(VectorStore, store)

    def nearest_pool(text: str) -> object:
        return vectors.nearest(model.embed([text])[0], None, folders, POOL)

    found: dict[str, Any] = {"words": _timed(words, texts, runs)}
    model.embed(["warm"])
    found["rss_before_mb"] = bench_vectors.rss_mb()
    started = time.perf_counter()
    about(texts[0])
    found["first_about_ms"] = (time.perf_counter() - started) * 1000
    found["rss_after_mb"] = bench_vectors.rss_mb()
    found["about"] = _timed(about, texts, runs)
    with mock.patch.object(feedback, "FEEDBACK_MESSAGES", 0):
        found["about, no feedback"] = _timed(about, texts, runs)
        with mock.patch.object(
            search_meaning_near, "dehubbed", lambda vectors, near, stored, rows=None: list(near)
        ):
            found["about, plain"] = _timed(about, texts, runs)
    fed, unfed = [], []
    for _ in range(runs):  # alternately, so that both see the same machine
        fed.append(_cpu(about, texts))
        with mock.patch.object(feedback, "FEEDBACK_MESSAGES", 0):
            unfed.append(_cpu(about, texts))
    found["cpu"] = (statistics.median(fed), statistics.median(unfed))
    liked = [MessageRef("bench", folder, 1, 1) for folder in folders[:LIKED]]
    found["like"] = _timed(like, liked, runs)
    found["words pool"] = _timed(words_pool, texts, runs)
    found["nearest pool"] = _timed(nearest_pool, texts, runs)
    pools = {text: cast("list[Hit]", nearest_pool(text)) for text in texts}

    def hubness(text: str) -> object:
        pool = pools[text]
        return dehubbed(vectors, pool, vectors.densities_of([(hit.folder, hit.uid) for hit in pool]))

    found["hubness"] = _timed(hubness, texts, runs)
    generation = vectors.density_reference()

    def hubness_cold(text: str) -> object:
        """Every density found afresh against the reference read again (as just after it is drawn again)."""
        forget(vectors)
        return dehubbed(vectors, pools[text], Densities(generation.generation if generation else 0, {}))

    found["hubness, cold"] = _timed(hubness_cold, texts, runs)
    store.close()
    return found


def main() -> None:
    if sys.argv[1:2] == ["measure"]:
        print(json.dumps(measure(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5])))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[100_000])
    parser.add_argument("--engine", nargs="+", choices=tuple(STORES), default=["sqlite"])
    parser.add_argument("--vectors", choices=("model", "random"), default="model")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--model",
        choices=(ENGLISH, MULTILINGUAL),
        default=IndexSettings().meaning_model,
        help="the shipped model (default: the default model)",
    )
    args = parser.parse_args()
    cases = (
        "words",
        "about",
        "about, no feedback",
        "about, plain",
        "like",
        "words pool",
        "nearest pool",
        "hubness",
        "hubness, cold",
    )
    print(
        f"model {args.model}\n\n| engine | messages | vectors | {' | '.join(f'{case}, ms' for case in cases)} "
        "| about / no feedback, CPU ms a page | first about, ms "
        "| RSS before / after it, MB | words / vectors, B a message | density, CPU ms a message | load |"
    )
    print(f"|---|---:|---|{'---:|' * len(cases)}---|---:|---|---|---:|---|")
    for engine in args.engine:
        for count in args.messages:
            with tempfile.TemporaryDirectory(prefix="bench-meaning-") as scratch:
                path = Path(scratch) / "index.sqlite3"
                built = build(engine, count, args.vectors, path, args.model)
                child = subprocess.run(
                    [sys.executable, __file__, "measure", engine, str(path), str(args.runs), args.model],
                    check=True,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                found = json.loads(child.stdout)
            cells = " | ".join(f"{found[case][0]:.1f} ({found[case][1]:.1f})" for case in cases)
            load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
            print(
                f"| {engine} | {count:,} | {args.vectors} | {cells} | "
                f"{found['cpu'][0]:.1f} / {found['cpu'][1]:.1f} | {found['first_about_ms']:.0f} | "
                f"{found['rss_before_mb']:.0f} / {found['rss_after_mb']:.0f} | "
                f"{built['words_b']:.0f} / {built['vectors_b']:.0f} | {built['density_ms']:.3f} | {load} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
