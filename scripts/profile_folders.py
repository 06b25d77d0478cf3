"""CPU of a search of every folder (``mailbox: "*"``), in process, against a throwaway Dovecot.

Seeds the folders axis's account of ``scripts/bench`` (``benchmark.folders.seed_folders``: N folders of
30 messages, 6 holding one message from the sender searched for), builds our app in this process with
the bench's config (no summaries kept, every page a first view) and times, per call, the wall and the
CPU of this process (``time.process_time``) of the three calls of the folders axis (the sender search,
the newest page, its next page) and the same two searches of INBOX alone: the median of ``--calls``
calls each after a warm-up, handler + envelope + result JSON as the MCP layer builds them. No link,
no TLS proxy, no MCP framing: the server's own CPU, which the bench's loopback figures are made of
(with Dovecot's). ``--profile`` then prints a cProfile (CPU time) of each every-folder call.

    .venv/bin/python scripts/profile_folders.py [--folders 40] [--calls 15] [--profile]
    .venv/bin/python scripts/profile_folders.py --compare /tmp/main-src --rounds 3   # A/B, alternating
    .venv/bin/python scripts/profile_folders.py --cursor-sizes 10 40 100   # next_cursor bytes per page
    .venv/bin/python scripts/profile_folders.py --cursor-sizes 10 40 100 --without-sort
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchmark.folders import OPS, seed_folders  # noqa: E402
from benchmark.replay import app_caller  # noqa: E402
from benchmark.servers import FIRST_VIEW_SERVER  # noqa: E402
from tests.support.accounts import account_settings, config_toml  # noqa: E402

PASSWORD_ENV = "MAIL_IMAP_PROFILE_PASSWORD"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folders", type=int, default=40)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of each call")
    parser.add_argument(
        "--compare",
        metavar="SRC",
        help="another checkout's src/ (e.g. main's): both measured in child processes, alternating "
        "--rounds times on the same Dovecot, medians over all rounds",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--cursor-sizes",
        type=int,
        nargs="+",
        metavar="FOLDERS",
        help="instead: the length of next_cursor on each of the first --pages pages of the newest page of "
        "every folder, for each of these numbers of folders",
    )
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument(
        "--without-sort",
        action="store_true",
        help="with --cursor-sizes: a Dovecot that advertises no SORT, ESEARCH or LIST-STATUS (as Gmail)",
    )
    parser.add_argument("--measure", nargs=2, metavar=("CONFIG", "DOVECOT_PID"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:  # a child of --compare: this process's mail_imap_mcp comes from its PYTHONPATH
        print(json.dumps(measure(Path(args.measure[0]), args.calls, int(args.measure[1]))))
        return 0
    from tests.support.servers.dovecot import Dovecot

    if args.cursor_sizes:
        capabilities = WITHOUT_SORT if args.without_sort else None
        with Dovecot(user_patterns=("benchf*",), default_user="benchf", capabilities=capabilities) as dovecot:
            cursor_sizes(dovecot, args.cursor_sizes, args.pages)
        return 0
    with (
        Dovecot(user_patterns=("benchf*",), default_user="benchf") as dovecot,
        tempfile.TemporaryDirectory() as tmp,
    ):
        user = seed_folders(dovecot, args.folders)
        settings = account_settings(dovecot, user, password_env=PASSWORD_ENV)
        server = "".join(f"{key} = {value}\n" for key, value in FIRST_VIEW_SERVER.items())
        config = Path(tmp) / "profile-folders.toml"
        config.write_text(config_toml({"default": settings}) + "\n[server]\n" + server)
        os.environ[PASSWORD_ENV] = dovecot.password
        master = int((dovecot.root / "run" / "master.pid").read_text().split()[0])
        if args.compare:
            compare(config, args, master)
        else:
            print(f"{args.folders} folders of 30 messages, in process, median of {args.calls} calls")
            report({"this checkout": measure(config, args.calls, master)})
            if args.profile:
                profile(config)
    return 0


#: What a server without SORT offers in ``--without-sort``: Dovecot told to advertise only these.
WITHOUT_SORT = "IMAP4rev1 LITERAL+ UNSELECT SPECIAL-USE"


def cursor_sizes(dovecot: Any, counts: Sequence[int], pages: int) -> None:
    """Print the characters of each page's ``next_cursor`` when the newest messages of every folder are
    paged through, per number of folders (what an agent reads and echoes back with every page)."""
    print(f"next_cursor length (characters) of pages 1-{pages} of {OPS['newest'][0]}")
    for count in counts:
        user = seed_folders(dovecot, count)
        settings = account_settings(dovecot, user, password_env=PASSWORD_ENV)
        os.environ[PASSWORD_ENV] = dovecot.password
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "cursor-sizes.toml"
            config.write_text(config_toml({"default": settings}))
            app, call = app_caller(config)
            arguments = dict(OPS["newest"][1] or {})
            sizes = []
            for _ in range(pages):
                cursor = call(arguments)["next_cursor"]
                if not cursor:
                    break
                sizes.append(len(cursor))
                arguments = {**arguments, "cursor": cursor}
            app.close()
        print(f"  {count:4d} folders: " + ", ".join(f"{size:,}" for size in sizes))


def compare(config: Path, args: argparse.Namespace, master: int) -> None:
    sources = {"this checkout": str(ROOT / "src"), "compared": str(Path(args.compare).resolve())}
    samples: dict[str, dict[str, dict[str, list[float]]]] = {name: {} for name in sources}
    for _ in range(args.rounds):
        for name, src in sources.items():
            measure_in_child(__file__, src, args.calls, (config, master), samples[name])
    print(
        f"{args.folders} folders of 30 messages, in child processes alternating {args.rounds} rounds of "
        f"{args.calls} calls each: medians of all calls (this checkout's src/ against {args.compare})"
    )
    report(samples)


def report(samples: dict[str, dict[str, dict[str, list[float]]]]) -> None:
    print(f"  {'call':45} {'':14} {'wall ms':>8} {'our CPU ms':>10} {'Dovecot CPU ms':>14}")
    for key in OPS:
        for name, series in samples.items():
            cells = [statistics.median(series[key][column]) for column in ("wall", "cpu", "dovecot")]
            print(f"  {OPS[key][0]:45} {name:14} {cells[0]:8.1f} {cells[1]:10.1f} {cells[2]:14.0f}")


def measure_in_child(
    script: str,
    pythonpath: str,
    calls: int,
    served: tuple[Path, int],
    into: dict[str, dict[str, list[float]]],
    options: Sequence[str] = (),
) -> None:
    """Run ``script --calls N [options] --measure CONFIG MASTER_PID`` (``served``: the config and Dovecot's
    master pid) with ``pythonpath`` and add the series its last line prints (JSON: case, column, values)
    to ``into``."""
    config, master = served
    child = [sys.executable, script, "--calls", str(calls), *options, "--measure", str(config), str(master)]
    env = {**os.environ, "PYTHONPATH": pythonpath}
    out = subprocess.run(child, env=env, capture_output=True, text=True, check=True).stdout
    for case, series in json.loads(out.splitlines()[-1]).items():
        for column, values in series.items():
            into.setdefault(case, {}).setdefault(column, []).extend(values)


def tree_cpu_s(root_pid: int) -> float:
    """CPU seconds (user + system) of ``root_pid``'s live descendants: Dovecot's login and imap processes."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def _calls(call: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Callable[[], Any]]:
    """The calls of the folders axis by key; the next page's cursor from a newest page."""
    newest = OPS["newest"][1]
    assert newest is not None
    cursor = call(newest)["next_cursor"]
    assert cursor, "no next page of the newest page"
    calls_by_key: dict[str, Callable[[], Any]] = {}
    for key, (_, arguments) in OPS.items():
        follow = {**newest, "cursor": cursor} if arguments is None else arguments
        calls_by_key[key] = functools.partial(call, follow)
    return calls_by_key


