"""Network mode of ``scripts/bench``: every server talks to Dovecot through a link that adds latency.

A ``LinkProxy`` (``tests/support/servers/linkproxy.py``, in a child process) sits between each MCP server and Dovecot and delays
every chunk by half the round-trip time in each direction, pipelined as a link is (chunks are delivered
at arrival + delay, not one after the other), with Nagle off on its own sockets. At each RTT (0, 20 and
50 ms by default) the bench measures our server's calls and the peers' shared operations through the
same link, and reports per operation the median, the IMAP round trips of our call (counted on the
socket by the server and logged at DEBUG level) and the ratio to ``round trips x RTT``, the floor a
network imposes on a plan with that many round trips.

Scenarios besides the warm calls: the first call after start (TCP, TLS, login, then the call), a call
after the link reset the connection while idle, and "5 minutes idle" scaled down 100x: the link drops
connections idle for 2.7 s (a 4.5-minute NAT timeout), the server keeps its connection alive with NOOP
every 2.4 s (the default 240 s, scaled), and the call comes after 3 s (5 minutes) of quiet.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from imapclient import IMAPClient
from mcp import StdioServerParameters
from tests.support.accounts import account_settings, config_toml
from tests.support.servers.dovecot import Dovecot

from benchmark.common import (
    BENCH_DIR,
    PAGE_LIMIT,
    PASSWORD_ENV,
    PEER_PACKAGE,
    PEER_SUBJECT,
    PEER_VERSION,
    RAW_WINDOW,
    ROOT,
    BenchError,
    Series,
    _round,
    say,
)
from benchmark.report import Target, chart, fmt_ms, fmt_ratio, fmt_series, targets_table
from benchmark.scenarios import PEER_OPS, describe_error
from benchmark.servers import FIRST_VIEW_SERVER, Peer, StdioServer, our_server, peer_server, server_table


class Link:
    """A ``LinkProxy`` in a child process (``python -m tests.support.servers.linkproxy``): its threads must not
    compete with the bench's own for the GIL, or the link would add more than its delay."""

    def __init__(
        self, upstream: tuple[str, int], one_way_s: float, idle_timeout_s: float | None = None
    ) -> None:
        args = [
            sys.executable,
            "-m",
            "tests.support.servers.linkproxy",
            "--upstream",
            f"{upstream[0]}:{upstream[1]}",
        ]
        args += ["--one-way-s", str(one_way_s)]
        if idle_timeout_s is not None:
            args += ["--idle-timeout-s", str(idle_timeout_s)]
        self._process = subprocess.Popen(
            args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.port = int(self._ask(None).split()[1])

    def _ask(self, command: str | None) -> str:
        assert self._process.stdin is not None and self._process.stdout is not None
        if command is not None:
            self._process.stdin.write(command + "\n")
            self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise BenchError(f"the link proxy process ended (exit {self._process.poll()})")
        return line

    def drop_idle(self) -> int:
        return int(self._ask("drop").split()[1])

    @property
    def dropped(self) -> int:
        return int(self._ask("stats").split()[3])

    def __enter__(self) -> Link:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


RTTS_MS = (0, 20, 50)
#: "5 minutes idle" scaled 1:100: keepalive at the default 240 s, a NAT that drops after 270 s.
IDLE_SCALE = 100
KEEPALIVE_S = 240 / IDLE_SCALE
NAT_TIMEOUT_S = 270 / IDLE_SCALE
IDLE_S = 300 / IDLE_SCALE

CF_PACKAGE = "@codefuturist/email-mcp"
CF_VERSION = "0.2.0"
CF_DIR = BENCH_DIR / "email-mcp"
CF_MAIN = CF_DIR / "node_modules" / "@codefuturist" / "email-mcp" / "dist" / "main.js"
CF_NAME = f"{CF_PACKAGE} {CF_VERSION}"
MES_NAME = f"{PEER_PACKAGE} {PEER_VERSION}"

#: Our warm operations: key, label, tool, arguments (message ids filled in per run).
WARM_OPS = (
    "search_page1",
    "search_subject",
    "get_small",
    "raw_window",
    "list_mailboxes",
    "get_thread",
    "search_everywhere",
)
TARGET_OPS = ("search_page1", "search_subject", "get_small", "raw_window", "first_call")
LABELS = {
    "search_page1": "warm newest page (limit 20)",
    "search_subject": "warm filtered page (subject=invoice)",
    "get_small": "warm get_message",
    "raw_window": "warm get_message_raw (16 KB)",
    "list_mailboxes": "warm list_mailboxes",
    "get_thread": "warm imap_get_thread (no target)",
    "search_everywhere": "warm search of every mailbox, subject=invoice (no target)",
    "first_call": "first call after start (newest page)",
    "after_drop": "call after the link reset the idle connection",
    "after_idle": "call after 5 minutes idle (simulated 1:100, keepalive on)",
}


@dataclass
class NetOp:
    key: str
    rtt_ms: int
    ours: Series = field(default_factory=Series)
    #: Call time minus the SDK client's own work (JSON parsing, outputSchema checks; on a first call
    #: that includes compiling the schema, about 0.1-0.4 s): the server's and the network's share.
    ours_no_client: Series = field(default_factory=Series)
    round_trips: list[int] = field(default_factory=list)
    peers: dict[str, Series] = field(default_factory=dict)
    peer_errors: dict[str, str] = field(default_factory=dict)

    @property
    def trips(self) -> int | None:
        return statistics.median_low(self.round_trips) if self.round_trips else None

    @property
    def floor_ms(self) -> float | None:
        return None if self.trips is None else self.trips * self.rtt_ms

    def ratio(self) -> float | None:
        floor = self.floor_ms
        return None if not floor else self.ours.median / floor

    def to_json(self) -> dict[str, Any]:
        return {
            "label": LABELS[self.key],
            "rtt_ms": self.rtt_ms,
            "ours": self.ours.to_json(),
            "ours_without_client_sdk_work": self.ours_no_client.to_json(),
            "round_trips": self.trips,
            "round_trips_seen": sorted(set(self.round_trips)),
            "round_trips_x_rtt_ms": self.floor_ms,
            "ours_over_round_trips_x_rtt": _round(self.ratio(), 3),
            "peers": {name: series.to_json() for name, series in self.peers.items()},
            "peer_errors": self.peer_errors,
        }


@dataclass
class NetworkResult:
    messages: int
    ops: dict[tuple[str, int], NetOp] = field(default_factory=dict)
    peer_notes: dict[str, str] = field(default_factory=dict)
    #: Median NOOP through the link with raw imapclient: the round trip the emulation really gives.
    link_rtt_ms: dict[int, float] = field(default_factory=dict)

    def op(self, key: str, rtt: int) -> NetOp:
        return self.ops.setdefault((key, rtt), NetOp(key, rtt))

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "rtts_ms": sorted({rtt for _, rtt in self.ops}),
            "idle_scale": IDLE_SCALE,
            "operations": [op.to_json() for op in self.ops.values()],
            "peer_notes": self.peer_notes,
            "link_noop_median_ms": self.link_rtt_ms,
        }


