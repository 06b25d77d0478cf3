"""What vectors cost an index of the SQLite engines (issue 80, item 3): the build of ``--messages``
generated messages with vectors against the build without them, ``nearest`` (a page of 20 by meaning, in
the store, with no query and with queries of a word or a flag, broad and narrow), ``about`` and ``like``
as the search makes their vectors, the memory its copy of the signatures takes, and the disk per message.
Each time is the median and (least) of the runs, of the wall clock and of this process's processor time
(what the work costs whatever the machine's load).

The words are stored as the sync stores them (chunks of 250 messages, one transaction each, the folder's
state with them); the vectors by the pass behind the words (:func:`~mail_imap_mcp.index.sync_vectors.
fill_vectors`: passages, the shipped model, rows of six bits a component). ``--vectors random`` stores random unit vectors
instead of the model's (one passage a message, two for every third: the cost of ``nearest`` does not
depend on what the vectors say), for sizes where embedding would take most of the run. The build over
IMAP (``mail-imap-mcp index``) adds the fetch to the words; docs/benchmarks.md has it.

``scripts/bench_vectors --messages 100000 [--engine sqlite+tantivy] [--vectors model|random] [--texts
mail|short] [--model english|multilingual] [--runs 30]`` (the index is made in a temporary directory, or
``--dir``; ``--again`` times ``nearest`` again on the index ``--dir`` holds; ``--model``: the shipped model
whose vectors, or random vectors of whose size, are stored and asked: English's 256 dimensions, the
multilingual model's 512); prints the load average with the figures.

``--model-memory N`` follows the memory of meaning search in this one process, each figure the resident
size (``VmRSS``, MiB) above the one before anything of it (the store open, numpy imported, the messages
below made): after the first ``nearest`` (the vectors held), after the model is read and a question
embedded, after ``N`` messages of the realistic corpus (``scripts/bench_embedding.py``'s) embedded by the
vectors pass's own work (:func:`~mail_imap_mcp.index.sync_vectors.embedded`, batches of its size), and
after the pass goes idle (the model's ``rest``, its reference of densities let go). With ``--again --vectors
random`` it reads an index made before (``--texts short --vectors random`` makes a million's in minutes).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402  (after the path above)
import numpy.typing as npt  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402

from mail_imap_mcp.index.densities import DensityKeeper  # noqa: E402
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore  # noqa: E402
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore  # noqa: E402
from mail_imap_mcp.index.heap import give_back_heap  # noqa: E402
from mail_imap_mcp.index.passages import passages  # noqa: E402
from mail_imap_mcp.index.store import TEXT_COLUMNS, FolderState, Hit, IndexedMessage, Place  # noqa: E402
from mail_imap_mcp.index.sync_vectors import BATCH, embedded, fill_vectors  # noqa: E402
from mail_imap_mcp.index.vectors import VectorTodo  # noqa: E402
from mail_imap_mcp.meaning.model import ENGLISH, MULTILINGUAL, SHIPPED_DIMENSIONS, TextModel, shipped_model  # noqa: E402
from mail_imap_mcp.meaning.multilingual import DIMENSIONS as MULTILINGUAL_DIMENSIONS  # noqa: E402
from mail_imap_mcp.query import Contains, HasFlag, Not, Query  # noqa: E402
from mail_imap_mcp.query.tree import EVERYTHING  # noqa: E402

FOLDERS = 40
CHUNK = 250
#: One message in this many is a draft (a flag few messages have; a prime, so every folder holds some).
DRAFT_EVERY = 997
QUESTIONS = (
    "the bill for the website redesign",
    "when is the team meeting next week",
    "notes about moving to the new office",
    "a problem with the database after the upgrade",
    "photos from the birthday party",
)


def generated(count: int, short: bool = False) -> Iterator[tuple[str, IndexedMessage]]:
    """``count`` messages of the benchmarks' generator, each with its folder, as the index keeps them
    (``short``: the first line of the body alone, a quicker build where only ``nearest`` is timed)."""
    for i in range(count):
        facts = mailgen.describe(i, seed=80)
        body = facts.first_line
        if not short:
            body += "\n\n" + mailgen._PARAGRAPHS[facts.lang]
        columns = {
            "subject": facts.subject,
            "sender": f"{facts.from_name} <{facts.from_addr}>",
            "recipients_to": "Test User <user@example.org>",
            "message_id": facts.message_id,
            "body": body,
        }
        sent = int(facts.date.timestamp())
        yield (
            f"Folder {i % FOLDERS:02d}",
            IndexedMessage(
                uid=i // FOLDERS + 1,
                sent=sent,
                arrival_day=int(facts.date.strftime("%Y%m%d")),
                size=len(body) + 600,
                flags=(("\\Seen",) if i % 3 else ()) + (("\\Draft",) if i % DRAFT_EVERY == 0 else ()),
                has_attachment=False,
                texts=tuple(columns.get(column, "") for column in TEXT_COLUMNS),
                arrival=sent,
            ),
        )


def build_words(store: SqliteStore, count: int, short: bool = False) -> float:
    """Store the words of ``count`` messages in chunks, as the sync does; the seconds it took."""
    states = {f"Folder {n:02d}": store.start_folder(f"Folder {n:02d}", 1) for n in range(FOLDERS)}
    chunks: dict[str, list[IndexedMessage]] = {name: [] for name in states}
    started = time.perf_counter()
    for folder, message in generated(count, short):
        chunks[folder].append(message)
        if len(chunks[folder]) == CHUNK:
            states[folder] = _stored(store, states[folder], chunks[folder])
            chunks[folder] = []
    for folder, left in chunks.items():
        if left:
            _stored(store, states[folder], left)
    return time.perf_counter() - started


def _stored(store: SqliteStore, state: FolderState, messages: list[IndexedMessage]) -> FolderState:
    state = FolderState(
        state.name, state.uidvalidity, messages[-1].uid + 1, 0, state.messages + len(messages)
    )
    store.put(state, messages)
    return state


def random_vectors(store: SqliteStore, dimensions: int) -> float:
    """Random unit vectors for every message (two passages for every third); the seconds it took."""
    rng = np.random.default_rng(80)
    started = time.perf_counter()
    while todo := store.vectors_todo("random", 2000):
        vectors = {}
        for n, item in enumerate(todo):
            rows = rng.standard_normal((2 if n % 3 == 0 else 1, dimensions)).astype(np.float32)
            vectors[(item.folder, item.uid)] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        store.put_vectors("random", vectors)
    return time.perf_counter() - started


def file_bytes(path: Path) -> int:
    """The index file's size with its write-ahead log folded in."""
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.stat().st_size


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.1f} ({min(samples) * 1000:.1f})"


