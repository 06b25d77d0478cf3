"""What a sync's write costs the index when one folder is large: one message's flags changed, one message
added, one removed, and the flags of many messages changed at once (another client marked them read),
each a transaction of the store as the sync makes them, in SQLite and in PostgreSQL (a throwaway
cluster, ``tests/support/servers/postgres.py``).

``scripts/profile_index_writes [--messages N] [--writes W] [--rounds R] [--many M] [--engine E] [--tree PATH ...]``:
for each engine and each ``--tree`` (a checkout of this project, e.g. ``git worktree add`` of main: before
and after), in a process of that tree's ``src``, fills an index of its own with one folder of ``N``
messages in transactions of 250 (a build's chunk, ``index/sync.py``), timed; then, for each round and
tree in turn (so that the machine's drift hits every tree alike), times ``W`` writes of each kind and
three of ``--many`` flag changes (default 10,000) each way.
Medians and, in brackets, the least, with the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from profile_pg_pages import PG_ENV, pg_store

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "INBOX"


def _store(engine: str, directory: Path) -> Any:
    """The store of ``engine``: a file in ``directory``, or the index of the directory's name in the
    cluster the environment names."""
    from mail_imap_mcp.index.engines.sqlite.store import SqliteStore

    return SqliteStore(directory / "index.sqlite3") if engine == "sqlite" else pg_store(directory.name)


def _message(uid: int, seen: bool) -> Any:
    from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage

    texts = tuple(f"note {uid}" if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_767_225_600 + uid, 20260101, 100, ("\\Seen",) if seen else (), False, texts)


def fill(engine: str, directory: Path, messages: int) -> None:
    """One folder of ``messages`` messages, two in three seen, stored as a build stores them."""
    from dataclasses import replace

    from mail_imap_mcp.index.sync import CHUNK

    directory.mkdir(exist_ok=True)
    store = _store(engine, directory)
    state = store.start_folder(FOLDER, 1)
    started = time.perf_counter()
    for first in range(1, messages + 1, CHUNK):
        uids = range(first, min(first + CHUNK, messages + 1))
        state = replace(state, uidnext=uids[-1] + 1, messages=uids[-1], complete=True)
        store.put(state, [_message(uid, uid % 3 != 0) for uid in uids])
    store.close()
    print(f"| {engine} | {directory.name} | {time.perf_counter() - started:.1f} s |", flush=True)


def measure(engine: str, directory: Path, writes: int, many: int, label: str) -> None:
    """Time ``writes`` writes of each kind, and three of ``many`` flag changes each way; leave the folder
    as it was (same messages, flags and count)."""
    from dataclasses import replace

    store = _store(engine, directory)
    state = store.folders()[FOLDER]
    timings: dict[str, list[float]] = {"flags": [], "add": [], "remove": [], "many": []}
    for at in range(writes):
        uid = 3 * (at + 1)  # unseen: seen, then unseen again
        for flags in (("\\Seen",), ()):
            started = time.perf_counter()
            store.update(state, flags={uid: flags}, removed=[])
            timings["flags"].append(time.perf_counter() - started)
        new = state.uidnext
        state = replace(state, uidnext=new + 1)
        started = time.perf_counter()
        store.put(state, [_message(new, True)])
        timings["add"].append(time.perf_counter() - started)
        started = time.perf_counter()
        store.update(state, flags={}, removed=[new])
        timings["remove"].append(time.perf_counter() - started)
    for _ in range(3):
        for flags in (("\\Flagged",), ()):
            started = time.perf_counter()
            store.update(state, flags=dict.fromkeys(range(1, many + 1), flags), removed=[])
            timings["many"].append(time.perf_counter() - started)
    store.close()
    cells = " | ".join(f"{statistics.median(t) * 1000:.2f} ({min(t) * 1000:.2f})" for t in timings.values())
    print(f"| {engine} | {label} | {cells} |", flush=True)


def _run(me: str, env: dict[str, str], tree: Path, *args: str) -> None:
    subprocess.run([sys.executable, me, *args], env={**env, "PYTHONPATH": str(tree / "src")}, check=True)


def main() -> None:
    if sys.argv[1:2] == ["fill"]:
        fill(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))
        return
    if sys.argv[1:2] == ["measure"]:
        measure(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--writes", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--many", type=int, default=10_000)
    parser.add_argument("--engine", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--tree", type=Path, action="append", help="a checkout to measure (repeatable)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.support.servers.postgres import PostgresServer, new_database

    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    engines = ("sqlite", "postgresql") if args.engine == "both" else (args.engine,)
    me = str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory() as directory, PostgresServer() as server:
        env = {**os.environ, PG_ENV[0]: new_database(server), PG_ENV[1]: server.password}
        own = {
            tree: Path(directory) / f"t{at}_{tree.name}".replace("-", "_") for at, tree in enumerate(trees)
        }
        print(f"load {os.getloadavg()}; {args.messages:,} messages in one folder")
        print("| engine | index (tree) | filled |\n|---|---|---:|")
        for engine in engines:
            for tree in trees:
                _run(me, env, tree, "fill", engine, str(own[tree]), str(args.messages))
        print(f"load {os.getloadavg()}")
        print(
            "| engine | tree | one flag changed, ms (least) | one message added | one removed | many changed |"
        )
        print("|---|---|---:|---:|---:|---:|")
        for _ in range(args.rounds):
            for engine in engines:
                for tree in trees:
                    _run(
                        me,
                        env,
                        tree,
                        "measure",
                        engine,
                        str(own[tree]),
                        str(args.writes),
                        str(args.many),
                        tree.name,
                    )
        print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