def samples(settings: Any, rtt: int, normal: int) -> int:
    if settings.quick:
        return max(2, normal // 4)
    return normal if rtt < 50 else max(3, normal * 2 // 3)


def write_net_config(path: Path, dovecot: Dovecot, user: str, port: int, keepalive_s: float | None) -> Path:
    settings = account_settings(
        dovecot,
        user,
        port=port,
        password_env=PASSWORD_ENV,
        connect_timeout_s=None,
        command_timeout_s=120,
    )
    server: dict[str, Any] = dict(FIRST_VIEW_SERVER)
    if keepalive_s is not None:
        server["keepalive_interval_s"] = keepalive_s
    text = "# Written by scripts/bench (network mode) for one run.\n" + config_toml({"default": settings})
    path.write_text(text + server_table(server))
    return path


@contextlib.asynccontextmanager
async def ours_running(
    settings: Any, dovecot: Dovecot, user: str, link: Link, name: str, keepalive_s: float | None = None
) -> AsyncIterator[StdioServer]:
    """Our server at DEBUG log level (it logs each call's round trips) through ``link``."""
    config = write_net_config(settings.work_dir / f"net-{name}.toml", dovecot, user, link.port, keepalive_s)
    server = our_server(config, settings.work_dir / f"net-{name}.stderr.log", dovecot.password)
    async with server.running() as running:
        yield running


async def timed_call(server: StdioServer, tool: str, arguments: dict[str, Any], op: NetOp) -> dict[str, Any]:
    sample = await server.call(tool, arguments)
    op.ours.samples_ms.append(sample.ms)
    op.ours_no_client.samples_ms.append(sample.ms - sample.client_ms)
    if server.last_round_trips is not None:
        op.round_trips.append(server.last_round_trips)
    return sample.content


async def bench_ours(
    result: NetworkResult,
    rtt: int,
    dovecot: Dovecot,
    user: str,
    calls: dict[str, tuple[str, dict[str, Any]]],
    settings: Any,
) -> None:
    one_way = rtt / 2000
    with Link((dovecot.host, dovecot.tls_port), one_way) as link:
        # First call after start: a fresh process per sample (its startup is not timed).
        for run in range(samples(settings, rtt, 5)):
            async with ours_running(settings, dovecot, user, link, f"first-{rtt}-{run}") as server:
                await timed_call(server, *calls["search_page1"], result.op("first_call", rtt))
        async with ours_running(settings, dovecot, user, link, f"warm-{rtt}") as server:
            n = samples(settings, rtt, 15)
            for key in WARM_OPS:
                if key not in calls:
                    continue
                tool, arguments = calls[key]
                await server.call(tool, arguments)  # warm-up (also leaves INBOX selected)
                for _ in range(n):
                    await timed_call(server, tool, arguments, result.op(key, rtt))
            result.link_rtt_ms[rtt] = measure_link_rtt(dovecot, user, link.port)
            for _ in range(samples(settings, rtt, 5)):
                await server.call(*calls["search_page1"])
                link.drop_idle()
                await anyio.sleep(0.05)  # the RST reaches the client
                await timed_call(server, *calls["search_page1"], result.op("after_drop", rtt))
    with Link((dovecot.host, dovecot.tls_port), one_way, NAT_TIMEOUT_S) as link:
        async with ours_running(
            settings, dovecot, user, link, f"idle-{rtt}", keepalive_s=KEEPALIVE_S
        ) as server:
            await server.call(*calls["search_page1"])
            for _ in range(2 if not settings.quick else 1):
                await anyio.sleep(IDLE_S)
                await timed_call(server, *calls["search_page1"], result.op("after_idle", rtt))
        if link.dropped:
            result.peer_notes[f"after_idle@{rtt}"] = f"the link dropped {link.dropped} idle connection(s)"


def measure_link_rtt(dovecot: Dovecot, user: str, port: int, calls: int = 15) -> float:
    """Median of NOOPs through the link on a raw imapclient connection (Nagle off)."""
    client = IMAPClient(dovecot.host, port=port, ssl=True, ssl_context=dovecot.client_ssl_context())
    try:
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.login(user, dovecot.password)
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            client.noop()
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)
    finally:
        with contextlib.suppress(Exception):
            client.logout()


def prepare_codefuturist() -> str | None:
    """Install the pinned @codefuturist/email-mcp into .bench/email-mcp with npm; None, or why not."""
    stamp = CF_DIR / ".installed"
    wanted = f"{CF_PACKAGE}@{CF_VERSION}"
    if CF_MAIN.exists() and stamp.exists() and stamp.read_text() == wanted:
        return None
    say(f"installing {wanted} into {CF_DIR.relative_to(ROOT)} (npm, project-local)")
    CF_DIR.mkdir(parents=True, exist_ok=True)
    (CF_DIR / "package.json").write_text('{"private": true}\n')
    try:
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--save-exact", wanted],
            cwd=CF_DIR,
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return f"npm install {wanted} failed: {detail.strip()[-300:]}"
    if not CF_MAIN.exists():
        return f"{wanted} has no dist/main.js"
    stamp.write_text(wanted)
    return None


def codefuturist_server(dovecot: Dovecot, user: str, port: int, log_path: Path) -> StdioServer:
    home = BENCH_DIR / "email-mcp-home" / user
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        # Its own HOME and XDG dirs: no config file of the user's is read.
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "MCP_EMAIL_ADDRESS": "bench@example.com",
        "MCP_EMAIL_USERNAME": user,
        "MCP_EMAIL_PASSWORD": dovecot.password,
        "MCP_EMAIL_IMAP_HOST": dovecot.host,
        "MCP_EMAIL_IMAP_PORT": str(port),
        "MCP_EMAIL_IMAP_TLS": "true",
        "MCP_EMAIL_IMAP_VERIFY_SSL": "true",
        # Node trusts the bench CA through NODE_EXTRA_CA_CERTS; the certificate is verified.
        "NODE_EXTRA_CA_CERTS": str(dovecot.ca_file),
        "MCP_EMAIL_SMTP_HOST": "127.0.0.1",
        "MCP_EMAIL_SMTP_PORT": "9",
        "MCP_EMAIL_READ_ONLY": "true",
        "MCP_EMAIL_WATCHER_ENABLED": "false",
    }
    params = StdioServerParameters(command="node", args=[str(CF_MAIN), "stdio"], env=env)
    return StdioServer(CF_NAME, params, log_path, str(CF_MAIN))


