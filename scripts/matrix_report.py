"""Servers x behaviours: what each IMAP server of the test matrix does, and what each call costs on it.

Starts throwaway Dovecot, Cyrus (both namespaces) and Courier servers on loopback, then
1. probes, with plain IMAP sessions, how each server tells a session about changes made by another
   session (the facts the freshness design rests on);
2. runs the read tools through the SDK's MCP client (in process) and counts, per call, the IMAP
   commands sent and the round trips they cost (pipelined commands share one);
3. lists the extensions each server advertises and which of them the server used.

Writes the tables into docs/reliability.md (between the ``matrix`` markers) and docs/matrix.json.
Run it with ``scripts/matrix-report``; ``--no-write`` only prints.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402
from tests.support.accounts import PASSWORD_ENV, account_settings  # noqa: E402
from tests.support.clients.envelope_client import EnvelopeClient  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402
from tests.support.servers.courier import Courier  # noqa: E402
from tests.support.servers.cyrus import Cyrus  # noqa: E402
from tests.support.servers.dovecot import Dovecot  # noqa: E402
from tests.support.servers.matrix import MatrixServer  # noqa: E402

from mail_imap_mcp.app import AppContext  # noqa: E402
from mail_imap_mcp.config import Config  # noqa: E402
from mail_imap_mcp.server import build_server  # noqa: E402

SERVERS: dict[str, Callable[[], MatrixServer]] = {
    "Dovecot": Dovecot,
    "Cyrus": Cyrus,
    "Cyrus (altnamespace)": lambda: Cyrus(altnamespace=True),
    "Courier": Courier,
}
EXTENSIONS = (
    "ESEARCH",
    "LITERAL+",
    "UNSELECT",
    "SPECIAL-USE",
    "MOVE",
    "UIDPLUS",
    "CONDSTORE",
    "SORT",
    "IDLE",
)
#: Extensions the server sends when advertised (and works without): what each is for.
USED = {"ESEARCH": "total of a filtered search", "LITERAL+": "non-ASCII search text", "UNSELECT": "counts"}
START, END = "<!-- matrix:start -->", "<!-- matrix:end -->"


@contextlib.contextmanager
def session(server: MatrixServer, user: str, mailbox: str) -> Iterator[Any]:
    client = server.connect(user)
    try:
        client.select_folder(mailbox, readonly=True)
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.logout()


def probe(server: MatrixServer) -> dict[str, str]:
    """How the server reports another session's changes to a session that keeps the mailbox open."""
    user = server.new_user("t-probe")
    folder = server.mailbox_name("Probe")
    server.seed(user, folder, [mailgen.plain_message(f"p{i}", "x") for i in range(3)])
    facts: dict[str, str] = {}
    with session(server, user, folder) as watcher:
        server.seed(user, folder, [mailgen.plain_message("p3", "x")])
        facts["new mail, SEARCH without NOOP"] = "seen" if len(watcher.search("ALL")) == 4 else "not seen"
        watcher.noop()
        facts["new mail, after NOOP"] = "seen" if len(watcher.search("ALL")) == 4 else "not seen"
    with session(server, user, folder) as watcher:
        _, new = server.recreate_mailbox(user, folder)
        imap = watcher._imap
        noop = imap._command("NOOP")
        status = imap._command("STATUS", watcher._normalise_folder(folder), b"(UIDVALIDITY)")
        try:
            imap._command_complete("NOOP", noop)
            typ, _ = imap._command_complete("STATUS", status)
            warned = "untagged NO" if imap.untagged_responses.get("NO") else "nothing"
            answer = b" ".join(x for x in imap.untagged_responses.get("STATUS", []) if isinstance(x, bytes))
            found = re.search(rb"UIDVALIDITY (\d+)", answer)
            if typ != "OK":
                told = f"STATUS {typ}"
            elif found and int(found.group(1)) == new:
                told = "new UIDVALIDITY"
            else:
                told = "old UIDVALIDITY (view)"
        except Exception as exc:  # a server may hang up on the session instead
            warned, told = f"{type(exc).__name__}", "-"
        facts["mailbox recreated: NOOP says"] = warned
        facts["mailbox recreated: STATUS says"] = told
    return facts


