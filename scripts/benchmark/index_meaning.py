"""Indexing with ``index_meaning`` on against off (``scripts/bench --index-only --index-meaning``).

One corpus (the index section's: ``mailgen``'s messages, its seed, over ``--index-folders`` folders) in
one throwaway Dovecot; ``mail-imap-mcp index`` builds the index over IMAP into a fresh directory with
``index_meaning`` off, then on, ``--index-rounds`` times in turn, so each ratio is of two builds back to
back under the same load. Each build's wall time, its CPU time (every thread's) and the load average
after it are printed, and each round's ratio (on against off) of both.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.support.servers.dovecot import Dovecot

from benchmark.common import say
from benchmark.index import _config, _folder_names, _seed, run_index_command


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_meaning_bench(messages: int, folder_count: int, work: Path, engine: str, rounds: int) -> None:
    """Seed, then build off and on ``rounds`` times; print a table."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    with Dovecot() as dovecot:
        user = dovecot.new_user()
        say(f"index meaning: seeding {messages} messages over {folder_count} folders")
        _seed(dovecot, user, messages, _folder_names(folder_count), None)
        print(
            f"`mail-imap-mcp index` of {messages:,} messages over {folder_count} folders ({engine}), "
            f"load before {_load()} ({os.cpu_count()} cores)"
        )
        print("| round | index_meaning | wall | CPU | load after | on / off (wall) | on / off (CPU) |")
        print("|---:|---|---:|---:|---|---:|---:|")
        for round_ in range(1, rounds + 1):
            off = None
            for meaning in (False, True):
                name = f"r{round_}-{'on' if meaning else 'off'}"
                config = _config(work / f"{name}.toml", dovecot, user, work / name, engine)
                config.write_text(
                    config.read_text().replace(
                        "[server]\n", f"[server]\nindex_meaning = {str(meaning).lower()}\n", 1
                    )
                )
                done = run_index_command(config, dovecot.password, work / f"{name}.log")
                shutil.rmtree(work / name)
                ratios = (
                    "| |"
                    if off is None
                    else (
                        f"| {done.seconds / off.seconds:.2f}x | {done.cpu_seconds / max(off.cpu_seconds, 0.1):.2f}x |"
                    )
                )
                print(
                    f"| {round_} | {'on' if meaning else 'off'} | {done.seconds:.1f} s | {done.cpu_seconds:.1f} s | "
                    f"{_load()} {ratios}",
                    flush=True,
                )
                off = done
