"""Soak test: N concurrent MCP clients hammer the server with mixed tool calls for a while.

Run it through ``scripts/soak`` (which installs Dovecot and the virtualenv first); the latest
10-minute figures are in ``docs/reliability.md`` ("Load (soak)"). ``tests/integration/harness/test_soak.py`` runs a
short version of it in the test suite.

What one run does:

1. Starts a throwaway Dovecot (``tests/support/servers/dovecot.py``) and seeds a fresh user's INBOX with
   ``--messages`` realistic messages from ``tests/support/mail/mailgen.py`` (every third one unread) and a
   non-ASCII folder ``Entwürfe`` with a tenth as many; writes a config for that account.
2. Runs each mode for ``--duration`` seconds (modes run one after the other):

   * ``stdio``: one ``mail-imap-mcp serve`` process per client, spoken to over stdio by the MCP
     SDK's ``Client`` (what Claude Desktop and friends do). Each process has its own connection.
   * ``inprocess``: N ``mcp.Client(build_server(config, app))`` sessions in this process sharing one
     ``AppContext``, so all calls contend for the account's single IMAP connection.
   * ``http``: one ``mail-imap-mcp serve --transport http`` process on 127.0.0.1 (bearer token) and
     N SDK clients over streamable HTTP, each its own MCP session, sharing the account's connection.

3. Each client loops over a random mix of calls: ``imap_list_accounts``, ``imap_list_mailboxes``
   (sometimes with counts), ``imap_search_messages`` (no filter, from, subject, unread_only or since,
   limit 1..50, sometimes following ``next_cursor`` for a few pages, INBOX or ``Entwürfe``),
   ``imap_get_message`` (text, markdown or html) and ``imap_get_message_raw`` (a window, sometimes the
   next one). Every result is checked with ``tests.support.clients.envelope_client.check_envelope`` against
   the tool's ``outputSchema``; a call is an error when that check fails, when ``success`` is false,
   or when the call raises.
4. Every ``--sample-interval`` seconds it samples resident memory (``VmRSS`` in ``/proc/<pid>/status``)
   and open file descriptors (``/proc/<pid>/fd``) of the server processes (stdio) or of this process
   (inprocess). The warm-up lasts ``--warmup`` of the duration (20 % by default) and until every client
   made ten calls, however long that takes on a loaded machine; the rest of the duration runs after it.
   After the workers stop, one more "settled" sample is taken with the sessions still open; memory and
   descriptor growth compare the first sample after the warm-up with that final one.

It prints a summary table (calls, errors by code, p50/p95 latency per tool, RSS and fds), writes
everything including the samples to ``--json`` when given, and exits 1 when any call failed or any
process ended with more open file descriptors than it had after the warm-up.

Latencies are measured by the client (round trip through MCP) and kept in log-spaced buckets 1 %
wide, so memory stays constant however long the run (the in-process RSS includes this process) and
p50/p95 are exact to within 1 %. ``--tracemalloc`` (in-process mode) adds the top allocation growth
between the warm-up and the end, to find the cause of any memory growth.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import random
import sys
import tempfile
import time
import tracemalloc
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import jsonschema
from jsonschema.protocols import Validator
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, Tool

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.accounts import account_settings, config_toml  # noqa: E402
from tests.support.clients.envelope_client import SEEN, check_envelope  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402
from tests.support.run.machine import machine_info  # noqa: E402
from tests.support.servers.dovecot import Dovecot  # noqa: E402
from tests.support.servers.http_server import TOKEN_ENV, auth_headers, new_token, start_http_server  # noqa: E402

from mail_imap_mcp.app import AppContext  # noqa: E402
from mail_imap_mcp.config import load_config  # noqa: E402
from mail_imap_mcp.server import build_server  # noqa: E402

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")
PASSWORD_ENV = "MIM_SOAK_IMAP_PASSWORD"
MODES = ("stdio", "inprocess", "http")
SECOND_MAILBOX = "Entwürfe"
#: A call slower than this is an error (``exception:TimeoutError``), never a hang.
CALL_TIMEOUT_S = 60.0

TOOLS = (
    "imap_list_accounts",
    "imap_list_mailboxes",
    "imap_search_messages",
    "imap_get_message",
    "imap_get_message_raw",
)
#: How often each kind of step is chosen (a search step may call the tool several times).
STEP_WEIGHTS = {
    "imap_list_accounts": 1,
    "imap_list_mailboxes": 1,
    "imap_search_messages": 4,
    "imap_get_message": 3,
    "imap_get_message_raw": 2,
}
#: Subject words present in the generated corpus (ASCII and not).
SUBJECT_TERMS = ("Invoice", "Meeting notes", "report", "Rechnung", "Grüße", "季度报告", "Отчёт", "Café")


# ---------------------------------------------------------------------- statistics


class LatencyHistogram:
    """Latencies in log-spaced buckets 1 % wide: constant memory, quantiles exact to within 1 %."""

    BASE_MS = 0.01
    GROWTH = 1.01

    def __init__(self) -> None:
        self.buckets: Counter[int] = Counter()
        self.count = 0
        self.max_ms = 0.0
        self.min_ms = math.inf

    def add(self, ms: float) -> None:
        index = max(0, int(math.log(max(ms, self.BASE_MS) / self.BASE_MS, self.GROWTH)))
        self.buckets[index] += 1
        self.count += 1
        self.max_ms = max(self.max_ms, ms)
        self.min_ms = min(self.min_ms, ms)

    def merge(self, other: LatencyHistogram) -> None:
        self.buckets.update(other.buckets)
        self.count += other.count
        self.max_ms = max(self.max_ms, other.max_ms)
        self.min_ms = min(self.min_ms, other.min_ms)

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile in ms (geometric middle of its bucket), or None without data."""
        if not self.count:
            return None
        target = q * self.count
        seen = 0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= target:
                middle = float(self.BASE_MS * self.GROWTH ** (index + 0.5))
                return min(max(middle, self.min_ms), self.max_ms)
        return self.max_ms

    def summary(self) -> dict[str, float | None]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 2)

        return {
            "p50_ms": rounded(self.quantile(0.50)),
            "p95_ms": rounded(self.quantile(0.95)),
            "max_ms": rounded(self.max_ms if self.count else None),
        }


