"""The ``sqlite+tantivy`` engine's ranked pages against the SQLite engine's on the same messages (issue 51
item 1), on a copy of an index file built by ``mail-imap-mcp index``.

``scripts/ranked_engines INDEX_FILE [--runs N]`` (e.g. ``.bench/index-run/ix/default.<tag>.sqlite3`` after
``scripts/bench --index-only --index-messages 1000000``) copies the file (SQLite's backup: the original is
only read) into a private temporary directory, opens the copy with the ``sqlite+tantivy`` store (which
builds its Tantivy index from the file's stored texts: timed, with the process's peak RSS and the
directory's bytes), then times each of the bench's queries (``scripts/benchmark/index.py``'s picks:
sender, subject word, rare word, word in most messages, and ``word in most messages OR subject word``)
as a first page of 20 over every folder through the store alone: the SQLite engine's page (FTS5) and the
Tantivy engine's, and the Tantivy page that also keeps 2,000 places for its cursor (as a first page
through MCP asks). Last, whether Tantivy's top 20 equals the first 20 of every match scored (a limit as
large as the matches), ties by newest row id. Prints the load average with the figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from mail_imap_mcp.index.engines.sqlite.store import SqliteStore  # noqa: E402  (after the path above)
from mail_imap_mcp.index.engines.tantivy.query import ID_FIELD, compile_tantivy  # noqa: E402
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore  # noqa: E402
from mail_imap_mcp.index.engines.tantivy.text import text_dir  # noqa: E402
from mail_imap_mcp.query import AnyOf, Contains  # noqa: E402
from mail_imap_mcp.query.tree import Query  # noqa: E402

RUNS = 15
KEPT = 2_000


def _median_ms(action: Callable[[], Any], runs: int) -> float:
    action()  # warm
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples) * 1000, 2)


def _queries(path: Path) -> list[tuple[str, Query]]:
    """The bench's picks from the file's vocabulary (as ``scripts/benchmark/index.py`` picks them)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    sys.path.insert(0, str(ROOT))
    from benchmark.index import _pick_queries

    picked = _pick_queries(path)
    found: list[tuple[str, Query]] = [
        (f"{q.label}: `{q.word}`", Contains(q.field, q.word))  # type: ignore[arg-type]
        for q in picked
    ]
    common, subject = picked[-1], picked[1]
    either = AnyOf((Contains(common.field, common.word), Contains(subject.field, subject.word)))  # type: ignore[arg-type]
    found.append((f"`{common.word} OR {subject.word}`", either))
    return found


def _every_match_scored(store: TantivyStore, query: Query) -> list[int]:
    searcher, _ = store.text.searcher()
    text = compile_tantivy(query, store.text.schema, store.text.tokenizer).text
    hits = searcher.search(text, searcher.num_docs + 1, count=False).hits
    rows = searcher.fast_field_values(ID_FIELD, [address for _, address in hits])
    scored = sorted(zip((s for s, _ in hits), rows, strict=True), key=lambda pair: (-pair[0], -pair[1]))
    return [int(row) for _, row in scored[:20]]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("index", type=Path, help="an index file of mail-imap-mcp (a copy is used)")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ranked-engines-"))
    try:
        copy = work / "default.sqlite3"
        with (
            sqlite3.connect(f"file:{args.index}?mode=ro", uri=True) as source,
            sqlite3.connect(copy) as target,
        ):
            source.backup(target)
        queries = _queries(copy)
        started = time.perf_counter()
        store = TantivyStore(copy)
        seconds = time.perf_counter() - started
        messages = store.count()
        size = sum(p.stat().st_size for p in text_dir(copy).rglob("*") if p.is_file())
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"load {os.getloadavg()}: Tantivy index of {messages:,} messages built from the file's texts in "
            f"{seconds:.1f} s ({messages / seconds:,.0f} messages/s), {size / messages:,.0f} bytes per message, "
            f"peak RSS {rss:.1f} MB"
        )
        folders = list(store.folders())
        print(
            "| query (hits) | SQLite engine: top 20 | sqlite+tantivy: top 20 | sqlite+tantivy: top 20 keeping "
            f"{KEPT:,} places | same 20 as every match scored |"
        )
        print("|---|---:|---:|---:|---|")
        for label, query in queries:

            def plain(q: Query = query) -> Any:
                return SqliteStore.search(store, q, folders=folders, order="relevance", limit=20, offset=0)

            def ranked(q: Query = query, keep: int = 0) -> Any:
                return store.search(q, folders=folders, order="relevance", limit=20, offset=0, keep=keep)

            hits = ranked().total
            fts = _median_ms(plain, args.runs)
            top = _median_ms(ranked, args.runs)

            def keeping(q: Query = query) -> Any:
                return ranked(q, KEPT)

            kept = _median_ms(keeping, max(args.runs // 3, 1))
            db = sqlite3.connect(copy)
            page_rows = [
                db.execute(
                    "SELECT m.id FROM messages m JOIN folders f ON f.id = m.folder WHERE f.name = ? AND m.uid = ?",
                    (hit.folder, hit.uid),
                ).fetchone()[0]
                for hit in ranked().hits
            ]
            db.close()
            same = page_rows == _every_match_scored(store, query)
            print(f"| {label} ({hits:,}) | {fts:,} | {top:,} | {kept:,} | {'yes' if same else 'NO'} |")
        print(f"load {os.getloadavg()}")
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