def _timed(runs: int, call: Callable[[int], object]) -> tuple[list[float], list[float]]:
    """``call(run)`` ``runs`` times: the wall time of each, and the processor time of this process
    (every thread: what the work costs whatever the machine's load)."""
    walls, cpus = [], []
    for run in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        call(run)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--engine", choices=("sqlite", "sqlite+tantivy"), default="sqlite")
    parser.add_argument("--vectors", choices=("model", "random"), default="model")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--texts", choices=("mail", "short"), default="mail", help="short: a line a message")
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--again", action="store_true", help="time nearest again on the index --dir holds")
    parser.add_argument("--model", choices=(ENGLISH, MULTILINGUAL), default=ENGLISH, help="the shipped model")
    parser.add_argument(
        "--model-memory",
        type=int,
        default=0,
        metavar="N",
        help="follow the memory: vectors held, the model read, N realistic messages embedded, the pass idle",
    )
    args = parser.parse_args()
    memory = Memory(args.model, _realistic(args.model_memory)) if args.model_memory else None
    dimensions = MULTILINGUAL_DIMENSIONS if args.model == MULTILINGUAL else SHIPPED_DIMENSIONS
    where = args.dir or Path(tempfile.mkdtemp(prefix="bench-vectors-"))
    path = where / "index.sqlite3"
    make = TantivyStore if args.engine == "sqlite+tantivy" else SqliteStore
    print(
        f"load {os.getloadavg()}; {_messages_in(path) if args.again else args.messages:,} messages ({args.texts}), "
        f"{args.engine}, vectors: {args.vectors} ({args.model}, {dimensions} dimensions); {path}"
    )
    model = shipped_model(args.model) if args.vectors == "model" else None
    started = time.perf_counter()
    store = make(path)
    if args.again:  # a file without the flags' index gains it here (index/engines/sqlite/flag_index.py)
        print(f"| opening the index | {time.perf_counter() - started:.2f} s |")
        try:
            questions = model.embed(QUESTIONS) if model is not None else _random_questions(dimensions)
            _nearest(store, questions, args.runs, args.model, model is not None, memory)
        finally:
            store.close()
        print(f"load {os.getloadavg()}")
        return
    try:
        words_s = build_words(store, args.messages, args.texts == "short")
        words_bytes = file_bytes(path)
        if model is not None:
            started = time.perf_counter()
            fill_vectors(store, model, lambda: False)
            vectors_s = time.perf_counter() - started
            questions = model.embed(QUESTIONS)
        else:
            vectors_s = random_vectors(store, dimensions)
            questions = _random_questions(dimensions)
        vectors_bytes = file_bytes(path)
        passages = _passages(path)
        print(f"| words alone | {words_s:.1f} s | {args.messages / words_s:,.0f} messages/s |")
        print(
            f"| vectors after them | {vectors_s:.1f} s | {args.messages / vectors_s:,.0f} messages/s | "
            f"with vectors / without: {(words_s + vectors_s) / words_s:.2f}x |"
        )
        print(
            f"| disk | {words_bytes / args.messages:,.0f} B a message without vectors | "
            f"+{(vectors_bytes - words_bytes) / args.messages:,.1f} B with them | {passages:.3f} passages a message |"
        )
        print(f"| disk, the vectors' tables alone (dbstat) | {_tables(path, args.messages)} |")
        _nearest(store, questions, args.runs, args.model, model is not None, memory)
    finally:
        store.close()
    print(f"load {os.getloadavg()}")


