"""imap_list_mailboxes with counts on a large INBOX, through MCP: Dovecot's CPU and the client's wall per call.

Dovecot keeps every folder's counts in its mailbox list index but INBOX's, so a STATUS of a closed INBOX
reads its whole ``dovecot-uidlist`` (issue 80; docs/benchmarks.md). This seeds a throwaway Dovecot with
``--inbox`` messages in INBOX (the tests' mail generator) and ``--folders`` folders of 10, then, for each
``--tree`` (a checkout's ``src``, e.g. main's ``git archive`` unpacked; default: this one) in turn,
``--rounds`` times, runs a child process that serves MCP from that tree in process and times ``--calls``
calls (after 2 untimed) of two cases: the listing asked again and again, and the listing after a read
of INBOX (a newest page of INBOX before each, not timed). ``--search`` times instead the first page of
a search of every mailbox without the local index (``mailbox: "*"``, 10 messages), which lists every
folder with its counts (LIST-STATUS) before it reads them. It prints per tree, over all rounds, the
client's median wall (ms), Dovecot's mean processor time per call (``/proc``, its processes' user +
system, ms: counted in 10 ms ticks, so a mean over many calls) and the IMAP round trips per call, with
the load average.

    .venv/bin/python scripts/profile_list_counts.py --inbox 25000 --tree /tmp/main/src --tree src
    .venv/bin/python scripts/profile_list_counts.py --search --inbox 25000 --tree /tmp/main/src --tree src
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from profile_folders import measure_in_child, tree_cpu_s  # noqa: E402

PASSWORD_ENV = "MAIL_IMAP_PROFILE_PASSWORD"
LIST = ("imap_list_mailboxes", {"include_counts": True})
SEARCH_ALL = ("imap_search_messages", {"mailbox": "*", "limit": 10})
READ = ("imap_search_messages", {"mailbox": "INBOX", "limit": 10})
#: The first message's INTERNALDATE (epoch seconds).
STARTED = 1_700_000_000.0
CASES = ("asked again", "after a read of INBOX")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inbox", type=int, default=25_000)
    parser.add_argument("--folders", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", action="append", help="a checkout's src/ (repeatable; default: this one)")
    parser.add_argument("--search", action="store_true", help="time a first page of every mailbox instead")
    parser.add_argument("--measure", nargs=2, metavar=("CONFIG", "MASTER_PID"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        found = asyncio.run(measure(Path(args.measure[0]), int(args.measure[1]), args.calls, args.search))
        print(json.dumps(found))
        return 0
    from tests.support.accounts import account_settings, config_toml
    from tests.support.mail.mailgen import plain_message
    from tests.support.servers.dovecot import Dovecot

    trees = [str(Path(tree).resolve()) for tree in args.tree or [str(ROOT / "src")]]
    with Dovecot() as dovecot, tempfile.TemporaryDirectory() as tmp:
        user = dovecot.new_user()
        # A minute apart: a search's merge by arrival reads the keys of the newest only (all in one second,
        # it reads ever more of them to find where the newest end).
        dovecot.seed(
            user,
            "INBOX",
            (plain_message(f"inbox {n}", f"body {n}") for n in range(args.inbox)),
            internaldates=lambda n: STARTED + n * 60.0,
        )
        for folder in range(args.folders):
            dovecot.seed(
                user, f"Folder {folder:02d}", [plain_message(f"f{folder} {n}", "a body") for n in range(10)]
            )
        config = Path(tmp) / "profile-list-counts.toml"
        config.write_text(
            config_toml({"default": account_settings(dovecot, user, password_env=PASSWORD_ENV)})
        )
        os.environ[PASSWORD_ENV] = dovecot.password
        master = int((dovecot.root / "run" / "master.pid").read_text().split()[0])
        samples: dict[str, dict[str, dict[str, list[float]]]] = {tree: {} for tree in trees}
        loads = [_load()]
        for _ in range(args.rounds):
            for tree in trees:
                pythonpath = os.pathsep.join([tree, str(ROOT)])
                options = ["--search"] if args.search else []
                measure_in_child(__file__, pythonpath, args.calls, (config, master), samples[tree], options)
                loads.append(_load())
    timed = SEARCH_ALL if args.search else LIST
    print(
        f"{timed[0]} {json.dumps(timed[1])}; INBOX of {args.inbox:,} messages and {args.folders} folders of 10; {args.rounds} rounds of "
        f"{args.calls} calls a case a tree, trees in turn; medians; load {', '.join(loads)}"
    )
    print(f"  {'tree':40} {'case':24} {'wall ms':>8} {'Dovecot CPU ms':>14} {'round trips':>11}")
    for tree, cases in samples.items():
        for case in CASES:
            series = cases[case]
            cells = [
                statistics.median(series["wall"]),
                statistics.mean(series["dovecot"]),
                statistics.median(series["trips"]),
            ]
            print(f"  {tree[-40:]:40} {case:24} {cells[0]:8.2f} {cells[1]:14.2f} {cells[2]:11.0f}")
    return 0


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def measure(
    config_path: Path, master: int, calls: int, search: bool
) -> dict[str, dict[str, list[float]]]:
    """Per case: the wall (ms), Dovecot's CPU (ms) and the round trips of each timed listing (``search``:
    first page of every mailbox)."""
    from tests.support.clients.in_process import open_client

    from mail_imap_mcp.app import AppContext
    from mail_imap_mcp.config import load_config

    config = load_config(config_path)
    app = AppContext.from_config(config)
    found: dict[str, dict[str, list[float]]] = {
        case: {"wall": [], "dovecot": [], "trips": []} for case in CASES
    }
    async for mcp in open_client(config, app):
        for case in CASES:
            for number in range(calls + 2):
                if case == CASES[1]:
                    await mcp.ok(*READ)
                trips, server = app.connection("default").round_trips, tree_cpu_s(master)
                wall = time.perf_counter()
                data: dict[str, Any] = await mcp.ok(*(SEARCH_ALL if search else LIST))
                wall = time.perf_counter() - wall
                if number >= 2:
                    series = found[case]
                    series["wall"].append(wall * 1000)
                    series["dovecot"].append((tree_cpu_s(master) - server) * 1000)
                    series["trips"].append(app.connection("default").round_trips - trips)
                if search:
                    assert len(data["messages"]) == 10, data
                else:
                    assert all(box.get("messages") is not None for box in data["mailboxes"]), data
    return found


if __name__ == "__main__":
    raise SystemExit(main())
