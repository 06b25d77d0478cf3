"""Where a ranked page through MCP spends its time, layer by layer, beside a warm newest page (issue 51
item 3): the client's wall time, and inside the server the search (``search_page``), the index's part of
it (``index_page``), the fresh page (``fresh_page``: the store's search beside the freshness round trip),
the round trip alone (``refresh``) and the keeping of the first page's places (``keep_places``).

``scripts/profile_mcp_page [--messages N] [--folders F] [--runs R] [--engine E] [--apart S] [--tree PATH ...]``
seeds a throwaway
Dovecot with ``mailgen.corpus`` (as ``scripts/bench --index-only`` does), builds the index with
``mail-imap-mcp index``, then for each ``--tree`` (a checkout of this project, e.g. ``git archive main``
unpacked, to compare before and after; default: this one) serves MCP from that tree's ``src`` with wall
timers around those functions (a tree with ``sqlite_pages.RANK_KEPT_AFTER`` twice: as it is, and
"ranked again", the first page's 20 ranked alone and its kept matches ranked again after it), and prints medians per call with the load average (the machine may be
shared). The calls of one case are ``--apart`` seconds apart (default 0.05), so work a page leaves running
after it answers is not the next call's cost (``--apart 0``: back to back, as ``scripts/bench`` calls).
``--keep DIR``: the seeded Dovecot and the built index kept in ``DIR`` (the first run there seeds and
builds, later runs with the same ``--messages``, ``--folders`` and ``--engine`` serve from them: a
1,000,000-message index is built once). ``--engine sqlite+tantivy``: the index in that engine; ``--push``: the server with ``index_fresh_from_push``;
``--about TEXT`` (repeatable): a search by meaning of each (``about``, every mailbox) beside the cases,
``--like``: one like the INBOX's newest message (the index keeps vectors: the ``meaning`` extra installed).

Each case also prints the processor time of the server and of the client per call (``/proc``; what the
load on a shared machine moves least), and the way of a call from the client's send to its answer, step
by step (means, which add up to the call's time; :data:`WAY`): the server's marks (the envelope tool's
``answer`` and ``run``, the handler, the transport's write and flush) laid on the client's send, read and
return (one monotonic clock), and the cyclic collector's passes in the call, by generation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The functions timed, by module.
TIMED = {
    "mail_imap_mcp.services.search": ("search_page", "index_page"),
    "mail_imap_mcp.services.index_read": ("fresh_page",),
    "mail_imap_mcp.services.index_search": ("keep_places",),
    "mail_imap_mcp.index.answer": ("refresh",),
    "mail_imap_mcp.services.search_meaning": (
        "meaning_page",
        "MeaningRanking.page",
        "MeaningRanking._vector",
        "_keep_whys",
    ),
    "mail_imap_mcp.tools.search_messages": ("_handle", "page_result"),
    # sqlite+tantivy: a ranked page, the reads of its best matches, and SQLite's page where FTS5 ranks it
    "mail_imap_mcp.index.engines.tantivy.store": ("TantivyStore._ranked_page", "page_task"),
    "mail_imap_mcp.index.engines.tantivy.topk": ("best_matches", "_through_the_run", "_scores_of"),
}
CASES: dict[str, dict[str, Any]] = {
    "ranked, query=itinerary": {"query": "itinerary", "sort": "relevance", "mailbox": "*", "limit": 20},
    "ranked, query=dvolkov": {"query": "dvolkov", "sort": "relevance", "mailbox": "*", "limit": 20},
    "newest first, query=itinerary": {"query": "itinerary", "sort": "date", "mailbox": "*", "limit": 20},
    "newest page (INBOX, no query)": {"mailbox": "INBOX", "limit": 20},
}
_OUT = "PROFILE_MCP_PAGE_OUT"
#: Set: the server ranks a first page's 20 alone and its kept matches again after it.
_RANKED_AGAIN = "PROFILE_MCP_PAGE_RANKED_AGAIN"


def serve_timed(argv: list[str]) -> None:
    """``mail-imap-mcp serve`` with a wall timer around each of :data:`TIMED`, one line per call to the
    file ``$PROFILE_MCP_PAGE_OUT``."""
    import importlib
    import importlib.util

    marks = _Marks(Path(os.environ[_OUT]))

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with marks.timing(name):
                return function(*args, **kwargs)

        return run

    for module_name, names in TIMED.items():
        if importlib.util.find_spec(module_name) is None:
            continue  # a tree from before that layer
        module = importlib.import_module(module_name)
        for name in names:
            owner_name, _, attribute = name.rpartition(".")  # a method: Class.method
            owner = getattr(module, owner_name) if owner_name else module
            if hasattr(owner, attribute):  # a tree from before it
                setattr(owner, attribute, timed(name, getattr(owner, attribute)))
    _time_the_pages_pool(timed, marks)
    _time_the_way_out(timed, marks)
    if os.environ.get(_RANKED_AGAIN):
        from mail_imap_mcp.index.engines.sqlite import pages as sqlite_pages

        sqlite_pages.RANK_KEPT_AFTER = True
    from mail_imap_mcp.cli import main

    main(["serve", *argv])


class _Marks:
    """Where the timed server writes: one JSON line a timer's run (name, ms, and its start and end)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._guard = threading.RLock()  # re-entrant: the collector reports in any thread, mid-write too

    def write(self, row: list[Any]) -> None:
        with self._guard, self.out.open("a") as file:
            file.write(json.dumps(row) + "\n")

    def timing(self, name: str) -> _Timer:
        return _Timer(self, name)