class Memory(NamedTuple):
    """What ``--model-memory`` follows: the model, and the messages its pass embeds."""

    model: str
    messages: list[tuple[str, ...]]


def _realistic(count: int) -> list[tuple[str, ...]]:
    """``count`` messages of the realistic corpus, their text columns as the index keeps them."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_embedding import realistic

    return realistic(count)


def _model_memory(memory: Memory, base: float, vectors: float, store: SqliteStore) -> None:
    """The resident size above ``base`` (MiB) as meaning search's parts arrive, ``vectors`` once its
    vectors are held: the model read and a question embedded, the pass's work (each batch's densities
    found against the reference the pass draws from ``store``, :mod:`mail_imap_mcp.index.densities`),
    the pass idle."""
    model = shipped_model(memory.model)
    model.embed([QUESTIONS[0]])
    gc.collect()
    steps = [
        ("the vectors held (the first nearest)", vectors),
        ("the model read, a question embedded", rss_mb()),
    ]
    keeper = DensityKeeper(store, store.vector_model() or model.name)
    cpu = time.process_time()
    keeper.refresh()
    drawn_s = time.process_time() - cpu
    density_s = 0.0
    for start in range(0, len(memory.messages), BATCH):
        part = memory.messages[start : start + BATCH]
        made = embedded(model, [VectorTodo("INBOX", start + n, texts) for n, texts in enumerate(part)])
        started = time.process_time()
        keeper.of(made)
        density_s += time.process_time() - started
        give_back_heap()  # as the pass does after each batch (fill_vectors)
    cpu = time.process_time() - cpu
    gc.collect()
    steps.append(
        (
            f"{len(memory.messages):,} realistic messages embedded by the pass ({cpu:.1f} CPU-s; the reference "
            f"of {0 if keeper.reference is None else len(keeper.reference.places):,} drawn {drawn_s:.1f}, "
            f"their densities {density_s:.2f})",
            rss_mb(),
        )
    )
    del keeper
    model.rest()
    gc.collect()
    steps.append(("the pass idle (the model's caches let go)", rss_mb()))
    give_back_heap()
    steps.append(("the C heap's free pages given back, as the pass does at its end", rss_mb()))
    model.embed([QUESTIONS[1]])
    gc.collect()
    steps.append(("then a question embedded", rss_mb()))
    print(f"| memory, one process | before meaning search VmRSS {base:.1f} MiB |")
    for name, size in steps:
        print(
            f"| memory, one process | {name} | VmRSS {size - base:+.1f} MiB ({(size - base) * 2**20 / 1e6:+.1f} MB) |"
        )


def _about_and_like(store: SqliteStore, folders: list[str], runs: int, model_name: str) -> None:
    """``about`` and ``like`` in the store as the search makes their vectors (services/search_meaning.py):
    ``about``'s text embedded; ``like``'s message found by its place, its passages embedded again and
    their mean; then ``nearest`` of every folder (the words' search runs beside it, on the read pool)."""
    model: TextModel = shipped_model(model_name)
    liked = store.nearest(
        _random_questions(model.dimensions)[0], None, folders, 20
    )  # some messages to start from

    def about(run: int) -> None:
        vector = model.embed([QUESTIONS[run % len(QUESTIONS)]])[0]
        store.nearest(vector, None, folders, 20)

    def like(run: int) -> None:
        one = liked[run % len(liked)]
        found = store.search(
            EVERYTHING,
            folders=[one.folder],
            order="relevance",
            limit=1,
            offset=0,
            places=[Place(one.folder, one.uid)],
        ).hits
        rows = model.embed(passages(found[0].texts))
        mean = rows.mean(axis=0)
        store.nearest(mean / np.linalg.norm(mean), None, folders, 20)

    for name, call in (
        ("about (its text embedded, then nearest)", about),
        ("like (its message found and embedded, then nearest)", like),
    ):
        walls, cpus = _timed(runs, call)
        print(f"| {name} | {_ms(walls)} ms | processor {_ms(cpus)} ms |")


def _messages_in(path: Path) -> int:
    """The messages the index file at ``path`` holds."""
    import sqlite3

    db = sqlite3.connect(path)
    count = int(db.execute("SELECT coalesce(sum(messages), 0) FROM folders").fetchone()[0])
    db.close()
    return count


def _random_questions(dimensions: int) -> npt.NDArray[np.float32]:
    return np.random.default_rng(1).standard_normal((len(QUESTIONS), dimensions)).astype(np.float32)


def _passages(path: Path) -> float:
    """The passages a message that has vectors (the model's bytes count them as int8 rows)."""
    import sqlite3

    db = sqlite3.connect(path)
    total, messages = db.execute("SELECT bytes * 1.0 / dimensions, messages FROM vector_model").fetchone()
    db.close()
    return float(total) / max(int(messages), 1)


def _tables(path: Path, messages: int) -> str:
    """The bytes a message of the vectors' tables in the file, by SQLite's own page statistics
    (``dbstat``): their pages whole, and of those the rows' payload and the bytes left unused (the rest
    is the cells' headers and pointers, and the pages' own)."""
    import sqlite3

    db = sqlite3.connect(path)
    try:
        found = db.execute(
            "SELECT name, sum(pgsize), sum(payload), sum(unused) FROM dbstat "
            "WHERE name IN ('vectors', 'vector_changes', 'vector_model') GROUP BY name"
        ).fetchall()
    except sqlite3.OperationalError as exc:  # an SQLite built without dbstat
        return f"not measured ({exc})"
    finally:
        db.close()
    total = sum(int(pages) for _, pages, _, _ in found) / messages
    cells = "; ".join(
        f"{name} {int(pages) / messages:,.1f} (payload {int(payload) / messages:,.1f}, unused {int(unused) / messages:,.1f})"
        for name, pages, payload, unused in found
    )
    return f"{total:,.1f} B a message | {cells}"


def _recall(store: SqliteStore, questions: npt.NDArray[np.float32]) -> tuple[float, float]:
    """The mean recall at 10 of ``nearest`` (every folder) against every message's stored rows ranked, and
    the share of its 10 as near as the 10th of those (the generated mail has many near-equal messages)."""
    import sqlite3

    from mail_imap_mcp.index.engines.sqlite.vector_layout import KEY_BASE
    from mail_imap_mcp.index.engines.sqlite.vectors import read_rows
    from mail_imap_mcp.meaning.vectors import exact

    db = sqlite3.connect(store.path)
    rows = read_rows(db, len(questions[0]))(
        [KEY_BASE - int(key) for (key,) in db.execute("SELECT key FROM vectors")]
    )
    places = {
        int(row_id): (name, int(uid))
        for row_id, name, uid in db.execute(
            "SELECT m.id, f.name, m.uid FROM messages m JOIN folders f ON f.id = m.folder"
        )
    }
    db.close()
    folders = list(store.folders())
    recalls, as_near = [], []
    for question in questions:
        question = question / np.linalg.norm(question)
        best = exact(question, rows, 10)
        wanted = {places[key] for key, _ in best}
        hits = store.nearest(question, None, folders, 10)
        recalls.append(len(wanted & {(hit.folder, hit.uid) for hit in hits}) / 10)
        as_near.append(sum(1 - hit.rank >= best[-1][1] - 1e-4 for hit in hits) / 10)
    return float(np.mean(recalls)), float(np.mean(as_near))


def _flag_pages(store: SqliteStore, folders: list[str], runs: int) -> None:
    """A words search's first page of 20 of each flag filter over every folder, newest first (its count and
    its list: the words search's side of the same conditions)."""
    cases = (
        ("seen (2 in 3)", HasFlag("seen")),
        ("unseen (1 in 3)", HasFlag("seen", present=False)),
        ("flagged (none)", HasFlag("flagged")),
        (f"draft (1 in {DRAFT_EVERY})", HasFlag("draft")),
        ("not flagged (every message)", Not(HasFlag("flagged"))),
    )
    for name, query in cases:
        totals: list[int] = []

        def page(run: int, query: Query = query, totals: list[int] = totals) -> None:
            totals[:] = [store.search(query, folders=folders, order="date", limit=20, offset=0).total]

        walls, cpus = _timed(runs, page)
        print(
            f"| words page, query {name} | {_ms(walls)} ms | processor {_ms(cpus)} ms | {totals[0]:,} matches |"
        )


def _nearest(
    store: SqliteStore,
    questions: npt.NDArray[np.float32],
    runs: int,
    model_name: str,
    model_made: bool,
    memory: Memory | None = None,
) -> None:
    folders = list(store.folders())
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    store.nearest(questions[0], None, folders, 20)
    first_s = time.perf_counter() - started
    held = store._held.signatures
    print(
        f"| memory | first nearest (signatures read) {first_s:.2f} s | RSS +{rss_mb() - before:.1f} MB | "
        f"signatures held {0 if held is None else held.nbytes / 2**20:.1f} MB |"
    )
    if memory is not None:
        gc.collect()
        _model_memory(memory, before, rss_mb(), store)
    cases = (
        ("every folder", None, folders),
        ("one folder", None, folders[:1]),
        ("query text:team", Contains("text", "team"), folders),
        ("query subject:invoice", Contains("subject", "invoice"), folders),
        ("query seen (2 in 3)", HasFlag("seen"), folders),
        ("query unseen (1 in 3)", HasFlag("seen", present=False), folders),
        ("query flagged (none)", HasFlag("flagged"), folders),
        (f"query draft (1 in {DRAFT_EVERY})", HasFlag("draft"), folders),
        ("one folder, query draft", HasFlag("draft"), folders[:1]),
        ("query not flagged (every message)", Not(HasFlag("flagged")), folders),
    )
    for name, query, searched in cases:
        hits: list[Hit] = []

        def page(
            run: int, query: Query | None = query, searched: list[str] = searched, hits: list[Hit] = hits
        ) -> None:
            hits[:] = store.nearest(questions[run % len(questions)], query, searched, 20)

        walls, cpus = _timed(runs, page)
        print(f"| nearest, {name} | {_ms(walls)} ms | processor {_ms(cpus)} ms | {len(hits)} hits |")
    _flag_pages(store, folders, max(3, runs // 2))
    _about_and_like(store, folders, runs, model_name)
    if not model_made:  # random questions of random vectors: no recall to speak of
        return
    recall, as_near = _recall(store, questions)
    print(
        f"| recall at 10 against every stored row ranked | {recall:.3f} | as near as their 10th: {as_near:.3f} |"
    )


if __name__ == "__main__":
    main()
