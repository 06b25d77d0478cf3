"""Benchmark a move by search behind a slow link, and a cancel (issue 89 item 12), for two source trees
back to back.

    .venv/bin/python scripts/bench_bulk_link.py [--src DIR ...] [--messages N] [--rtt-ms MS] [--cap-s S]

For each ``--src`` (a ``src`` directory: this tree's by default; an export of another commit's, e.g.
``git archive e01db76 src | tar -x -C /tmp/base``), ``mail-imap-mcp serve`` runs over stdio with that
tree first on ``PYTHONPATH`` and:

- **the move**: Dovecot behind ``tests/support/servers/linkproxy.py`` (half of ``--rtt-ms`` each way;
  ``connect_timeout_s`` 3, ``command_timeout_s`` 4, as in the issue), INBOX holding ``--messages``
  newsletters and a tenth as many others; once a first call has connected, every newsletter moved to
  Trash by search (no question:
  ``bulk_approval_threshold`` above the count), from the call to the operation's end (a run still going
  after ``--cap-s`` is cancelled and reported with what it had moved). Every mailbox counted after.
  The floor: one round trip per ``UID MOVE`` of 500 UIDs (``messages / 500`` round trips).
- **a cancel**: the move run again with the same link (moved back first) and on Courier without a link,
  cancelled once 40% is done: from ``imap_cancel_operation`` to the operation's end.

Prints one JSON object per tree and measurement; nothing is written to docs/ (the figures go there by hand,
with the load printed here).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchmark.common import PASSWORD_ENV, SERVER_BIN  # noqa: E402
from benchmark.network import Link  # noqa: E402
from benchmark.servers import StdioServer  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402
from tests.support.accounts import account_settings, config_toml  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402
from tests.support.servers.courier import Courier  # noqa: E402
from tests.support.servers.dovecot import Dovecot  # noqa: E402
from tests.support.servers.matrix import MatrixServer  # noqa: E402

QUERY = "from:news@lists.example"
#: UIDs one UID MOVE takes at most: the floor is one round trip per this many messages.
PER_MOVE = 500


def _seed(server: MatrixServer, user: str, messages: int) -> None:
    news = [
        mailgen.plain_message(f"News {n}", "issue", from_="News <news@lists.example>", message_id=f"<n{n}@l>")
        for n in range(messages)
    ]
    rest = [mailgen.plain_message(f"Other {n}", "x", message_id=f"<o{n}@t>") for n in range(messages // 10)]
    server.seed(user, "INBOX", news + rest)
    server.seed(user, server.mailbox_name("Trash"), [])


def _counts(server: MatrixServer, user: str) -> dict[str, int]:
    with server.connect(user) as imap:
        return {
            box: int(imap.folder_status(box, [b"MESSAGES"])[b"MESSAGES"])
            for box in ("INBOX", server.mailbox_name("Trash"))
        }


def _server(src: Path, server: MatrixServer, user: str, port: int, work: Path) -> StdioServer:
    extra = {"trash_mailbox": server.mailbox_name("Trash")} if isinstance(server, Courier) else {}
    account = account_settings(
        server,
        user,
        host="127.0.0.1",
        port=port,
        security="plain",
        ca_file=None,
        password_env=PASSWORD_ENV,
        connect_timeout_s=3,
        command_timeout_s=4,
        **extra,
    )
    config = work / f"{type(server).__name__}-{user}.toml"
    config.write_text(
        config_toml({"default": account})
        + "\n[server]\nwrite_enabled = true\nbulk_approval_threshold = 1000000\nbackground_after_s = 0\n"
    )
    env = {PASSWORD_ENV: server.password, "PYTHONPATH": str(src), "MAIL_IMAP_MCP_LOG_LEVEL": "DEBUG"}
    params = StdioServerParameters(command=str(SERVER_BIN), args=["serve", "--config", str(config)], env=env)
    return StdioServer("mail-imap-mcp", params, config.with_suffix(".log"), str(config))


async def _state(mcp: StdioServer, operation: str) -> dict[str, Any]:
    return dict((await mcp.call("imap_get_operation", {"operation_id": operation})).content["data"])


async def _move(mcp: StdioServer, cap_s: float, cancel_at: float | None) -> dict[str, Any]:
    """The move to Trash by search: seconds to its end (or to the cap, then cancelled), and a cancel's
    latency when ``cancel_at`` (a share done) is given."""
    trips_before = _round_trips(mcp)
    started = time.perf_counter()
    answer = await mcp.call(
        "imap_apply_to_messages", {"query": QUERY, "mailbox": "INBOX", "action": "delete"}
    )
    operation = answer.content["data"]["background"]["operation_id"]
    matched, asked = None, None
    while True:
        polled = await _state(mcp, operation)
        view = polled["operation"]
        if view["state"] not in ("accepted", "running"):
            break
        total = view.get("total") or 1
        due = cancel_at is not None and view["done"] >= cancel_at * total
        if asked is None and (due or time.perf_counter() - started > cap_s):
            asked = time.perf_counter()
            matched = view["done"]
            await mcp.call("imap_cancel_operation", {"operation_id": operation})
        await anyio.sleep(0.02)
    ended = time.perf_counter()
    search = (polled.get("result") or {}).get("search") or {}
    return {
        "state": view["state"],
        "seconds": round(ended - started, 2),
        "done": search.get("done", view["done"]),
        "cancel_asked_at_done": matched,
        "cancel_ms": None if asked is None else round((ended - asked) * 1000),
        "round_trips": _round_trips(mcp) - trips_before,
    }


def _round_trips(mcp: StdioServer) -> int:
    """The round trips the server's calls waited for so far (its DEBUG log's ``round_trips=N`` lines)."""
    return sum(
        int(found) for found in re.findall(r"round_trips=(\d+)", mcp.log_path.read_text(errors="replace"))
    )


async def _undo(server: MatrixServer, user: str) -> None:
    """Everything back in INBOX (a session of the bench's own)."""
    with server.connect(user) as imap:
        imap.select_folder(server.mailbox_name("Trash"))
        uids = imap.search(["ALL"])
        if uids:
            imap.move(uids, "INBOX")


def _scratch() -> Any:
    """Where the configs and the servers' logs go: ``MIM_BENCH_KEEP`` (kept), else a temporary folder."""
    kept = os.environ.get("MIM_BENCH_KEEP")
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        return contextlib.nullcontext(kept)
    return tempfile.TemporaryDirectory()


async def run_tree(src: Path, messages: int, rtt_ms: int, cap_s: float) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with _scratch() as scratch, Dovecot() as dovecot:
        work = Path(scratch)
        user = dovecot.new_user()
        _seed(dovecot, user, messages)
        with Link((dovecot.host, dovecot.plain_port), rtt_ms / 2000) as link:
            async with _server(src, dovecot, user, link.port, work).running() as mcp:
                await mcp.call("imap_list_mailboxes", {})  # connected and logged in: the floor has no connect
                moved = await _move(mcp, cap_s, None)
                floor_s = messages / PER_MOVE * rtt_ms / 1000
                moved.update(
                    what=f"move {messages} by search, Dovecot, {rtt_ms} ms RTT",
                    floor_s=floor_s,
                    ratio_to_floor=round(moved["seconds"] / floor_s, 2),
                    counts_after=_counts(dovecot, user),
                )
                results.append(moved)
                await _undo(dovecot, user)
                cancel = await _move(mcp, cap_s, 0.4)
                cancel.update(
                    what=f"cancel at 40%, Dovecot, {rtt_ms} ms RTT", counts_after=_counts(dovecot, user)
                )
                results.append(cancel)
    with _scratch() as scratch, Courier() as courier:
        work = Path(scratch)
        user = courier.new_user()
        _seed(courier, user, messages)
        async with _server(src, courier, user, courier.plain_port, work).running() as mcp:
            cancel = await _move(mcp, cap_s, 0.4)
            cancel.update(what="cancel at 40%, Courier, no link", counts_after=_counts(courier, user))
            results.append(cancel)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, action="append", help="a src directory (repeatable)")
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--rtt-ms", type=int, default=1000)
    parser.add_argument("--cap-s", type=float, default=240.0)
    args = parser.parse_args()
    load = os.getloadavg()
    for src in args.src or [ROOT / "src"]:
        for result in anyio.run(run_tree, src.resolve(), args.messages, args.rtt_ms, args.cap_s):
            print(
                json.dumps({"src": str(src), "load_at_start": [round(x, 2) for x in load], **result}),
                flush=True,
            )
        load = os.getloadavg()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