class _Timer:
    """A timer's run from its start: written to its marks as it ends (by an exception too)."""

    def __init__(self, marks: _Marks, name: str) -> None:
        self.marks, self.name, self.started = marks, name, time.perf_counter()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        ended = time.perf_counter()
        self.marks.write([self.name, (ended - self.started) * 1000, self.started, ended])


def _time_the_pages_pool(timed: Callable[..., Any], marks: _Marks) -> None:
    """The SQLite stores' pages: how long each waits for a thread of the pool (``page_queued``), and the
    work each leaves running after it answers (``page_then``: a ranked page's kept places)."""
    from mail_imap_mcp.index.engines.sqlite import ranking

    submit = ranking.Ranker.submit

    def submitted(self: Any, task: Callable[..., Any]) -> Any:
        asked = time.perf_counter()

        def run(db: Any) -> Any:
            marks.write(["page_queued", (time.perf_counter() - asked) * 1000])
            value, then = task(db)
            return value, None if then is None else timed("page_then", then)

        return submit(self, run)

    ranking.Ranker.submit = submitted  # type: ignore[method-assign]


def _time_the_way_out(timed: Callable[..., Any], marks: _Marks) -> None:
    """The layers between a handler's answer and the wire: the envelope tool's ``answer`` (the handler on
    its worker thread, the envelope built) and ``run`` (the result made of it), ``_to_result``, and the
    transport's ``write`` and ``flush`` of each message (each with its start and end, to be laid on the
    client's clock: both are the system's monotonic clock)."""
    import anyio

    from mail_imap_mcp.envelope import mcp as envelope_mcp

    def marked(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        async def run(*args: Any, **kwargs: Any) -> Any:
            with marks.timing(name):
                return await function(*args, **kwargs)

        return run

    envelope_mcp._to_result = timed("_to_result", envelope_mcp._to_result)
    from pydantic._internal import _generics  # a generic model parametrised anew (its class built)

    _generics.create_generic_submodel = timed("model built", _generics.create_generic_submodel)
    collecting: dict[str, float] = {}

    def collected(phase: str, info: dict[str, Any]) -> None:  # the cyclic collector's passes, by generation
        if phase == "start":
            collecting["started"] = time.perf_counter()
            return
        started, ended = collecting.pop("started", None), time.perf_counter()
        if started is not None:
            marks.write([f"gc{info['generation']}", (ended - started) * 1000, started, ended])

    gc.callbacks.append(collected)
    for name in ("answer", "run"):
        tool = envelope_mcp.EnvelopeTool
        setattr(tool, name, marked(f"EnvelopeTool.{name}", getattr(tool, name)))
    for name in ("write", "flush"):
        setattr(anyio.AsyncFile, name, marked(f"stdout.{name}", getattr(anyio.AsyncFile, name)))


#: The way of a call, from the client's send to its answer: (name, from, to), each a mark of the server's
#: (a timer's start or end) or the client's (``sent``, ``read``: the answer's line parsed, ``done``).
WAY = (
    ("to the server", "sent", "EnvelopeTool.answer<"),
    ("to the handler", "EnvelopeTool.answer<", "_handle<"),
    ("handler", "_handle<", "_handle>"),
    ("envelope", "_handle>", "EnvelopeTool.answer>"),
    ("result", "EnvelopeTool.answer>", "EnvelopeTool.run>"),
    ("to the writer", "EnvelopeTool.run>", "stdout.write<"),
    ("written", "stdout.write<", "stdout.flush>"),
    ("to the client", "stdout.flush>", "read"),
    ("client", "read", "done"),
)


def _way(timed: list[list[Any]], calls: list[dict[str, float]]) -> dict[str, list[float]]:
    """Each :data:`WAY` step's milliseconds per call: the server's marks laid in each call's window."""
    steps: dict[str, list[float]] = defaultdict(list)
    for call in calls:
        marks, collected = dict(call), {"gc0": 0.0, "gc1": 0.0, "gc2": 0.0}
        for name, spent, started, ended in sorted(timed, key=lambda row: float(row[2])):
            if not call["sent"] <= started <= call["read"]:
                continue
            if name.startswith("gc"):  # the collector's passes in the call's way, summed by generation
                collected[name] = collected.get(name, 0.0) + spent
                continue
            # the answer: the first message written after the result was made (a notice may follow it)
            after_result = name.startswith("stdout.") and started >= marks.get("EnvelopeTool.run>", math.inf)
            if f"{name}<" not in marks and (after_result or not name.startswith("stdout.")):
                marks[f"{name}<"], marks[f"{name}>"] = started, ended
        for step, begin, end in WAY:
            if begin in marks and end in marks:
                steps[step].append((marks[end] - marks[begin]) * 1000)
        for generation, spent in collected.items():
            steps[generation].append(spent)
    return steps


async def _cases(
    config: Path,
    password: str,
    tree: Path,
    work: Path,
    runs: int,
    *,
    ranked_again: bool = False,
    apart_s: float = 0.05,
    like: bool = False,
) -> dict[str, dict[str, float]]:
    from benchmark.common import PASSWORD_ENV
    from benchmark.servers import StdioServer
    from mcp import StdioServerParameters

    out = work / "timed.jsonl"
    env = {PASSWORD_ENV: password, "PYTHONPATH": f"{tree / 'src'}:{ROOT / 'scripts'}", _OUT: str(out)}
    if ranked_again:
        env[_RANKED_AGAIN] = "1"
    command = [str(Path(__file__).resolve()), "serve-timed", "--config", str(config)]
    params = StdioServerParameters(command=sys.executable, args=command, env=env)
    server = StdioServer("ours", params, work / f"serve-{tree.name}.log", str(config))
    found: dict[str, dict[str, float]] = {}
    read = _client_reads()
    async with server.running():
        while (await server.call("imap_list_accounts", {})).content["data"]["accounts"][0][
            "index"
        ] != "ready":
            await asyncio.sleep(0.2)
        if like:  # more like the newest message of the INBOX
            newest = await server.call("imap_search_messages", {"mailbox": "INBOX", "limit": 1})
            liked = newest.content["data"]["messages"][0]["message_id"]
            CASES["like=the newest of the INBOX"] = {"like": liked, "mailbox": "*", "limit": 20}
        for label, arguments in CASES.items():
            for _ in range(3):
                await server.call("imap_search_messages", arguments)
            out.write_text("")
            samples, calls = [], []
            cpu = _cpu_ms(server.pid), time.process_time()
            for _ in range(runs):
                sent = time.perf_counter()
                samples.append((await server.call("imap_search_messages", arguments)).ms)
                calls.append({"sent": sent, "read": read[-1], "done": time.perf_counter()})
                await asyncio.sleep(apart_s)
            layers: dict[str, list[float]] = defaultdict(list)
            timed = [json.loads(line) for line in out.read_text().splitlines()]
            for name, spent, *_ in timed:
                layers[name].append(spent)
            found[label] = {
                "client": statistics.median(samples),
                "server CPU": (_cpu_ms(server.pid) - cpu[0]) / runs,
                "client CPU": (time.process_time() - cpu[1]) * 1000 / runs,
            }
            found[label].update({name: statistics.median(spent) for name, spent in layers.items()})
            way = _way([row for row in timed if len(row) == 4], calls)
            # means, not medians: the steps of each call add up to its time, and so do their means
            found[label].update({f"way: {step}": statistics.fmean(spent) for step, spent in way.items()})
            found[label].update({f"{name} calls": len(spent) / runs for name, spent in layers.items()})
    return found


def _cpu_ms(pid: int) -> float:
    """The processor time ``pid`` has used (user and system, every thread), in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _client_reads() -> list[float]:
    """When the client begins to parse each line the server writes (appended, the last the newest)."""
    from mcp.client import stdio as stdio_module

    reads: list[float] = []
    parse = stdio_module._parse_line

    def parsed(line: str) -> Any:
        reads.append(time.perf_counter())
        return parse(line)

    stdio_module._parse_line = parsed
    return reads


#: What ``--keep DIR`` records of the Dovecot it seeded and the index it built there.
_KEPT = "kept.json"


@contextlib.contextmanager
def _served(args: argparse.Namespace) -> Iterator[tuple[Any, tuple[Path, dict[str, Any]]]]:
    """A Dovecot seeded with the corpus and the index built of it (its config and the build's figures):
    throwaway, or with ``--keep DIR`` kept in ``DIR`` (built by the first run there, served again by the
    later ones, with the same ports, password and mail, so the index's identity stays the same)."""
    from benchmark.index import _build_ours, _config, _folder_names, _seed
    from tests.support.servers.dovecot import Dovecot

    if args.keep is None:
        with tempfile.TemporaryDirectory(prefix="profile-mcp-page-") as scratch, Dovecot() as dovecot:
            user = dovecot.new_user()
            _seed(dovecot, user, args.messages, _folder_names(args.folders), None)
            config = _config(Path(scratch) / "config.toml", dovecot, user, Path(scratch) / "ix", args.engine)
            yield dovecot, (config, _build_ours(config, dovecot.password, Path(scratch) / "index.log"))
        return
    keep: Path = args.keep.resolve()
    kept_file, asked = (
        keep / _KEPT,
        {"messages": args.messages, "folders": args.folders, "engine": args.engine},
    )
    kept = json.loads(kept_file.read_text()) if kept_file.exists() else None
    if kept is not None and kept["asked"] != asked:
        raise SystemExit(f"--keep {keep} holds {kept['asked']}, not {asked}: name another directory")
    dovecot = Dovecot(password=None if kept is None else kept["password"])
    dovecot._root = keep / "dovecot"  # kept where --keep says, not in a throwaway directory
    if kept is None:
        dovecot.root.mkdir(parents=True)
        dovecot.root.chmod(0o755)  # Dovecot's processes, when they drop privileges, must traverse into it
        (dovecot.root / "tls").mkdir()
        dovecot._prepare()
    else:
        dovecot._ports = tuple(kept["ports"])  # the index's identity names the port
    dovecot._spawn()  # not start(): its exit handler deletes the instance's directory
    try:
        if kept is None:
            user = dovecot.new_user()
            _seed(dovecot, user, args.messages, _folder_names(args.folders), None)
            config = _config(keep / "config.toml", dovecot, user, keep / "ix", args.engine)
            build = _build_ours(config, dovecot.password, keep / "index.log")
            ports = list(dovecot._ports or ())
            kept = {"asked": asked, "password": dovecot.password, "ports": ports, "build": build}
            kept_file.write_text(json.dumps(kept))
        yield dovecot, (keep / "config.toml", kept["build"])
    finally:
        dovecot._terminate()


def main() -> None:
    if sys.argv[1:2] == ["serve-timed"]:
        serve_timed(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--folders", type=int, default=40)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--tree", type=Path, action="append", help="a checkout to serve from (repeatable)")
    parser.add_argument("--engine", choices=("sqlite", "sqlite+tantivy"), default="sqlite")
    parser.add_argument("--push", action="store_true", help="serve with index_fresh_from_push on")
    parser.add_argument("--about", action="append", default=[], help="time a search by meaning of this text")
    parser.add_argument("--like", action="store_true", help="time a search like the INBOX's newest message")
    parser.add_argument(
        "--keep",
        type=Path,
        help="a directory to seed and build in once (the first run) and serve from again (later runs)",
    )
    parser.add_argument(
        "--apart", type=float, action="append", help="seconds between calls (repeatable; default 0.05)"
    )
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "scripts"), str(ROOT)]
    from benchmark.index import _pushed_config

    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    for text in args.about:
        CASES[f"about={text}"] = {"about": text, "mailbox": "*", "limit": 20}
    columns = [
        "client",
        "server CPU",
        "client CPU",
        "_handle",
        "page_result",
        "search_page",
        "meaning_page",
        "MeaningRanking.page",
        "MeaningRanking._vector",
        "_keep_whys",
        "index_page",
        "fresh_page",
        "refresh",
        "keep_places",
    ]
    with (
        tempfile.TemporaryDirectory(prefix="profile-mcp-page-") as scratch,
        _served(args) as (dovecot, built),
    ):
        work = Path(scratch)
        config, build = built
        if args.push:
            config = _pushed_config(config)
        print(
            f"{args.messages:,} messages over {args.folders} folders in {args.engine}"
            f"{', index_fresh_from_push' if args.push else ''}, built in "
            f"{build['seconds']:.1f} s"
        )
        print(f"| tree | calls apart | case | {' | '.join(columns)} | load |")
        print(f"|---|---:|---|{'---:|' * len(columns)}---|")
        ranked_again_too = args.engine == "sqlite"  # RANK_KEPT_AFTER is the SQLite store's
        for tree, apart_s in itertools.product(trees, args.apart or [0.05]):
            switchable = (
                "RANK_KEPT_AFTER" in (tree / "src/mail_imap_mcp/index/engines/sqlite/pages.py").read_text()
            )
            for ranked_again in (False, True) if switchable and ranked_again_too else (False,):
                found = asyncio.run(
                    _cases(
                        config,
                        dovecot.password,
                        tree,
                        work,
                        args.runs,
                        ranked_again=ranked_again,
                        apart_s=apart_s,
                        like=args.like,
                    )
                )
                load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
                name = f"{tree.name}{', ranked again' if ranked_again else ''} | {apart_s:g} s"
                for label, row in found.items():
                    cells = " | ".join(f"{row[c]:.1f}" if c in row else "" for c in columns)
                    print(f"| {name} | {label} | {cells} | {load} |", flush=True)
                for label, row in found.items():  # the way of a call, step by step (means, ms)
                    named = [step for step, *_ in WAY] + ["gc0", "gc1", "gc2"]
                    steps = ", ".join(
                        f"{step} {row[f'way: {step}']:.1f}" for step in named if f"way: {step}" in row
                    )
                    print(f"  {label}: the way (means): {steps}", flush=True)
                for label, row in found.items():  # every timer: median ms, and calls per page
                    timers = sorted(key for key in row if f"{key} calls" in row)
                    said = ", ".join(f"{key} {row[key]:.1f} ms x{row[f'{key} calls']:g}" for key in timers)
                    print(f"  {label}: {said}", flush=True)


if __name__ == "__main__":
    main()
