"""``scripts/bench --team-only``: what a team's deployment costs (issue 39).

1. The latency the shared state adds: the same calls against one server process whose state is in
   its memory and one whose state is in Redis ([state] redis_url), both with [http.auth] and the
   loopback identity provider; per call kind, the median wall time over the iterations and the CPU
   the server (and Redis) spent per call, read from /proc. The kinds: a one-mailbox search page
   (touches no shared state: the control), an operation's status (one Redis read), and a page of
   every mailbox with its next page (the cursor's mailbox list written and read).
2. Search pages per second through HAProxy (round robin) with 1, 2 and 3 instances sharing Redis,
   ``clients`` concurrent clients each asking for one page after the other for ``seconds``.

All parts are real processes on loopback: Dovecot, Redis, HAProxy, the servers. A 2-core machine
cannot show instances scaling (the instances, Dovecot, HAProxy, Redis and the clients share two
cores); the figures say what the extra hops cost, not what more machines would give.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail import mailgen
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.haproxy import HAProxy
from tests.support.servers.http_server import HttpServer, http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.imapserver import free_ports
from tests.support.servers.redis_server import RedisServer
from tests.support.servers.team import Team, start_instances, team_config

from benchmark.common import say

MARKER_BEGIN = "<!-- team-bench:begin -->"
MARKER_END = "<!-- team-bench:end -->"
FOLDERS = 5
MESSAGES = 200
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class CallCost:
    kind: str
    store: str
    median_ms: float
    p90_ms: float
    server_cpu_ms: float
    redis_cpu_ms: float


@dataclass
class TeamResult:
    calls: list[CallCost] = field(default_factory=list)
    #: instances -> search pages per second through HAProxy
    pages_per_s: dict[int, float] = field(default_factory=dict)
    clients: int = 0
    seconds: float = 0.0


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _redis_pid(redis: RedisServer) -> int:
    process = redis._proc
    assert process is not None
    return process.pid


def _seed(dovecot: Dovecot) -> Team:
    team = Team(
        *(dovecot.new_user(prefix) for prefix in ("bench-alice", "bench-bob", "bench-eve", "bench-support"))
    )
    for folder in range(FOLDERS):
        name = "INBOX" if folder == 0 else f"Folder{folder}"
        dovecot.seed(
            team.shared_user,
            name,
            [mailgen.plain_message(f"{name} {n}", "body") for n in range(MESSAGES // FOLDERS)],
        )
    return team


async def _time_calls(
    servers: dict[str, tuple[HttpServer, str]], redis: RedisServer, iterations: int, warmup: int
) -> list[CallCost]:
    """Each call kind against every server (state in memory, state in Redis), alternating call by call
    so that the load of the machine weighs on both alike; the wall times and the CPU per call."""
    costs: list[CallCost] = []
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            store: await stack.enter_async_context(http_client(server.url, token))
            for store, (server, token) in servers.items()
        }

        def kinds(mcp: EnvelopeClient) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
            async def page() -> None:
                await mcp.ok("imap_search_messages", {"account_id": "support", "limit": 20})

            async def status() -> None:
                await mcp.fail("imap_get_operation", {"operation_id": "op_1_abcdef"}, "not_found")

            async def every_folder() -> None:
                arguments = {"account_id": "support", "mailbox": "*", "limit": 10}
                first = await mcp.ok("imap_search_messages", arguments)
                await mcp.ok("imap_search_messages", {**arguments, "cursor": first["next_cursor"]})

            return [
                ("search page, one mailbox", page),
                ("operation status", status),
                ("every-folder page + next", every_folder),
            ]

        calls = {store: kinds(mcp) for store, mcp in clients.items()}
        for index, name in enumerate(kind for kind, _ in calls["memory"]):
            times: dict[str, list[float]] = {store: [] for store in servers}
            cpu: dict[str, float] = dict.fromkeys(servers, 0.0)
            redis_cpu: dict[str, float] = dict.fromkeys(servers, 0.0)
            for round_number in range(warmup + iterations):
                for store, (server, _) in servers.items():
                    call = calls[store][index][1]
                    cpu_before, redis_before = _cpu_s(server.proc.pid), _cpu_s(_redis_pid(redis))
                    started = time.perf_counter()
                    await call()
                    elapsed = time.perf_counter() - started
                    if round_number >= warmup:
                        times[store].append(elapsed)
                        cpu[store] += _cpu_s(server.proc.pid) - cpu_before
                        redis_cpu[store] += _cpu_s(_redis_pid(redis)) - redis_before
            for store in servers:
                ordered = sorted(times[store])
                costs.append(
                    CallCost(
                        name,
                        store,
                        statistics.median(ordered) * 1000,
                        ordered[int(len(ordered) * 0.9) - 1] * 1000,
                        cpu[store] / iterations * 1000,
                        redis_cpu[store] / iterations * 1000,
                    )
                )
    return costs


async def _pages_per_second(url: str, token: str, clients: int, seconds: float) -> float:
    done = 0

    async def client() -> None:
        nonlocal done
        async with http_client(url, token) as mcp:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                await mcp.ok("imap_search_messages", {"account_id": "support", "limit": 20})
                done += 1

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(client)
    return done / (time.monotonic() - started)


async def run_team(
    work_dir: Path, *, iterations: int, warmup: int, clients: int, seconds: float
) -> TeamResult:
    result = TeamResult(clients=clients, seconds=seconds)
    with (
        Dovecot(user_patterns=("bench*",), default_user="bench", max_userip_connections=200) as dovecot,
        IdentityProvider() as idp,
        RedisServer(work_dir / "redis") as redis,
    ):
        os.environ.setdefault("MIM_TEST_IMAP_PASSWORD", dovecot.password)
        team = _seed(dovecot)
        servers: dict[str, tuple[HttpServer, str]] = {}
        try:
            for store in ("memory", "redis"):
                (port,) = free_ports("127.0.0.1")
                audience = f"http://127.0.0.1:{port}/mcp"
                config = team_config(
                    work_dir / f"config-{store}.toml",
                    dovecot,
                    team,
                    idp,
                    audience=audience,
                    redis_url=redis.url if store == "redis" else None,
                )
                (server,) = start_instances(config, [port])
                servers[store] = (server, idp.jwt(team.alice, audience=audience, lifetime_s=3600))
            say("team: the same calls with the state in memory and in Redis, alternating")
            result.calls = await _time_calls(servers, redis, iterations, warmup)
        finally:
            for server, _ in servers.values():
                server.stop()
        for count in (1, 2, 3):
            ports = free_ports(*["127.0.0.1"] * (count + 1))
            audience = f"http://127.0.0.1:{ports[0]}/mcp"
            config = team_config(
                work_dir / f"config-{count}.toml", dovecot, team, idp, audience=audience, redis_url=redis.url
            )
            instances = start_instances(config, ports[1:])
            try:
                with HAProxy(work_dir / f"haproxy-{count}", ports[1:], port=ports[0]) as balancer:
                    token = idp.jwt(team.alice, audience=audience, lifetime_s=3600)
                    await _pages_per_second(balancer.url, token, 1, 1.0)  # warm every instance
                    say(f"team: pages per second through HAProxy, {count} instance(s)")
                    result.pages_per_s[count] = await _pages_per_second(balancer.url, token, clients, seconds)
            finally:
                for instance in instances:
                    instance.stop()
    return result


def team_section(result: TeamResult, machine: dict[str, Any]) -> str:
    lines = [
        MARKER_BEGIN,
        "## Team mode",
        "",
        f"`scripts/bench --team-only` on {machine['nproc']} CPU ({machine['cpu_model']}), "
        f"{machine['date_utc']}: one server process with [http.auth] (the loopback identity provider, JWKS) "
        "and its state in memory, then in Redis (Debian's redis-server on loopback); then 1, 2 and 3 "
        "instances behind HAProxy (round robin) sharing Redis.",
        "",
        "| call | state in | median ms | p90 ms | server CPU ms/call | Redis CPU ms/call |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines[3] += (
        f" The two servers are asked the same calls in turn ({machine['load_average_at_start'][0]} load "
        "average at the start: other work on the machine weighs on both alike)."
    )
    for cost in result.calls:
        lines.append(
            f"| {cost.kind} | {cost.store} | {cost.median_ms:.1f} | {cost.p90_ms:.1f} | "
            f"{cost.server_cpu_ms:.1f} | {cost.redis_cpu_ms:.2f} |"
        )
    lines += ["", "What Redis adds at the median (redis minus memory):", ""]
    by = {(c.kind, c.store): c for c in result.calls}
    for kind in dict.fromkeys(c.kind for c in result.calls):
        memory, redis = by.get((kind, "memory")), by.get((kind, "redis"))
        if memory and redis:
            verdict = "within" if redis.median_ms - memory.median_ms <= 2.0 else "over"
            lines.append(
                f"- {kind}: {redis.median_ms - memory.median_ms:+.1f} ms ({verdict} the 2 ms target), "
                f"server CPU {redis.server_cpu_ms - memory.server_cpu_ms:+.1f} ms per call"
            )
    lines += [
        "",
        f"Search pages (one mailbox, 20 messages) per second through HAProxy, {result.clients} concurrent "
        f"clients for {result.seconds:.0f} s:",
        "",
        "| instances | pages/s |",
        "|---:|---:|",
        *(f"| {count} | {rate:.1f} |" for count, rate in sorted(result.pages_per_s.items())),
        "",
        f"This machine has {machine['nproc']} cores shared by every instance, Dovecot, HAProxy, Redis and "
        "the clients: more instances cannot show scaling here, only what the extra hop and processes "
        "cost. Instances on machines of their own are what adds throughput.",
        MARKER_END,
    ]
    return "\n".join(lines)


def update_team_markdown(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else ""
    if MARKER_BEGIN in text and MARKER_END in text:
        before, rest = text.split(MARKER_BEGIN, 1)
        after = rest.split(MARKER_END, 1)[1]
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
