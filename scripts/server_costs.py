"""What each session server of tests/support/server_fixtures.py costs (docs/test-suite.md): started
through the harness, given one user, left idle, stopped; the CPU seconds of this process, of the children it reaped,
and of the live process tree just before the stop. Run by ``scripts/worker_costs``, or alone:
``.venv/bin/python scripts/server_costs.py [--idle S] [NAME ...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.servers.courier import Courier  # noqa: E402  (after the path above)
from tests.support.servers.cyrus import Cyrus  # noqa: E402
from tests.support.servers.dovecot import Dovecot  # noqa: E402
from tests.support.servers.gmail import Gmail  # noqa: E402
from tests.support.servers.identity_provider import IdentityProvider  # noqa: E402
from tests.support.servers.matrix import SESSION_PASSWORD  # noqa: E402
from tests.support.servers.oidc_provider import OidcProvider  # noqa: E402
from tests.support.servers.postgres import PostgresServer  # noqa: E402

SERVERS: dict[str, Callable[[], Any]] = {
    "dovecot": lambda: Dovecot(strict_listener=True, password=SESSION_PASSWORD),
    "cyrus": lambda: Cyrus(password=SESSION_PASSWORD),
    "cyrus_altns": lambda: Cyrus(altnamespace=True, password=SESSION_PASSWORD),
    "courier": lambda: Courier(password=SESSION_PASSWORD),
    "gmail": lambda: Gmail(password=SESSION_PASSWORD),
    "postgres": PostgresServer,
    "oidc": lambda: OidcProvider(Path(tempfile.mkdtemp())),
    "idp": IdentityProvider,
}


def _own_and_reaped() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _live_tree() -> float:
    """CPU seconds of this process's live descendants, with the children each of them reaped."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = sum(int(field) for field in fields[11:15])
    me, total = os.getpid(), 0
    for pid, spent in ticks.items():
        ancestor = parents.get(pid, 0)
        while ancestor > 1 and ancestor != me:
            ancestor = parents.get(ancestor, 0)
        total += spent if ancestor == me else 0
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds each server is left idle")
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(SERVERS)} (default: all)")
    args = parser.parse_args()
    unknown = set(args.names) - set(SERVERS)
    if unknown:
        parser.error(f"no such server: {', '.join(sorted(unknown))}")
    os.environ["HOME"] = tempfile.mkdtemp()  # never the user's
    for name in args.names or SERVERS:
        before = _own_and_reaped()
        with SERVERS[name]() as server:
            new_user = getattr(server, "new_user", None)
            if new_user is not None:
                new_user()
            time.sleep(args.idle)
            live = _live_tree()
            held = _own_and_reaped() - before
        stopped = _own_and_reaped() - before
        print(
            f"{name}: {stopped:.2f} CPU-s started, one user, {args.idle:.0f} s idle, stopped"
            f" (the live tree before the stop: {live + held:.2f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