@dataclass
class CallStats:
    """Counts, errors and latencies of one mode, per tool."""

    latency: dict[str, LatencyHistogram] = field(
        default_factory=lambda: {tool: LatencyHistogram() for tool in TOOLS}
    )
    calls: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    errors_by_code: Counter[str] = field(default_factory=Counter)
    partial: int = 0
    error_examples: list[dict[str, Any]] = field(default_factory=list)

    MAX_EXAMPLES = 10

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def total_errors(self) -> int:
        return sum(self.errors.values())

    def record(
        self,
        tool: str,
        ms: float,
        *,
        code: str | None = None,
        detail: str = "",
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.calls[tool] += 1
        self.latency[tool].add(ms)
        if code is None:
            return
        self.errors[tool] += 1
        self.errors_by_code[code] += 1
        if len(self.error_examples) < self.MAX_EXAMPLES:
            self.error_examples.append(
                {"tool": tool, "code": code, "detail": detail[:500], "arguments": arguments or {}}
            )


# ---------------------------------------------------------------------- process sampling


def read_rss_kb(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (``VmRSS``), 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def count_fds(pid: int) -> int:
    """Open file descriptors of ``pid`` (-1 when the process is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return -1


def child_pid_with_arg(argument: str) -> int:
    """The pid of this process's child whose command line contains ``argument``."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and argument.encode() in cmdline:
            return int(entry)
    raise RuntimeError(f"no child process with argument {argument!r}")


@dataclass
class Sample:
    """One measurement of every watched process."""

    t_s: float
    calls: int
    errors: int
    rss_kb: dict[int, int]
    fds: dict[int, int]
    settled: bool = False
    #: The calls of the client that had made the fewest.
    fewest_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "t_s": round(self.t_s, 1),
            "calls": self.calls,
            "errors": self.errors,
            "rss_kb_total": sum(self.rss_kb.values()),
            "fds_total": sum(self.fds.values()),
            "rss_kb": {str(pid): kb for pid, kb in self.rss_kb.items()},
            "fds": {str(pid): n for pid, n in self.fds.items()},
            "settled": self.settled,
            "fewest_calls": self.fewest_calls,
        }


def take_sample(
    pids: list[int], started: float, stats: CallStats, *, fewest_calls: int = 0, settled: bool = False
) -> Sample:
    return Sample(
        t_s=time.monotonic() - started,
        calls=stats.total_calls,
        errors=stats.total_errors,
        rss_kb={pid: read_rss_kb(pid) for pid in pids},
        fds={pid: count_fds(pid) for pid in pids},
        settled=settled,
        fewest_calls=fewest_calls,
    )


# ---------------------------------------------------------------------- the clients


def compile_output_schemas(tools: list[Tool]) -> dict[str, Validator]:
    """A checked, compiled validator for each tool's ``outputSchema`` (every tool must have one)."""
    validators: dict[str, Validator] = {}
    for tool in tools:
        if not tool.output_schema:
            raise RuntimeError(f"tool {tool.name} publishes no outputSchema")
        cls = jsonschema.validators.validator_for(tool.output_schema)
        cls.check_schema(tool.output_schema)
        validators[tool.name] = cls(tool.output_schema)
    return validators


class SoakClient:
    """One MCP session calling a random mix of tools until ``stop`` is set."""

    def __init__(
        self,
        client: Client,
        validators: dict[str, Validator],
        stats: CallStats,
        rng: random.Random,
        stop: anyio.Event,
    ) -> None:
        self.client = client
        self.validators = validators
        self.stats = stats
        self.rng = rng
        self.stop = stop
        self.message_ids: deque[str] = deque(maxlen=200)
        #: Calls made, whatever their outcome.
        self.calls = 0
        self.steps: dict[str, Callable[[], Awaitable[None]]] = {
            "imap_list_accounts": self.list_accounts,
            "imap_list_mailboxes": self.list_mailboxes,
            "imap_search_messages": self.search,
            "imap_get_message": self.get_message,
            "imap_get_message_raw": self.get_message_raw,
        }

    async def run(self) -> None:
        names = list(STEP_WEIGHTS)
        weights = list(STEP_WEIGHTS.values())
        while not self.stop.is_set():
            step = self.rng.choices(names, weights)[0]
            await self.steps[step]()

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Call ``tool``, check the envelope and record the outcome; ``data`` on success, else None."""
        self.calls += 1
        started = time.perf_counter()
        try:
            result: CallToolResult = await self.client.call_tool(tool, arguments)
        except Exception as exc:
            ms = (time.perf_counter() - started) * 1000
            self.stats.record(
                tool, ms, code=f"exception:{type(exc).__name__}", detail=repr(exc), arguments=arguments
            )
            await anyio.sleep(0.1)  # a broken session must not spin
            return None
        ms = (time.perf_counter() - started) * 1000
        try:
            # check_envelope's own jsonschema.validate() re-checks the schema on every call (~35 ms for
            # these schemas, which would make the soak measure its own validation): it gets an empty
            # schema for its other checks, and the compiled validator checks the outputSchema.
            envelope = check_envelope(result, {})
            self.validators[tool].validate(envelope)
        except Exception as exc:  # AssertionError or jsonschema.ValidationError
            self.stats.record(tool, ms, code="envelope_invalid", detail=repr(exc), arguments=arguments)
            return None
        # check_envelope keeps every envelope for suite-wide checks; a soak would grow it without bound.
        if SEEN and SEEN[-1] is envelope:
            SEEN.pop()
        if not envelope["success"]:
            code = str(envelope["error"]["code"])
            self.stats.record(tool, ms, code=code, detail=envelope["summary"], arguments=arguments)
            return None
        self.stats.record(tool, ms)
        data: dict[str, Any] = envelope["data"]
        if data.get("status") == "partial":
            self.stats.partial += 1
        return data

    async def list_accounts(self) -> None:
        await self.call("imap_list_accounts", {})

    async def list_mailboxes(self) -> None:
        await self.call("imap_list_mailboxes", {"include_counts": self.rng.random() < 1 / 3})

    def search_arguments(self) -> dict[str, Any]:
        rng = self.rng
        arguments: dict[str, Any] = {"limit": rng.randint(1, 50)}
        if rng.random() < 0.2:
            arguments["mailbox"] = SECOND_MAILBOX
        kind = rng.choice(("none", "from", "subject", "unread_only", "since"))
        if kind == "from":
            name, address = rng.choice(mailgen.SENDERS)
            arguments["from"] = name.split()[0] if name and rng.random() < 0.6 else address
        elif kind == "subject":
            arguments["subject"] = rng.choice(SUBJECT_TERMS)
        elif kind == "unread_only":
            arguments["unread_only"] = True
        elif kind == "since":
            span = (mailgen.DATE_END - mailgen.DATE_START).days
            since = mailgen.DATE_START.date() + dt.timedelta(days=rng.randrange(span))
            arguments["since"] = since.isoformat()
        if rng.random() < 0.3:
            arguments["snippet_chars"] = rng.choice((0, 80, 500))
        return arguments

    async def search(self) -> None:
        arguments = self.search_arguments()
        data = await self.call("imap_search_messages", arguments)
        pages = self.rng.randint(1, 3) if self.rng.random() < 0.3 else 0
        while data is not None:
            self.message_ids.extend(message["message_id"] for message in data["messages"])
            cursor = data.get("next_cursor")
            if not cursor or pages <= 0 or self.stop.is_set():
                return
            pages -= 1
            data = await self.call("imap_search_messages", {**arguments, "cursor": cursor})

    async def some_message_id(self) -> str | None:
        if not self.message_ids:
            await self.search()
        return self.rng.choice(self.message_ids) if self.message_ids else None

    async def get_message(self) -> None:
        message_id = await self.some_message_id()
        if message_id is None or self.stop.is_set():
            return
        arguments = {
            "message_id": message_id,
            "body_format": self.rng.choice(("text", "markdown", "html")),
            "body_max_chars": self.rng.choice((400, 4000, 20_000)),
        }
        await self.call("imap_get_message", arguments)

    async def get_message_raw(self) -> None:
        message_id = await self.some_message_id()
        if message_id is None or self.stop.is_set():
            return
        max_bytes = self.rng.choice((256, 2048, 16_384))
        data = await self.call("imap_get_message_raw", {"message_id": message_id, "max_bytes": max_bytes})
        if data is not None and data["truncated"] and self.rng.random() < 0.5:
            offset = data["offset_bytes"] + data["returned_bytes"]
            await self.call(
                "imap_get_message_raw",
                {"message_id": message_id, "offset_bytes": offset, "max_bytes": max_bytes},
            )


# ---------------------------------------------------------------------- a run


@dataclass
class SoakOptions:
    """What to run; ``duration_s`` applies to each mode."""

    duration_s: float = 30.0
    clients: int = 4
    modes: tuple[str, ...] = MODES
    messages: int = 5000
    sample_interval_s: float = 2.0
    warmup_fraction: float = 0.2
    seed: int = 0
    tracemalloc: bool = False
    command: str = ""


@dataclass
class SoakEnvironment:
    """The seeded server and the config file the clients use."""

    dovecot: Dovecot
    user: str
    workdir: Path
    config_text: str
    messages: dict[str, int]

    def config_file(self, name: str) -> Path:
        path = self.workdir / f"{name}.toml"
        path.write_text(self.config_text, encoding="utf-8")
        return path


@contextlib.contextmanager
def soak_environment(options: SoakOptions, dovecot: Dovecot | None = None) -> Iterator[SoakEnvironment]:
    """Seed a fresh user on ``dovecot`` (or on a new throwaway Dovecot) and write its config."""
    with contextlib.ExitStack() as stack:
        if dovecot is None:
            dovecot = stack.enter_context(Dovecot())
        user = dovecot.new_user("u")
        dovecot.seed(
            user, "INBOX", mailgen.corpus(options.messages), flags=lambda i: "" if i % 3 == 0 else "\\Seen"
        )
        second = max(options.messages // 10, 20)
        dovecot.seed(user, SECOND_MAILBOX, mailgen.corpus(second, seed=1), flags="\\Seen")
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mim-soak-")))
        config_text = config_toml(
            {
                "default": account_settings(
                    dovecot, user, password_env=PASSWORD_ENV, connect_timeout_s=None, command_timeout_s=None
                )
            }
        )
        previous = os.environ.get(PASSWORD_ENV)
        os.environ[PASSWORD_ENV] = dovecot.password
        try:
            yield SoakEnvironment(
                dovecot=dovecot,
                user=user,
                workdir=workdir,
                config_text=config_text,
                messages={"INBOX": options.messages, SECOND_MAILBOX: second},
            )
        finally:
            if previous is None:
                os.environ.pop(PASSWORD_ENV, None)
            else:
                os.environ[PASSWORD_ENV] = previous


async def open_stdio_clients(
    stack: AsyncExitStack, env: SoakEnvironment, count: int
) -> tuple[list[Client], list[int], list[Path]]:
    """Spawn one ``mail-imap-mcp serve`` per client; return the sessions, server pids and log files."""
    clients: list[Client] = []
    pids: list[int] = []
    logs: list[Path] = []
    for index in range(count):
        config = env.config_file(f"stdio-{index}")  # a distinct path identifies the process
        log_path = env.workdir / f"stdio-{index}.log"
        log: TextIO = stack.enter_context(open(log_path, "w", encoding="utf-8"))  # noqa: SIM115
        params = StdioServerParameters(
            command=SERVER,
            args=["serve", "--config", str(config)],
            env={PASSWORD_ENV: env.dovecot.password},
        )
        transport = stdio_client(params, errlog=log)
        client = Client(transport, cache=None, read_timeout_seconds=CALL_TIMEOUT_S)
        clients.append(await stack.enter_async_context(client))
        pids.append(child_pid_with_arg(str(config)))
        logs.append(log_path)
    return clients, pids, logs


async def open_http_clients(
    stack: AsyncExitStack, env: SoakEnvironment, count: int
) -> tuple[list[Client], list[int], list[Path]]:
    """Start one ``mail-imap-mcp serve --transport http``; return one session per client, its pid and
    its log file."""
    config = env.config_file("http")
    with config.open("a", encoding="utf-8") as file:
        file.write(f'[http]\ntoken_env = "{TOKEN_ENV}"\n')
    server = start_http_server(config, token=new_token())
    stack.callback(server.stop)  # after the clients closed (the stack unwinds in reverse)
    clients: list[Client] = []
    for _ in range(count):
        http = await stack.enter_async_context(create_mcp_http_client(headers=auth_headers(server.token)))
        transport = streamable_http_client(server.url, http_client=http)
        client = Client(transport, cache=None, read_timeout_seconds=CALL_TIMEOUT_S)
        clients.append(await stack.enter_async_context(client))
    return clients, [server.proc.pid], [server.log_path]


def count_logins(logs: list[Path]) -> int:
    """IMAP logins the server processes made (the server logs one line per connection)."""
    return sum(path.read_text(encoding="utf-8", errors="replace").count(" connected in ") for path in logs)


#: Calls per client before the warm-up can end: each client's server process has made its first IMAP
#: calls (its connection, caches and lazily opened files exist) whatever the machine's load.
WARMUP_CALLS_PER_CLIENT = 10
#: How long a mode waits at most for its warm-up to end (past it, the mode fails and says so).
WARMUP_LIMIT_S = 120.0


def warmed_up(sample: Sample, warmup_s: float) -> bool:
    """``sample`` is past the warm-up: at or after ``warmup_s``, every client having made
    ``WARMUP_CALLS_PER_CLIENT`` calls (a time alone ended the warm-up of a loaded machine before a server
    process had made its first call, and counted the descriptors it then opened as growth)."""
    return sample.t_s >= warmup_s and sample.fewest_calls >= WARMUP_CALLS_PER_CLIENT and not sample.settled


def first_after_warmup(samples: list[Sample], warmup_s: float) -> Sample | None:
    """The first sample past the warm-up (:func:`warmed_up`); None: the warm-up never ended."""
    return next((sample for sample in samples if warmed_up(sample, warmup_s)), None)


def growth_pct(before: int, after: int) -> float | None:
    return None if before <= 0 else round((after - before) / before * 100, 2)


def top_allocation_growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> list[str]:
    """The 15 source lines whose live allocations grew most between two snapshots."""
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen *>")]
    diff = after.filter_traces(ignore).compare_to(before.filter_traces(ignore), "lineno")
    return [str(stat) for stat in diff[:15]]


async def run_mode(mode: str, env: SoakEnvironment, options: SoakOptions) -> dict[str, Any]:
    """Run ``options.clients`` clients in ``mode`` for ``options.duration_s``; return its report."""
    stats = CallStats()
    samples: list[Sample] = []
    stop = anyio.Event()
    logs: list[Path] = []
    app: AppContext | None = None
    warmup_s = options.duration_s * options.warmup_fraction
    snapshots: list[tracemalloc.Snapshot] = []
    trace = options.tracemalloc and mode == "inprocess"
    async with AsyncExitStack() as stack:
        if mode == "stdio":
            clients, pids, logs = await open_stdio_clients(stack, env, options.clients)
        elif mode == "http":
            clients, pids, logs = await open_http_clients(stack, env, options.clients)
        else:
            config = load_config(env.config_file("inprocess"))
            app = AppContext.from_config(config)
            clients = [
                await stack.enter_async_context(
                    Client(build_server(config, app), cache=None, read_timeout_seconds=CALL_TIMEOUT_S)
                )
                for _ in range(options.clients)
            ]
            pids = [os.getpid()]
        listed = await clients[0].list_tools()
        validators = compile_output_schemas(listed.tools)
        if trace:
            tracemalloc.start(1)
        started = time.monotonic()
        soak_clients = [
            SoakClient(client, validators, stats, random.Random(f"{options.seed}:{mode}:{index}"), stop)
            for index, client in enumerate(clients)
        ]
        warm = anyio.Event()

        def fewest_calls() -> int:
            return min(client.calls for client in soak_clients)

        async def sampler() -> None:
            tick = 0
            while not stop.is_set():
                sample = take_sample(pids, started, stats, fewest_calls=fewest_calls())
                samples.append(sample)
                if warmed_up(sample, warmup_s):
                    warm.set()
                if trace and not snapshots and sample.t_s >= warmup_s:
                    snapshots.append(tracemalloc.take_snapshot())
                tick += 1
                with anyio.move_on_after(
                    max(0.0, started + tick * options.sample_interval_s - time.monotonic())
                ):
                    await stop.wait()

        async with anyio.create_task_group() as group:
            for soak_client in soak_clients:
                group.start_soon(soak_client.run)
            group.start_soon(sampler)
            # The rest of the duration runs after the warm-up, however long a loaded machine made it.
            with anyio.move_on_after(max(WARMUP_LIMIT_S, options.duration_s)):
                await warm.wait()
            if warm.is_set():
                await anyio.sleep(options.duration_s - warmup_s)
            stop.set()
        elapsed = time.monotonic() - started
        samples.append(take_sample(pids, started, stats, fewest_calls=fewest_calls(), settled=True))
        if trace:
            if snapshots:
                snapshots.append(tracemalloc.take_snapshot())
            tracemalloc.stop()
    logins = app.pool.get("default").logins if app is not None else count_logins(logs)
    return mode_report(mode, options, stats, samples, elapsed, warmup_s, logins, snapshots)


def mode_report(
    mode: str,
    options: SoakOptions,
    stats: CallStats,
    samples: list[Sample],
    elapsed: float,
    warmup_s: float,
    logins: int,
    snapshots: list[tracemalloc.Snapshot],
) -> dict[str, Any]:
    """Figures and verdict of one mode (JSON-ready)."""
    end = samples[-1]
    warm = first_after_warmup(samples, warmup_s)
    pids = list(end.rss_kb)
    all_calls = LatencyHistogram()
    for histogram in stats.latency.values():
        all_calls.merge(histogram)
    tools = {
        tool: {"calls": stats.calls[tool], "errors": stats.errors[tool], **stats.latency[tool].summary()}
        for tool in TOOLS
    }
    problems: list[str] = []
    if warm is None:  # nothing to compare the end with: the figures below are the first sample's
        problems.append(
            f"the warm-up did not end within {max(WARMUP_LIMIT_S, options.duration_s):g} s: a client made "
            f"{end.fewest_calls} call(s), not {WARMUP_CALLS_PER_CLIENT}"
        )
        warm = samples[0]
    fd_growth = {pid: end.fds[pid] - warm.fds[pid] for pid in pids}
    rss_warm, rss_end = sum(warm.rss_kb.values()), sum(end.rss_kb.values())
    if stats.total_errors:
        problems.append(f"{stats.total_errors} call(s) failed: {dict(stats.errors_by_code)}")
    grown = {pid: n for pid, n in fd_growth.items() if n > 0}
    if grown:
        problems.append(f"open file descriptors grew after warm-up: {grown} (pid: +n)")
    if any(end.fds[pid] < 0 for pid in pids):
        problems.append("a server process exited during the run")
    report: dict[str, Any] = {
        "mode": mode,
        "clients": options.clients,
        "duration_s": round(elapsed, 1),
        "warmup_s": round(warmup_s, 1),
        "calls": stats.total_calls,
        "calls_per_s": round(stats.total_calls / elapsed, 1) if elapsed else None,
        "errors": stats.total_errors,
        "errors_by_code": dict(stats.errors_by_code),
        "partial_results": stats.partial,
        "imap_logins": logins,
        "latency": {"all": {"calls": all_calls.count, **all_calls.summary()}, **tools},
        "rss": {
            "processes": len(pids),
            "warmup_t_s": round(warm.t_s, 1),
            "warmup_kb": rss_warm,
            "end_kb": rss_end,
            "growth_pct": growth_pct(rss_warm, rss_end),
            "max_process_growth_pct": max(
                (growth_pct(warm.rss_kb[pid], end.rss_kb[pid]) or 0.0 for pid in pids), default=0.0
            ),
            "peak_kb": max(sum(s.rss_kb.values()) for s in samples),
        },
        "fds": {
            "warmup": sum(warm.fds.values()),
            "end": sum(end.fds.values()),
            "max_process_growth": max(fd_growth.values(), default=0),
            "per_process_end": [end.fds[pid] for pid in pids],
        },
        "error_examples": stats.error_examples,
        "problems": problems,
        "ok": not problems,
        "samples": [sample.to_json() for sample in samples],
    }
    if len(snapshots) == 2:
        report["tracemalloc_top_growth"] = top_allocation_growth(*snapshots)
    return report


def run_soak(options: SoakOptions, dovecot: Dovecot | None = None) -> dict[str, Any]:
    """Seed a mailbox, run every mode in ``options.modes`` and return the whole report."""
    unknown = set(options.modes) - set(MODES)
    if unknown or not options.modes:
        raise ValueError(f"modes must be among {MODES}, got {options.modes}")
    started_utc = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with soak_environment(options, dovecot) as env:
        modes = [anyio.run(run_mode, mode, env, options) for mode in options.modes]
        messages = env.messages
        machine = machine_info(env.dovecot.binary)
    return {
        "started_utc": started_utc,
        "command": options.command,
        "machine": machine,
        "options": {
            "duration_s_per_mode": options.duration_s,
            "clients": options.clients,
            "modes": list(options.modes),
            "sample_interval_s": options.sample_interval_s,
            "warmup_fraction": options.warmup_fraction,
            "seed": options.seed,
            "tracemalloc": options.tracemalloc,
        },
        "messages": messages,
        "modes": modes,
        "ok": all(mode["ok"] for mode in modes),
    }


# ---------------------------------------------------------------------- output


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _mb(kb: int) -> str:
    return f"{kb / 1024:.1f} MB"


def format_report(report: dict[str, Any]) -> str:
    """A plain-text summary table of a report from :func:`run_soak`."""
    machine = report["machine"]
    lines = [
        f"soak {report['started_utc']}  {report['options']['clients']} clients x "
        f"{report['options']['duration_s_per_mode']:g} s per mode, INBOX {report['messages']['INBOX']} messages",
        f"machine: {machine['nproc']} CPU ({machine['cpu_model']}), Python {machine['python']}, "
        f"Dovecot {machine['dovecot']}",
    ]
    for mode in report["modes"]:
        rss, fds = mode["rss"], mode["fds"]
        by_code = f" {mode['errors_by_code']}" if mode["errors_by_code"] else ""
        lines += [
            "",
            f"== {mode['mode']}: {mode['calls']} calls in {mode['duration_s']} s "
            f"({mode['calls_per_s']}/s), {mode['errors']} error(s){by_code}, "
            f"{mode['partial_results']} partial, {mode['imap_logins']} IMAP login(s)",
            f"{'tool':<24}{'calls':>8}{'errors':>8}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}",
        ]
        for tool, figures in mode["latency"].items():
            lines.append(
                f"{tool:<24}{figures['calls']:>8}{figures.get('errors', mode['errors']):>8}"
                f"{_ms(figures['p50_ms']):>9}{_ms(figures['p95_ms']):>9}{_ms(figures['max_ms']):>9}"
            )
        lines += [
            f"RSS ({rss['processes']} process(es)): {_mb(rss['warmup_kb'])} at {rss['warmup_t_s']} s -> "
            f"{_mb(rss['end_kb'])} at end ({rss['growth_pct']:+.2f} %; worst process "
            f"{rss['max_process_growth_pct']:+.2f} %), peak {_mb(rss['peak_kb'])}",
            f"open fds: {fds['warmup']} after warm-up -> {fds['end']} at end "
            f"(worst process {fds['max_process_growth']:+d}; per process {fds['per_process_end']})",
            "RSS/fds over time (t s: calls, MB, fds): "
            + ", ".join(
                f"{s['t_s']:g}: {s['calls']}, {s['rss_kb_total'] / 1024:.1f}, {s['fds_total']}"
                for s in _thin(mode["samples"], 12)
            ),
        ]
        for example in mode["error_examples"]:
            lines.append(f"  error {example['tool']} [{example['code']}] {example['detail'][:200]}")
        for line in mode.get("tracemalloc_top_growth", []):
            lines.append(f"  alloc+ {line}")
        lines.append("verdict: " + ("ok" if mode["ok"] else "FAIL: " + "; ".join(mode["problems"])))
    return "\n".join(lines)


def _thin(items: list[Any], count: int) -> list[Any]:
    """At most ``count`` evenly spaced items, always including the last."""
    if len(items) <= count:
        return items
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/soak",
        description="N concurrent MCP clients over stdio, in-process and/or HTTP, mixed tool calls, "
        "with latency, RSS and open-fd tracking. Exit status 1 on any error or fd growth.",
    )
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per mode (default 30)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument(
        "--mode",
        choices=("all", "both", *MODES),
        default="all",
        help="default all; both = stdio and inprocess",
    )
    parser.add_argument("--messages", type=int, default=5000, help="INBOX size (default 5000)")
    parser.add_argument("--sample-interval", type=float, default=2.0, help="seconds (default 2)")
    parser.add_argument("--warmup", type=float, default=0.2, help="fraction of the duration (default 0.2)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the call mix")
    parser.add_argument(
        "--tracemalloc", action="store_true", help="in-process mode: report top allocation growth (slow)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the full report here")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.duration <= 0 or not 0 <= args.warmup < 1:
        parser.error("--clients must be >= 1, --duration > 0 and 0 <= --warmup < 1")
    options = SoakOptions(
        duration_s=args.duration,
        clients=args.clients,
        modes={"all": MODES, "both": ("stdio", "inprocess")}.get(args.mode, (args.mode,)),
        messages=args.messages,
        sample_interval_s=args.sample_interval,
        warmup_fraction=args.warmup,
        seed=args.seed,
        tracemalloc=args.tracemalloc,
        command="scripts/soak " + " ".join(sys.argv[1:] if argv is None else argv),
    )
    report = run_soak(options)
    print(format_report(report))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nreport written to {args.json}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
