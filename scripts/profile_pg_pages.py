"""What the pages of a search cost the index in PostgreSQL (issue 50 item 1): a first page, the page after
it, and the page after the first 2,000 matches, per order, on a throwaway PostgreSQL (``tests/support/
postgres.py``) holding the messages of a built SQLite index (copied row by row: the same words).

``scripts/profile_pg_pages SQLITE_INDEX [--messages N] [--runs R] [--tree PATH ...]`` copies the first
``N`` messages of ``SQLITE_INDEX`` (e.g. the one ``scripts/bench --index-only`` builds) into one schema, then
for each ``--tree`` (a checkout of this project, e.g. ``git archive main`` unpacked: before and after)
times in a process of that tree's ``src``, through the store as ``imap_search_messages`` asks it: a first
page of 20 keeping 2,000 places, the next page (by the places kept, or by key), and a page after the first
2,000 matches (by offset, or by key). Medians and, in brackets, the least of the runs (the machine may be
shared; the load average is printed).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Each query: a field and its word, or words any of which (a ranked search weighs each by its rarity).
QUERIES: tuple[tuple[str, str | tuple[str, ...]], ...] = (
    ("from", "dvolkov"),
    ("subject", "itinerary"),
    ("text", "team"),
    ("text", ("itinerary", "team")),
    ("text", ("budget", "itinerary", "review", "team")),
)
ORDERS = ("relevance", "date")
#: Where a child process finds the throwaway cluster: its URL and password.
PG_ENV = ("PROFILE_PG_URL", "PROFILE_PG_PASSWORD")


def pg_store(location: str = "bench") -> Any:
    """The store of the index ``location`` in the cluster :data:`PG_ENV` names."""
    from mail_imap_mcp.config import AccountConfig, IndexSettings
    from mail_imap_mcp.credentials.secrets import index_password
    from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine

    os.environ["PROFILE_PG_PASSWORD_ENV"] = os.environ[PG_ENV[1]]
    settings = IndexSettings.model_validate(
        {
            "index_engine": "postgresql",
            "index_url": os.environ[PG_ENV[0]],
            "index_password_env": "PROFILE_PG_PASSWORD_ENV",
        }
    )
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    engine = PostgresEngine(settings, index_password(settings))
    return engine.location(location, account).open().store


def load(index: Path, messages: int) -> None:
    """Copy the first ``messages`` rows of the SQLite index into the schema."""
    from mail_imap_mcp.index.store import FolderState, IndexedMessage, flag_names, unpack_texts

    store = pg_store()
    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    names = dict(db.execute("SELECT id, name FROM folders").fetchall())
    rows = db.execute(
        "SELECT folder, uid, sent, arrival_day, size, flag_bits, keywords, has_attachment, doc, arrival "
        "FROM messages ORDER BY id LIMIT ?",
        (messages,),
    )
    batches: dict[str, list[IndexedMessage]] = {}
    states: dict[str, FolderState] = {}

    def flush(name: str) -> None:
        batch = batches.pop(name, [])
        if batch:
            states[name] = FolderState(name, 1, max(m.uid for m in batch) + 1)
            store.put(states[name], batch)

    for folder, uid, sent, day, size, bits, keywords, attached, doc, arrival in rows:
        name = names[folder]
        if name not in states:
            states[name] = store.start_folder(name, 1)
        flags = (*flag_names(bits), *str(keywords).split())
        texts = tuple(unpack_texts(doc))
        batches.setdefault(name, []).append(
            IndexedMessage(uid, sent, day, size, flags, bool(attached), texts, arrival=arrival)
        )
        if len(batches[name]) >= 1000:
            flush(name)
    for name in list(batches):
        flush(name)
    with store.pool.connection() as conn:  # the planner's statistics, as autovacuum keeps them
        conn.execute(f'ANALYZE "{store.schema}".messages')
    print(f"{store.count():,} messages in PostgreSQL", flush=True)


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.1f} ({min(samples) * 1000:.1f})"


def measure(runs: int, label: str) -> None:
    """Time the pages of :data:`QUERIES` in :data:`ORDERS` with this process's ``mail_imap_mcp``."""
    from mail_imap_mcp.query import AnyOf, Contains, Query

    store = pg_store()
    folders = list(store.folders())

    def page(query: Any, order: str, **ask: Any) -> Any:
        return store.search(query, folders=folders, order=order, limit=20, **ask)

    for field, words in QUERIES:
        asked = (words,) if isinstance(words, str) else words
        tests = tuple(Contains(field, word) for word in asked)  # type: ignore[arg-type]
        query: Query = tests[0] if len(tests) == 1 else AnyOf(tests)
        word = " OR ".join(asked)
        for order in ORDERS:
            first = page(query, order, offset=0, keep=2000)
            keyed = getattr(first, "keyed", None)
            if keyed is not None:  # by key: walk to the 2,000th match once (not timed)
                walked = store.search(query, folders=folders, order=order, limit=2000, offset=0)
                second: dict[str, Any] = {"offset": 20, "after": keyed.resume}
                deep_ask: dict[str, Any] = {"offset": 2000, "after": walked.keyed.resume}
            else:
                places = first.places
                second = {"offset": 20, "places": places[20:40]}
                deep_ask = {"offset": 2000}
            timings: dict[str, list[float]] = {"first": [], "second": [], "after 2,000": []}
            for _ in range(runs):
                for name, ask in (("first", {"offset": 0, "keep": 2000}), ("second", second)):
                    started = time.perf_counter()
                    page(query, order, **ask)
                    timings[name].append(time.perf_counter() - started)
                started = time.perf_counter()
                page(query, order, **deep_ask)
                timings["after 2,000"].append(time.perf_counter() - started)
            cells = " | ".join(_ms(timings[name]) for name in timings)
            print(f"| {label} | {field}:{word} ({first.total:,}) | {order} | {cells} |", flush=True)
    store.close()


def main() -> None:
    if sys.argv[1:2] == ["load"]:
        load(Path(sys.argv[2]), int(sys.argv[3]))
        return
    if sys.argv[1:2] == ["measure"]:
        measure(int(sys.argv[2]), sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index", type=Path)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--tree", type=Path, action="append", help="a checkout to measure (repeatable)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.support.servers.postgres import PostgresServer, new_database

    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    me = str(Path(__file__).resolve())
    with PostgresServer() as server:
        env = {**os.environ, PG_ENV[0]: new_database(server), PG_ENV[1]: server.password}
        subprocess.run(
            [sys.executable, me, "load", str(args.index), str(args.messages)],
            env={**env, "PYTHONPATH": str(ROOT / "src")},
            check=True,
        )
        print(f"load {os.getloadavg()}")
        print("| tree | query (matches) | order | first page, ms (least) | next page | page after 2,000 |")
        print("|---|---|---|---:|---:|---:|")
        for tree in trees:
            subprocess.run(
                [sys.executable, me, "measure", str(args.runs), tree.name],
                env={**env, "PYTHONPATH": str(tree / "src")},
                check=True,
            )
        print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
