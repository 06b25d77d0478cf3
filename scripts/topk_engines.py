"""Top 20 by relevance without scoring every match: FTS5 as the index uses it against Tantivy, on the text of
an index built by ``mail-imap-mcp index`` (issue 51 item 1, the measurements that decide the engine).

``scripts/topk_engines INDEX_FILE`` (e.g. ``.bench/index-run/ix/default.<tag>.sqlite3`` after
``scripts/bench --index-only --index-messages 1000000``) reads every stored message's text columns,
builds a Tantivy index of them (one text field per column, the column's BM25 weight as the field's
boost), and times, for the bench's queries (the same picks as ``scripts/benchmark/index.py``):

* FTS5: ``bm25()`` over every match, ``ORDER BY rank LIMIT 20`` (what the store runs), and the count;
* Tantivy: the top 20 (``count=False``: its collector skips blocks whose best score cannot enter the
  top 20, block-max WAND), the count alone, and every match scored (a limit of every hit: nothing is
  skipped), and whether the top 20 equals the first 20 of every match scored (it must: the skipping is
  exact).

Tantivy is not a dependency of the project: the wrapper installs it into ``.bench/tantivy-venv``. The two
engines' scores differ (FTS5 weighs a column's term counts into one BM25 over the message's length,
Tantivy sums a BM25 per field): the figures compare costs, not rankings.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import tantivy  # type: ignore[import-not-found,unused-ignore]

#: As :data:`mail_imap_mcp.index.store.TEXT_COLUMNS` and ``COLUMN_WEIGHTS`` (this script runs without
#: the project's dependencies, in Tantivy's virtualenv).
COLUMNS = (
    "subject",
    "sender",
    "recipients_to",
    "recipients_cc",
    "list_id",
    "message_id",
    "body",
    "quoted",
    "attachments",
    "attachment_text",
)
WEIGHTS = (10.0, 6.0, 3.0, 2.0, 2.0, 1.0, 2.0, 0.3, 4.0, 1.0)
BM25 = f"bm25(fts, {', '.join(str(w) for w in (*WEIGHTS, 0.0))})"
RUNS = 15


def _median_ms(action: Callable[[], Any], runs: int, *, drain: bool = False) -> float:
    """The median time of ``action`` over ``runs``; ``drain``: it returns a cursor, read to its end."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        done = action()
        if drain:
            done.fetchall()
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples) * 1000, 2)


def _queries(db: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """(label, FTS5 MATCH, Tantivy query) of the bench's picks, and ``team OR itinerary``'s kind."""
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, 'col')")
    total = db.execute("SELECT count(*) FROM messages").fetchone()[0]

    def pick(low: float, high: float, glob: str) -> str:
        row = db.execute(
            "SELECT term FROM temp.vocab WHERE col = 'body' AND doc BETWEEN ? AND ? AND length(term) > 1 "
            "AND term GLOB ? ORDER BY doc DESC, term LIMIT 1",
            (max(int(total * low), 1), max(int(total * high), 1), glob),
        ).fetchone()
        return str(row[0])

    rare, common = pick(0.0, 0.0, "[0-9][0-9][0-9][0-9]*"), pick(0.5, 0.95, "[a-z][a-z][a-z][a-z]*")
    every = " OR ".join(f"{column}:{{word}}" for column in COLUMNS)
    return [
        ("sender word", "sender : dvolkov", "sender:dvolkov"),
        ("subject word", "subject : itinerary", "subject:itinerary"),
        ("rare word", rare, every.format(word=rare)),
        ("any column: itinerary", "itinerary", every.format(word="itinerary")),
        (
            f"scored: {common} OR itinerary",
            f"{common} OR itinerary",
            every.format(word=common) + " OR " + every.format(word="itinerary"),
        ),
    ]


def build(db: sqlite3.Connection, where: Path) -> tuple[Any, dict[str, float]]:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("id", stored=True, indexed=False, fast=True)
    for column in COLUMNS:
        builder.add_text_field(column, stored=False, tokenizer_name="default")
    index = tantivy.Index(builder.build(), path=str(where))
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    started, count = time.perf_counter(), 0
    for row_id, doc in db.execute("SELECT id, doc FROM messages"):
        texts = json.loads(zlib.decompress(doc))
        document = tantivy.Document()
        document.add_unsigned("id", row_id)
        for column, text in zip(COLUMNS, texts, strict=False):
            if text:
                document.add_text(column, text)
        writer.add_document(document)
        count += 1
    writer.commit()
    writer.wait_merging_threads()
    seconds = time.perf_counter() - started
    index.reload()
    size = sum(path.stat().st_size for path in where.rglob("*") if path.is_file())
    return index, {
        "messages": count,
        "seconds": round(seconds, 1),
        "messages_per_s": round(count / seconds),
        "bytes_per_message": round(size / count),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index", type=Path, help="an index file of mail-imap-mcp (a copy is read)")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    db = sqlite3.connect(f"file:{args.index}?mode=ro", uri=True)
    work = Path(tempfile.mkdtemp(prefix="topk-tantivy-"))
    try:
        queries = _queries(db)
        index, built = build(db, work)
        print(f"load {os.getloadavg()}: Tantivy build {built}")
        searcher = index.searcher()
        boosts = dict(zip(COLUMNS, WEIGHTS, strict=True))
        print(
            "| query (hits) | FTS5 bm25 top 20 | FTS5 count | Tantivy top 20 | Tantivy count | Tantivy every match scored | same 20 |"
        )
        print("|---|---:|---:|---:|---:|---:|---|")
        for label, match, text in queries:
            fts_sql = (
                f"SELECT {BM25} AS rank, rowid FROM fts WHERE fts MATCH ? ORDER BY rank, rowid DESC LIMIT 20"
            )
            fts = _median_ms(partial(db.execute, fts_sql, (match,)), args.runs, drain=True)
            hits = db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (match,)).fetchone()[0]
            counted = _median_ms(
                partial(db.execute, "SELECT count(*) FROM fts WHERE fts MATCH ?", (match,)),
                args.runs,
                drain=True,
            )
            query = index.parse_query(text, list(COLUMNS), field_boosts=boosts)
            top = _median_ms(partial(searcher.search, query, 20, count=False), args.runs)
            count = _median_ms(partial(searcher.search, query, 1, count=True), args.runs)
            every = max(searcher.search(query, 1, count=True).count, 1)
            scored = _median_ms(partial(searcher.search, query, every, count=False), max(args.runs // 3, 1))
            best = [
                (round(s, 4), a.segment_ord, a.doc) for s, a in searcher.search(query, 20, count=False).hits
            ]
            full = [
                (round(s, 4), a.segment_ord, a.doc)
                for s, a in searcher.search(query, every, count=False).hits[:20]
            ]
            print(
                f"| {label} ({hits:,}; Tantivy {every:,}) | {fts} | {counted} | {top} | {count} | {scored} | {best == full} |"
            )
        print(f"load {os.getloadavg()}")
    finally:
        db.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