def mes_server(peer: Peer, dovecot: Dovecot, user: str, port: int, log_path: Path) -> StdioServer:
    server = peer_server(peer, dovecot, user, log_path)
    assert server.params.env is not None
    server.params.env["MCP_EMAIL_SERVER_IMAP_PORT"] = str(port)
    return server


PeerOps = dict[str, tuple[str, dict[str, Any], Callable[[dict[str, Any]], bool]]]


def _mes_page(content: dict[str, Any]) -> bool:
    return isinstance(content.get("emails"), list) and len(content["emails"]) == PAGE_LIMIT


def _cf_page(content: dict[str, Any]) -> bool:
    return True  # it answers in text; an error is caught by StdioServer.call


MES_OPS: PeerOps = {
    "search_page1": ("list_emails_metadata", dict(PEER_OPS[0][1]), _mes_page),
    "search_subject": ("list_emails_metadata", dict(PEER_OPS[1][1]), _mes_page),
}
CF_OPS: PeerOps = {
    "search_page1": ("list_emails", {"account": "default", "pageSize": PAGE_LIMIT}, _cf_page),
    "search_subject": (
        "list_emails",
        {"account": "default", "pageSize": PAGE_LIMIT, "subject": PEER_SUBJECT},
        _cf_page,
    ),
}