def measure(config_path: Path, calls: int, dovecot_pid: int) -> dict[str, dict[str, list[float]]]:
    """Per call of the folders axis, after a warm-up: wall ms, this process's CPU ms (user + system,
    getrusage) and Dovecot's (its processes' ticks in /proc), one sample per call."""
    app, call = app_caller(config_path)
    samples: dict[str, dict[str, list[float]]] = {}
    for key, page in _calls(call).items():
        series: dict[str, list[float]] = {"wall": [], "cpu": [], "dovecot": []}
        page()
        for _ in range(calls):
            wall, cpu, server = time.perf_counter(), _cpu_s(), tree_cpu_s(dovecot_pid)
            page()
            series["wall"].append((time.perf_counter() - wall) * 1000)
            series["cpu"].append((_cpu_s() - cpu) * 1000)
            series["dovecot"].append((tree_cpu_s(dovecot_pid) - server) * 1000)
        samples[key] = series
    app.close()
    return samples


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def profile(config_path: Path) -> None:
    """A cProfile (CPU time) of 10 calls of each every-folder call."""
    app, call = app_caller(config_path)
    calls_by_key = _calls(call)
    for key in ("filtered", "newest", "next"):
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(10):
            calls_by_key[key]()
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(45)
        print(f"\n===== {OPS[key][0]} under cProfile (10 calls, CPU time)")
        print(out.getvalue())
    app.close()


if __name__ == "__main__":
    sys.exit(main())
