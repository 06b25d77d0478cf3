"""Benchmark the rules' dry run and listing (issue 91's speed targets; measured, never a timed test).

    .venv/bin/python scripts/bench_rules.py [--messages N] [--matching M] [--runs R]

On a throwaway Dovecot with Pigeonhole's ManageSieve (tests/support/servers/sieve.py), INBOX holding
``--messages`` messages (10,000 by default), ``--matching`` of them from ``news@lists.example``, the
account's local index built, through the MCP SDK's client in process:

- **the dry run**: ``imap_manage_rules`` ``try`` of ``from:news@lists.example`` against
  ``imap_search_messages`` of the same query in INBOX, alternating, the median of ``--runs`` each
  (target: the dry run within 2x the search);
- **listing rules**: the ManageSieve round trips of ``imap_manage_rules`` ``list`` after login (each
  write of the session that waits for an answer), with a rule saved and the user's own active script
  including the rules (target: one).

Prints one JSON object with the figures and the load (``/proc/loadavg``) at start and end; the figures go
to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.accounts import PASSWORD_ENV, account_settings  # noqa: E402
from tests.support.clients.in_process import make_config, open_client  # noqa: E402
from tests.support.clients.index_clients import wait_ready  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402
from tests.support.servers.sieve import SieveDovecot  # noqa: E402
from tests.support.shared.rules import TOOL, sieve_scripts  # noqa: E402

from mail_imap_mcp.app import AppContext  # noqa: E402
from mail_imap_mcp.app import sieve as app_sieve  # noqa: E402
from mail_imap_mcp.managesieve import session as sieve_session  # noqa: E402

QUERY = "from:news@lists.example"
USERS = 'require ["fileinto"];\nif header :contains "subject" "Rechnung" {\n  fileinto "INBOX";\n}\n'


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _seed(server: SieveDovecot, user: str, messages: int, matching: int) -> None:
    every = max(messages // max(matching, 1), 1)
    batch = [
        mailgen.plain_message(
            f"Message {n}",
            "text",
            from_="News <news@lists.example>"
            if n % every == 0 and n // every < matching
            else "A <a@example.com>",
            message_id=f"<m{n}@bench>",
        )
        for n in range(messages)
    ]
    server.seed(user, "INBOX", batch)


class _Turns:
    """Each write of a ManageSieve session after its login: a round trip (it then waits for an answer)."""

    def __init__(self) -> None:
        self.count = 0
        self.counting = False
        send = sieve_session.ManageSieveSession._send

        def counted(session: Any, *parts: bytes) -> None:
            if self.counting and parts[:1] != (b"LOGOUT",):
                self.count += 1
            send(session, *parts)

        _patch(sieve_session.ManageSieveSession, "_send", counted)
        opened = sieve_session.open_session

        def opening(*args: Any, **kwargs: Any) -> Any:
            was, self.counting = self.counting, False  # the login's commands are not counted
            try:
                return opened(*args, **kwargs)
            finally:
                self.counting = was

        _patch(app_sieve, "open_session", opening)


def _patch(owner: object, name: str, value: object) -> None:
    """``owner.name`` replaced by ``value`` for the rest of the run (this process measures, then ends)."""
    setattr(owner, name, value)


def _timed_dry_run() -> list[float]:
    """The dry run's own time in each call (its searches, without the rest of the tool's call: the
    ManageSieve session, the mailbox's check), kept in the list returned."""
    from mail_imap_mcp.tools.manage_rules import checks

    times: list[float] = []
    dry_run = getattr(checks, "dry_run")  # noqa: B009  (replaced below)

    def timed(*args: Any) -> Any:
        started = time.monotonic()
        try:
            return dry_run(*args)
        finally:
            times.append(time.monotonic() - started)

    _patch(checks, "dry_run", timed)
    return times


async def _bench(args: argparse.Namespace, server: SieveDovecot, work: Path) -> dict[str, Any]:
    user = server.new_user()
    _seed(server, user, args.messages, args.matching)
    with sieve_scripts(server, user) as scripts:
        scripts.put_script("mine", USERS)
        scripts.activate("mine")
    turns = _Turns()
    alone = _timed_dry_run()
    account = account_settings(server, user, sieve={"port": server.managesieve_port}, rules_enabled=True)
    config = make_config({"default": account}, index=True, index_dir=str(work / "index"))
    app = AppContext.from_config(config)
    tried: list[float] = []
    searched: list[float] = []
    result: dict[str, Any] = {}
    async for mcp in open_client(config, app):
        started = time.monotonic()
        state = await wait_ready(mcp, within=1800)
        result["index_ready_s"] = round(time.monotonic() - started, 1)
        result["index"] = state
        dry = {}
        for _ in range(args.runs):
            started = time.monotonic()
            dry = (await mcp.ok(TOOL, {"action": "try", "query": QUERY, "mailbox": "INBOX"}))["dry_run"]
            tried.append(time.monotonic() - started)
            started = time.monotonic()
            found = await mcp.ok("imap_search_messages", {"query": QUERY, "mailbox": "INBOX", "limit": 5})
            searched.append(time.monotonic() - started)
        result["dry_run"] = {"matched": dry["matched"], "of": dry["of"]}
        result["search_total"] = found.get("total", found.get("total_estimate"))
        await mcp.ok(TOOL, {"action": "save", "name": "News", "query": QUERY, "mailbox": "INBOX"})
        turns.counting = True
        turns.count = 0
        listed = await mcp.ok(TOOL, {"action": "list"})
        turns.counting = False
        result["list"] = {"rules": len(listed["rules"]), "where": listed["where"], "round_trips": turns.count}
    result["dry_run_ms"] = round(statistics.median(tried) * 1000, 1)
    result["search_ms"] = round(statistics.median(searched) * 1000, 1)
    result["ratio"] = round(statistics.median(tried) / statistics.median(searched), 2)
    result["dry_run_alone_ms"] = round(statistics.median(alone) * 1000, 1)
    result["dry_runs_ms"] = [round(t * 1000) for t in tried]
    result["searches_ms"] = [round(t * 1000) for t in searched]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--matching", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    load_at_start = _load()
    with tempfile.TemporaryDirectory(prefix="bench-rules-") as work, SieveDovecot() as server:
        os.environ[PASSWORD_ENV] = server.password
        result = anyio.run(_bench, args, server, Path(work))
    result.update(messages=args.messages, matching=args.matching, runs=args.runs, query=QUERY,
                  load_at_start=load_at_start, load_at_end=_load())  # fmt: skip
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