async def costs(server: MatrixServer) -> list[dict[str, Any]]:
    """IMAP commands and round trips of each read tool call, in a realistic order."""
    user = server.new_user("t-cost")
    folder = server.mailbox_name("Archive")
    server.seed(user, "INBOX", list(mailgen.corpus(60)))
    server.seed(user, folder, list(mailgen.corpus(5, seed=3)))
    config = Config.model_validate({"accounts": {"default": account_settings(server, user)}})
    app = AppContext.from_config(config)
    connection = app.connection("default")
    rows: list[dict[str, Any]] = []

    async with Client(build_server(config, app)) as client:
        mcp = EnvelopeClient(client)

        async def measure(label: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
            commands, pipelined = connection.commands_sent, connection.pipelined_commands
            data = await mcp.ok(tool, arguments)
            sent = connection.commands_sent - commands
            trips = sent - (connection.pipelined_commands - pipelined)
            rows.append({"call": label, "tool": tool, "commands": sent, "round_trips": trips})
            return data

        await measure("first call (connect, login, LIST)", "imap_list_mailboxes")
        await measure("mailboxes with counts", "imap_list_mailboxes", {"include_counts": True})
        page = await measure(
            "search, newest page (mailbox not selected)", "imap_search_messages", {"limit": 10}
        )
        await measure("search, newest page again (selection reused)", "imap_search_messages", {"limit": 10})
        await measure("search, next page (cursor)", "imap_search_messages", page["next_action"]["arguments"])
        await measure(
            "search, filtered first page", "imap_search_messages", {"subject": "report", "limit": 10}
        )
        await measure("search, non-ASCII text", "imap_search_messages", {"query": "Grüße", "limit": 10})
        message_id = page["messages"][0]["message_id"]
        await measure("get_message", "imap_get_message", {"message_id": message_id})
        await measure("get_message_raw", "imap_get_message_raw", {"message_id": message_id})
        await measure("search in another mailbox", "imap_search_messages", {"mailbox": folder})
        await measure("search, back in INBOX", "imap_search_messages", {"limit": 10})
        server.seed(user, "INBOX", [mailgen.plain_message("arrived meanwhile", "x")])
        await measure("search after another session delivered mail", "imap_search_messages", {"limit": 10})
    app.close()
    return rows


def run() -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, factory in SERVERS.items():
        print(f"[matrix] {name}", file=sys.stderr)
        with factory() as server:
            os.environ[PASSWORD_ENV] = server.password
            probe_user = server.new_user("t-caps")
            client = server.connect(probe_user)
            try:
                advertised = {c.decode().upper() for c in client.capabilities()}
            finally:
                client.logout()
            report[name] = {
                "extensions": [e for e in EXTENSIONS if e in advertised],
                "behaviour": probe(server),
                "calls": asyncio.run(costs(server)),
            }
    return report


def markdown(report: dict[str, Any]) -> str:
    names = list(report)
    lines = [
        START,
        "_Generated by `scripts/matrix-report` (Dovecot 2.3, Cyrus 3.6, Courier-IMAP 5.0 from Debian 12);"
        " do not edit by hand._",
        "",
        "How each server reports another session's changes to a session that keeps the mailbox selected:",
        "",
        "| behaviour | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for fact in report[names[0]]["behaviour"]:
        lines.append(f"| {fact} | " + " | ".join(report[n]["behaviour"][fact] for n in names) + " |")
    lines += [
        "",
        "IMAP commands / round trips per call (pipelined commands share a round trip; a non-ASCII search"
        " on a server without LITERAL+ also waits once per literal, not counted here):",
        "",
        "| call | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for index, row in enumerate(report[names[0]]["calls"]):
        cells = []
        for name in names:
            other = report[name]["calls"][index]
            cells.append(f"{other['commands']} / {other['round_trips']}")
        lines.append(f"| {row['call']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Extensions advertised (of those that matter here), and used by this server when advertised: "
        + "; ".join(f"{ext} ({why})" for ext, why in USED.items())
        + ". Everything works without each of them (`tests/integration/surface/test_imap_extensions.py`).",
        "",
        "| server | advertised |",
        "|---|---|",
    ]
    for name in names:
        lines.append(f"| {name} | {', '.join(report[name]['extensions']) or '-'} |")
    lines.append(END)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print the tables, write no files")
    args = parser.parse_args()
    report = run()
    table = markdown(report)
    print(table)
    if args.no_write:
        return
    (ROOT / "docs" / "matrix.json").write_text(json.dumps(report, indent=2) + "\n")
    doc = ROOT / "docs" / "reliability.md"
    text = doc.read_text()
    if START in text:
        text = text[: text.index(START)] + table + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n## Servers of the test matrix\n\n" + table + "\n"
    doc.write_text(text)


if __name__ == "__main__":
    main()
