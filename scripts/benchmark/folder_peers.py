"""The peers on the folders axis: what an agent has to do with them to search every folder.

Neither peer searches more than one folder per call: ``mcp-email-server``'s ``list_emails_metadata`` and
``@codefuturist/email-mcp``'s ``list_emails`` take one ``mailbox`` string (default INBOX), no pattern, no
list (their ``tools/list`` schemas, quoted in the doc from the run). So the bench measures the agent's
way: one call of the peer's list of folders, then one search call per folder, one after the other
(an agent merges the answers itself: not timed). Each call has the peer budget; a call that takes longer
ends that loop as "gave no answer within N s".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from tests.support.servers.dovecot import Dovecot

from benchmark.common import PAGE_LIMIT, BenchError, say
from benchmark.network import (
    CF_NAME,
    MES_NAME,
    Link,
    codefuturist_server,
    mes_server,
    note_peer_failure,
    prepare_codefuturist,
)
from benchmark.servers import Peer, StdioServer


@dataclass(frozen=True)
class PeerTools:
    """A peer's tools for the agent's loop: its list of folders, and its one-folder search."""

    name: str
    list_tool: str
    list_arguments: dict[str, Any]
    search_tool: str
    #: Arguments of the search of one folder for ``filtered`` (the needle sender) or not (newest page).
    search_arguments: Callable[[str, str | None], dict[str, Any]]
    #: The peer's server for (the link's port, the user).
    start: Callable[[int, str], StdioServer]

    def mailbox_schema(self, server: StdioServer) -> str:
        """The ``mailbox`` argument of the search tool as ``tools/list`` gave it (the evidence)."""
        schema = server.input_schemas.get(self.search_tool, {})
        return json.dumps(schema.get("properties", {}).get("mailbox"), sort_keys=True)


@dataclass
class AgentLoop:
    """One loop over every folder: its total, and the calls it made."""

    total_ms: float | None = None
    calls: int = 0
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"total_ms": self.total_ms, "calls": self.calls, "error": self.error}


@dataclass
class PeerFolders:
    #: (peer, op key, folders, rtt) -> the loop.
    loops: dict[tuple[str, str, int, int], AgentLoop] = field(default_factory=dict)
    #: peer -> its search tool and that tool's ``mailbox`` schema.
    schemas: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    #: Seconds each call may take.
    budget_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "loops": [
                {"peer": peer, "op": key, "folders": folders, "rtt_ms": rtt, **loop.to_json()}
                for (peer, key, folders, rtt), loop in self.loops.items()
            ],
            "mailbox_argument_schemas": self.schemas,
            "notes": self.notes,
            "call_budget_s": self.budget_s,
        }


def peer_tools(peer: Peer, dovecot: Dovecot, settings: Any) -> list[PeerTools]:
    """The peers that are installed (installing @codefuturist/email-mcp when needed)."""
    tools: list[PeerTools] = []
    if peer.binary is not None:

        def mes_search(mailbox: str, sender: str | None) -> dict[str, Any]:
            found = {"from_address": sender} if sender else {}
            return {"account_name": "bench", "page": 1, "page_size": PAGE_LIMIT, "mailbox": mailbox, **found}

        tools.append(
            PeerTools(
                MES_NAME,
                "list_mailboxes",
                {"account_name": "bench"},
                "list_emails_metadata",
                mes_search,
                lambda port, user: mes_server(
                    peer, dovecot, user, port, settings.work_dir / "folders-mes.log"
                ),
            )
        )
    cf_error = prepare_codefuturist()
    if cf_error is None:

        def cf_search(mailbox: str, sender: str | None) -> dict[str, Any]:
            found = {"from": sender} if sender else {}
            return {"account": "default", "pageSize": PAGE_LIMIT, "mailbox": mailbox, **found}

        tools.append(
            PeerTools(
                CF_NAME,
                "list_mailboxes",
                {"account": "default"},
                "list_emails",
                cf_search,
                lambda port, user: codefuturist_server(
                    dovecot, user, port, settings.work_dir / "folders-cf.log"
                ),
            )
        )
    else:
        say(cf_error)
    return tools


async def run_peer_loops(
    result: PeerFolders,
    tools: PeerTools,
    dovecot: Dovecot,
    user: str,
    folders: Sequence[str],
    rtt: int,
    ops: dict[str, str | None],
    budget_s: float,
) -> None:
    """For each of ``ops`` (op key -> sender searched for, or None for the newest page), one loop over
    ``folders`` through a link of ``rtt``, after a warm-up search of INBOX."""
    with Link((dovecot.host, dovecot.tls_port), rtt / 2000) as link:
        server = tools.start(link.port, user)
        try:
            async with server.running():
                result.schemas[tools.name] = f"{tools.search_tool}: mailbox = {tools.mailbox_schema(server)}"
                await server.call(tools.search_tool, tools.search_arguments("INBOX", None))  # warm-up
                for key, sender in ops.items():
                    loop = result.loops.setdefault((tools.name, key, len(folders), rtt), AgentLoop())
                    await _loop(loop, server, tools, folders, sender, budget_s)
        except Exception as exc:
            note_peer_failure(result.notes, f"{len(folders)} folders at {rtt} ms", server, exc)


async def _loop(
    loop: AgentLoop,
    server: StdioServer,
    tools: PeerTools,
    folders: Sequence[str],
    sender: str | None,
    budget_s: float,
) -> None:
    started = time.perf_counter()
    calls = [(tools.list_tool, tools.list_arguments)]
    calls += [(tools.search_tool, tools.search_arguments(folder, sender)) for folder in folders]
    try:
        for tool, arguments in calls:
            with anyio.fail_after(budget_s):
                await server.call(tool, arguments)
            loop.calls += 1
    except TimeoutError:
        loop.error = f"gave no answer within {budget_s:g} s (call {loop.calls + 1} of {len(calls)})"
        raise BenchError(loop.error) from None
    except BenchError as exc:
        loop.error = str(exc)[:300]
        raise
    loop.total_ms = (time.perf_counter() - started) * 1000