def _logged(make: Callable[[int, Path], StdioServer], log_path: Path) -> Callable[[int], StdioServer]:
    """``make`` for a port, with its log in ``log_path``."""
    return lambda port: make(port, log_path)


async def run_peer(
    result: NetworkResult,
    rtt: int,
    name: str,
    dovecot: Dovecot,
    make: Callable[[int], StdioServer],
    ops: PeerOps,
    settings: Any,
) -> None:
    """The peer's shared operations through a link of ``rtt``: one warm-up, then timed calls."""
    with Link((dovecot.host, dovecot.tls_port), rtt / 2000) as link:
        server = make(link.port)
        try:
            async with server.running():
                for key, (tool, arguments, valid) in ops.items():
                    op = result.op(key, rtt)
                    try:
                        warm = await server.call(tool, arguments)
                        if not valid(warm.content):
                            raise BenchError(
                                f"{name} {tool} returned an unexpected answer: {str(warm.content)[:200]}"
                            )
                        series = op.peers.setdefault(name, Series())
                        deadline = time.perf_counter() + (10 if settings.quick else 25)
                        n = samples(settings, rtt, 8)
                        while len(series.samples_ms) < n and (
                            len(series.samples_ms) < 3 or time.perf_counter() < deadline
                        ):
                            series.samples_ms.append((await server.call(tool, arguments)).ms)
                    except BenchError as exc:
                        op.peer_errors[name] = str(exc)[:300]
                        say(f"{name} at {rtt} ms: {exc}")
        except Exception as exc:
            note_peer_failure(result.peer_notes, f"{name}@{rtt}", server, exc)


def note_peer_failure(notes: dict[str, str], where: str, server: StdioServer, exc: BaseException) -> None:
    """A peer server that failed: why, in ``notes`` under ``where``, and the tail of its log on stderr."""
    notes[where] = describe_error(exc)
    say(f"{server.name} failed ({where}): {describe_error(exc)}\n{server.log_tail()}")


async def run_network(
    dovecot: Dovecot,
    user: str,
    messages: int,
    specials: Any,
    uidvalidity: int,
    peer: Peer,
    settings: Any,
) -> NetworkResult:
    result = NetworkResult(messages)

    def message_id(uid: int) -> str:
        return f"imap:default:INBOX:{uidvalidity}:{uid}"

    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "search_page1": ("imap_search_messages", {"limit": PAGE_LIMIT}),
        "search_subject": (
            "imap_search_messages",
            {"limit": PAGE_LIMIT, "subject": PEER_SUBJECT},
        ),
        "get_small": ("imap_get_message", {"message_id": message_id(specials.small)}),
        "raw_window": (
            "imap_get_message_raw",
            {"message_id": message_id(specials.large), "max_bytes": RAW_WINDOW},
        ),
        "list_mailboxes": ("imap_list_mailboxes", {}),
        "get_thread": ("imap_get_thread", {"message_id": message_id(specials.small)}),
        "search_everywhere": (
            "imap_search_messages",
            {"limit": PAGE_LIMIT, "mailboxes": ["*"], "subject": PEER_SUBJECT},
        ),
    }
    cf_error = None if settings.peer_budget_s <= 0 else prepare_codefuturist()
    if cf_error:
        result.peer_notes[CF_NAME] = cf_error
        say(cf_error)
    for rtt in settings.network_rtts:
        say(f"network: {rtt} ms RTT, ours")
        await bench_ours(result, rtt, dovecot, user, calls, settings)
        if peer.binary is not None:
            say(f"network: {rtt} ms RTT, {MES_NAME}")
            await run_peer(
                result,
                rtt,
                MES_NAME,
                dovecot,
                _logged(
                    functools.partial(mes_server, peer, dovecot, user),
                    settings.work_dir / f"net-mes-{rtt}.log",
                ),
                MES_OPS,
                settings,
            )
        if settings.peer_budget_s > 0 and cf_error is None:
            say(f"network: {rtt} ms RTT, {CF_NAME}")
            await run_peer(
                result,
                rtt,
                CF_NAME,
                dovecot,
                _logged(
                    functools.partial(codefuturist_server, dovecot, user),
                    settings.work_dir / f"net-cf-{rtt}.log",
                ),
                CF_OPS,
                settings,
            )
    return result


def _budget_ms(op: NetOp) -> float | None:
    return None if op.floor_ms is None else 1.3 * op.floor_ms + 10


def network_table(result: NetworkResult) -> str:
    lines = [
        "| operation | RTT | ours median (p95) | ours without SDK client work | IMAP round trips "
        "| round trips x RTT | ours / (round trips x RTT) "
        f"| {MES_NAME} median | {CF_NAME} median | {MES_NAME} / ours | {CF_NAME} / ours |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = list(dict.fromkeys(key for key, _ in result.ops))
    for key in keys:
        for rtt in sorted({r for k, r in result.ops if k == key}):
            op = result.ops[(key, rtt)]
            cells = []
            for name in (MES_NAME, CF_NAME):
                series = op.peers.get(name)
                cells.append("refused" if name in op.peer_errors else fmt_series(series))
            ratios = []
            for name in (MES_NAME, CF_NAME):
                series = op.peers.get(name)
                ok = series is not None and series.samples_ms and op.ours.samples_ms
                ratios.append(f"{series.median / op.ours.median:.1f}x" if ok and series else "-")
            lines.append(
                f"| {LABELS[key]} | {rtt} ms | {fmt_series(op.ours)} | {fmt_ms(op.ours_no_client.median)} "
                f"| {op.trips if op.trips is not None else '-'} "
                f"| {fmt_ms(op.floor_ms)} | {fmt_ratio(op.ratio())} | {cells[0]} | {cells[1]} | {ratios[0]} | {ratios[1]} |"
            )
    notes = [f"- {where}: {note}" for where, note in result.peer_notes.items()]
    errors = [
        f"- {name}, {LABELS[op.key]}, {op.rtt_ms} ms: `{error}`"
        for op in result.ops.values()
        for name, error in op.peer_errors.items()
    ]
    return "\n".join(lines + (["", *notes, *errors] if notes or errors else []))


def network_targets(result: NetworkResult, rtt: int = 20) -> list[Target]:
    targets: list[Target] = []
    for key in TARGET_OPS:
        op = result.ops.get((key, rtt))
        if op is None or not op.ours.samples_ms or op.floor_ms is None:
            continue
        budget = _budget_ms(op)
        assert budget is not None
        figure = f"{fmt_ms(op.ours.median)} ({fmt_ratio(op.ratio())} of {fmt_ms(op.floor_ms)})"
        measured = op.ours.median
        if key == "first_call":
            # The SDK client compiles the tool's outputSchema on its first call: client work, not ours.
            measured = op.ours_no_client.median
            figure = (
                f"{fmt_ms(measured)} without the SDK client's first-call schema compilation "
                f"({fmt_ms(op.ours.median)} end to end)"
            )
        targets.append(
            Target(
                f"{LABELS[key]} at {rtt} ms RTT",
                f"<= 1.3 x {op.trips} round trips x {rtt} ms + 10 ms = {fmt_ms(budget)}",
                figure,
                measured <= budget,
            )
        )
    page = result.ops.get(("search_page1", rtt))
    if page is not None:
        goals: tuple[tuple[str, str, Callable[[float], bool]], ...] = (
            (MES_NAME, ">= 10x faster", lambda r: r >= 10),
            (CF_NAME, "faster", lambda r: r > 1),
        )
        for name, goal, check in goals:
            series = page.peers.get(name)
            ratio = None if series is None or not series.samples_ms else series.median / page.ours.median
            targets.append(
                Target(
                    f"newest page vs {name} at {rtt} ms RTT",
                    goal,
                    "not measured"
                    if ratio is None
                    else f"{ratio:.1f}x ({fmt_ms(series.median if series else None)} vs {fmt_ms(page.ours.median)})",
                    None if ratio is None else check(ratio),
                )
            )
    subject = result.ops.get(("search_subject", rtt))
    if subject is not None:
        series = subject.peers.get(CF_NAME)
        ratio = None if series is None or not series.samples_ms else series.median / subject.ours.median
        targets.append(
            Target(
                f"subject search vs {CF_NAME} at {rtt} ms RTT",
                "faster",
                "not measured"
                if ratio is None
                else f"{ratio:.1f}x ({fmt_ms(series.median if series else None)} vs {fmt_ms(subject.ours.median)})",
                None if ratio is None else ratio > 1,
            )
        )
    return targets


def draw_network_chart(result: NetworkResult, path: Path, machine: dict[str, Any]) -> None:
    rtts = sorted({rtt for _, rtt in result.ops})
    keys = list(dict.fromkeys(key for key, _ in result.ops))
    title = f"mail-imap-mcp through a delaying link, {result.messages:,} messages"
    with chart(path, title, machine, len(rtts), (6 * len(rtts), 0.6 * len(keys) + 2), True) as axes:
        _draw_rtts(result, axes, rtts, keys)


def _draw_rtts(result: NetworkResult, axes: Any, rtts: list[int], keys: list[str]) -> None:
    colors = {"ours": "#1f77b4", MES_NAME: "#d62728", CF_NAME: "#ff7f0e"}
    for ax, rtt in zip(axes, rtts, strict=True):
        for row, key in enumerate(keys):
            op = result.ops.get((key, rtt))
            if op is None:
                continue
            bars = [("ours", op.ours), *((n, s) for n, s in op.peers.items())]
            for offset, (name, series) in zip((-0.27, 0.0, 0.27), bars, strict=False):
                if series.samples_ms:
                    ax.barh(row + offset, series.median, height=0.25, color=colors[name], label=name)
            if op.floor_ms:
                ax.plot(
                    [op.floor_ms, op.floor_ms],
                    [row - 0.4, row + 0.4],
                    color="black",
                    lw=1,
                    label="round trips x RTT",
                )
        ax.set_xscale("log")
        ax.set_title(f"{rtt} ms RTT")
        ax.set_xlabel("median ms per call (log scale)")
        ax.grid(axis="x", which="both", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        ax.legend(unique.values(), unique.keys(), fontsize=7, loc="lower right")
    first = axes[0]
    first.set_yticks(range(len(keys)))
    first.set_yticklabels([LABELS[k] for k in keys], fontsize=8)
    first.invert_yaxis()


def network_section(result: NetworkResult, targets: list[Target]) -> str:
    rtts = ", ".join(f"{rtt}" for rtt in sorted({rtt for _, rtt in result.ops}))
    return "\n".join(
        [
            "### Over a network (link emulation)",
            "",
            f"Every server reaches Dovecot through a `LinkProxy` adding {rtts} ms of round trip (half each way, "
            f"pipelined, Nagle off), INBOX of {result.messages:,} messages, implicit TLS with the certificate "
            "verified. Our server runs at DEBUG log level here (it logs each call's round trips, counted on the "
            f'socket). "5 minutes idle" is scaled 1:{IDLE_SCALE}: the link drops connections idle for '
            f"{NAT_TIMEOUT_S:g} s, our keepalive sends NOOP after {KEEPALIVE_S:g} s, the call comes after "
            f"{IDLE_S:g} s.",
            "",
            "A round trip through the link, measured as the median NOOP of a raw imapclient connection: "
            + ", ".join(f"{fmt_ms(ms)} at {rtt} ms" for rtt, ms in sorted(result.link_rtt_ms.items()))
            + " (what the emulation and the machine's load add on top of the nominal RTT).",
            "",
            "![network chart](benchmarks-network.png)",
            "",
            network_table(result),
            "",
            "#### Targets at 20 ms RTT",
            "",
            targets_table(targets),
        ]
    )
