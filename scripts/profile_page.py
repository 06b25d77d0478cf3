"""Our own work per search page, against a zero-work MCP server on the same SDK doing the same IMAP.

The *zero-work* server (``profile_page.py serve-zero``) is what any Python server on this stack must
pay for a warm newest-20 page: an ``MCPServer`` of the same SDK, over stdio, whose one tool sends
the IMAP commands ours sends for that page on a warm, selected connection (the revalidation
``NOOP`` + ``STATUS`` pipelined with ``UID SEARCH`` of the newest window, then one ``UID FETCH`` of
the same items, parsed by imapclient like ours) and answers with one short line: no parsing of
the messages, no envelope, no output schema.

``scripts/profile_page`` seeds a throwaway Dovecot with ``mailgen.corpus`` (as scripts/bench does),
starts the servers through the MCP SDK's client, then alternates one call of each (so drift hits all
alike) and reports per call the median wall time seen by the client and the CPU time the server
process spent (from /proc/<pid>/stat). Ours runs twice: as users run it, where paging the same newest
20 again is a *page seen before* (its summaries kept, only flags fetched: ``summary_cache_entries``),
and with ``summary_cache_entries = 0``, where every page is a *page seen first* (everything fetched
and parsed, the same FETCH as the zero-work server). ``scripts/bench`` runs the same comparison
(``measure_own_work``) and reports it in docs/benchmarks.md. ``--profile`` also runs a page seen first
in process under cProfile (CPU time) and prints where it goes.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import math
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.accounts import account_settings, config_toml  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402
from tests.support.run.machine import child_pid, cpu_seconds  # noqa: E402

PASSWORD_ENV = "MAIL_IMAP_PROFILE_PASSWORD"
SERVER_BIN = ROOT / ".venv" / "bin" / "mail-imap-mcp"
PAGE = 20


# ------------------------------------------------------------------------------ zero-work server


class ZeroWorkPage:
    """A warm page of 20 with the IMAP commands ours sends, parsed by imapclient, and nothing else.

    Called with ``walk=False``: the newest 20 (the first page). With ``walk=True``: the page after the
    last one walked (the first walk call gives the newest 20), as ours answers a call with the last
    page's ``next_cursor``: the window of UIDs below the last page's oldest one, searched and fetched."""

    def __init__(self, host: str, port: int, user: str, ca_file: str) -> None:
        import ssl

        from imapclient import IMAPClient
        from imapclient.imapclient import seq_to_parenstr_upper

        from mail_imap_mcp.imap.fetch import summary_items

        context = ssl.create_default_context(cafile=ca_file)
        self.client = IMAPClient(host, port=port, ssl=True, ssl_context=context)
        self.client.login(user, os.environ[PASSWORD_ENV])
        selected = self.client.select_folder("INBOX", readonly=True)
        self.uidnext = int(selected[b"UIDNEXT"])
        self.items = seq_to_parenstr_upper(summary_items(200))
        self.walked_below: int | None = None

    def __call__(self, walk: bool = False) -> int:
        from imapclient.response_parser import parse_fetch_response

        client = self.client
        imap = client._imap
        below = self.walked_below if walk else None
        hi = "*" if below is None else str(below - 1)
        lo = max(1, (self.uidnext if below is None else below) - WINDOW)
        noop = imap._command("NOOP")
        status = imap._command("STATUS", client._normalise_folder("INBOX"), b"(UIDVALIDITY UIDNEXT)")
        window = client._raw_command_untagged(b"SEARCH", [b"UID", f"{lo}:{hi}".encode()])
        imap._command_complete("NOOP", noop)
        imap._command_complete("STATUS", status)
        imap.untagged_responses.clear()
        uids = sorted((int(t) for line in window if line for t in line.split()), reverse=True)[:PAGE]
        if walk:
            if not uids:
                raise SystemExit("the page walk reached the oldest message: seed more, or make fewer calls")
            self.walked_below = uids[-1]
        tag = imap._command("UID", "FETCH", ",".join(map(str, uids)), self.items)
        typ, data = imap._command_complete("FETCH", tag)
        _, data = imap._untagged_response(typ, data, "FETCH")
        return len(parse_fetch_response(data, client.normalise_times, True))


#: UIDs of the window ours searches for a page of 20 (21 wanted, x 1.25, + 8) in a mailbox without gaps.
WINDOW = 35


def serve_zero(host: str, port: int, user: str, ca_file: str) -> None:
    """The zero-work MCP server: same SDK, same IMAP commands for a warm page of 20, no own work."""
    from mcp.server.mcpserver import MCPServer

    fetch_page = ZeroWorkPage(host, port, user, ca_file)  # logs in with the password from the environment
    server = MCPServer("zero-work")

    @server.tool()
    def page(walk: bool = False) -> str:
        """Newest 20 messages' summary items (walk: the next 20 of a walk); answers only their count."""
        return str(fetch_page(walk))

    server.run("stdio")


def serve_replay(host: str, port: int, user: str, ca_file: str, capture: str) -> None:
    """The zero-work server answering with our envelope: the IMAP commands of the page walk, then the
    ``structuredContent`` ours answered for that page (captured), as ours sends it (the envelope as
    compact JSON in the text block too), under our tool's name and ``outputSchema``. It parses nothing
    and builds no model: what is left is the SDK's work on our envelope, on both sides."""
    import json

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools.base import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
    from mcp_types import CallToolResult, TextContent

    fetch_page = ZeroWorkPage(host, port, user, ca_file)
    captured = json.loads(Path(capture).read_text())
    pages = iter(
        [
            (payload, json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
            for payload in captured["pages"]
        ]
    )

    class ReplayTool(Tool):
        replayed_schema: dict[str, Any]

        @property
        def output_schema(self) -> dict[str, Any] | None:
            return self.replayed_schema

        async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
            fetch_page(walk=True)
            payload, text = next(pages)
            return CallToolResult(
                content=[TextContent(type="text", text=text)], structured_content=payload, is_error=False
            )

    tool = captured["tool"]
    replay = ReplayTool(
        fn=lambda: None,
        name=tool["name"],
        description=tool["description"],
        parameters=tool["inputSchema"],
        fn_metadata=FuncMetadata(arg_model=ArgModelBase),
        is_async=True,
        replayed_schema=tool["outputSchema"],
    )
    MCPServer("zero-work-replay", tools=[replay]).run("stdio")


# ------------------------------------------------------------------------------ measuring


def _child(marker: str) -> int:
    pid = child_pid(marker)
    if pid is None:
        raise SystemExit(f"cannot find the server process ({marker})")
    return pid


@dataclass
class Series:
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: float = 0.0
    calls: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.wall_ms)

    @property
    def cpu_per_call(self) -> float:
        return self.cpu_ms / max(self.calls, 1)


@dataclass
class Subject:
    name: str
    tool: str
    arguments: dict[str, Any]
    client: Client
    pid: int
    #: The arguments of the next call from this call's result (a walk: the same call plus the cursor).
    follow: Callable[[CallToolResult], dict[str, Any]] | None = None
    series: Series = field(default_factory=Series)

    async def call(self, *, record: bool) -> CallToolResult:
        cpu = cpu_seconds(self.pid)
        started = time.perf_counter()
        result = await self.client.call_tool(self.tool, self.arguments)
        wall = (time.perf_counter() - started) * 1000
        # The server's CPU for the call is done when its answer arrived.
        spent = (cpu_seconds(self.pid) - cpu) * 1000
        if result.is_error:
            raise SystemExit(f"{self.name} failed: {result.content}")
        if record:
            self.series.wall_ms.append(wall)
            self.series.cpu_ms += spent
            self.series.calls += 1
        if self.follow is not None:
            self.arguments = self.follow(result)
        return result


@contextlib.asynccontextmanager
async def spawned(params: StdioServerParameters, log: Path, marker: str) -> AsyncIterator[tuple[Client, int]]:
    with open(log, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            await client.list_tools()
            yield client, _child(marker)


def _arguments(shape: str) -> dict[str, Any]:
    """Arguments of a newest-20 page; shape "default" sends no ``fields`` (also for servers without it)."""
    return {"limit": PAGE} if shape == "default" else {"limit": PAGE, "fields": shape}


def _next_page(result: CallToolResult) -> dict[str, Any]:
    """Our next page of the walk: the same call plus the page's ``next_cursor``."""
    cursor = (result.structured_content or {}).get("data", {}).get("next_cursor")
    if not cursor:
        raise SystemExit("the page walk reached the oldest message: seed more, or make fewer calls")
    return {**_arguments("default"), "cursor": cursor}


ZERO = "zero-work server"
#: The zero-work server walking the mailbox a page at a time (the next 20 below the last page's oldest).
ZERO_WALK = "zero-work server, page walk"
#: The same walk answering with our envelope of each page (captured from ours) and our outputSchema.
REPLAY_WALK = "zero-work server answering our envelope, page walk"
#: Ours, paging the same newest 20 again and again: a page seen before (the summaries kept, only the
#: flags fetched).
SEEN_BEFORE = "ours, page seen before"
#: Ours walking the mailbox with its cursors, summaries not kept: every page one never seen before
#: (everything fetched and parsed, the same FETCH as the zero-work walk, no sender parsed twice unless
#: two messages share it).
FIRST_VIEW = "ours, page seen first (walk)"


@dataclass
class OwnWork:
    """One comparison: per subject, its series of alternating calls, and the zero-work subject each is
    compared with (the newest page repeated, or the page walk)."""

    messages: int
    calls: int
    load: tuple[float, float, float]
    subjects: dict[str, Series]
    references: dict[str, str]
    #: CPU per page of the client's validation of our captured envelopes against our outputSchema, in
    #: this process, as the SDK's client does it on every call (None without the replay's capture).
    validation_ms: float | None = None

    @property
    def zero(self) -> Series:
        return self.subjects[ZERO]

    def reference(self, name: str) -> Series:
        return self.subjects[self.references.get(name, ZERO)]

    def ratio(self, name: str, against: str | None = None) -> float:
        """Median wall time of ``name`` over its zero-work reference's (or ``against``'s)."""
        base = self.subjects[against] if against else self.reference(name)
        return self.subjects[name].median / base.median

    def table(self) -> str:
        rows = [
            "| server | compared with | wall median | / it | server CPU per call | CPU over it |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for name, series in self.subjects.items():
            base_name = self.references.get(name, ZERO)
            base = self.subjects[base_name]
            compared = "-" if base_name == name else base_name
            rows.append(
                f"| {name} | {compared} | {series.median:.2f} ms | {series.median / base.median:.2f}x | "
                f"{series.cpu_per_call:.2f} ms | {series.cpu_per_call - base.cpu_per_call:+.2f} ms |"
            )
        return "\n".join(rows)

    def bound(self) -> str:
        """Where the page seen first stands between the two zero-work walks: what the SDK's work on our
        envelope takes (replay over the plain walk) and what is our own (ours over the replay)."""
        if REPLAY_WALK not in self.subjects:
            return ""
        zero, replay, ours = (self.subjects[n] for n in (ZERO_WALK, REPLAY_WALK, FIRST_VIEW))
        return "\n".join(
            [
                "| page walk | wall median | / zero-work walk | / zero-work with our envelope | server CPU per call |",
                "|---|---:|---:|---:|---:|",
                *(
                    f"| {name} | {s.median:.2f} ms | {s.median / zero.median:.2f}x | "
                    f"{s.median / replay.median:.2f}x | {s.cpu_per_call:.2f} ms |"
                    for name, s in ((ZERO_WALK, zero), (REPLAY_WALK, replay), (FIRST_VIEW, ours))
                ),
                "",
                f"The SDK's work on our envelope (both sides), the replay over the plain walk: "
                f"{replay.median - zero.median:+.2f} ms wall, {replay.cpu_per_call - zero.cpu_per_call:+.2f} ms "
                f"server CPU per call. Our own work, ours over the replay: {ours.median - replay.median:+.2f} ms "
                f"wall, {ours.cpu_per_call - replay.cpu_per_call:+.2f} ms server CPU per call. Best reachable "
                f"with this envelope (zero own work): {replay.median / zero.median:.2f}x of the zero-work walk.",
                *(
                    [
                        f"Of the SDK's work, the client validating each page against our outputSchema takes "
                        f"{self.validation_ms:.2f} ms of CPU (in this process, as its client does it)."
                    ]
                    if self.validation_ms is not None
                    else []
                ),
            ]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "calls": self.calls,
            "load": [round(x, 2) for x in self.load],
            "validation_ms": None if self.validation_ms is None else round(self.validation_ms, 3),
            "subjects": {
                name: {
                    "compared_with": self.references.get(name, ZERO),
                    "median_ms": round(s.median, 3),
                    "ratio": round(self.ratio(name), 3),
                    "cpu_ms_per_call": round(s.cpu_per_call, 3),
                }
                for name, s in self.subjects.items()
            },
        }


def write_configs(work_dir: Path, settings: dict[str, Any]) -> tuple[Path, Path]:
    """Our config as users run it, and the same with no summaries kept (every page a first view)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    kept, first_view = work_dir / "own-work.toml", work_dir / "own-work-first-view.toml"
    accounts = config_toml({"default": settings})
    kept.write_text(accounts)
    first_view.write_text(accounts + "\n[server]\nsummary_cache_entries = 0\n")
    return kept, first_view


async def capture_walk(params: StdioServerParameters, work_dir: Path, marker: str, pages: int) -> Path:
    """Our tool's declaration and the ``structuredContent`` of the first ``pages`` pages of our walk, from
    a server of its own (so the measured one parses every page for the first time), for the replay."""
    import json

    async with spawned(params, work_dir / "capture.log", marker) as (client, _):
        listed = await client.list_tools()
        tool = next(t for t in listed.tools if t.name == "imap_search_messages")
        arguments, captured = _arguments("default"), []
        for _ in range(pages):
            result = await client.call_tool(tool.name, arguments)
            captured.append(result.structured_content)
            arguments = _next_page(result)
    path = work_dir / "walk-envelopes.json"
    declaration = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
    }
    path.write_text(json.dumps({"tool": declaration, "pages": captured}))
    return path


def validation_cpu_ms(capture: Path, rounds: int = 7) -> float:
    """CPU per page, best of ``rounds`` passes, of validating the captured pages against the captured
    outputSchema the way the SDK's client does on every call: a validator compiled once, then
    ``best_match(iter_errors(...))`` of each result."""
    import json

    from jsonschema import exceptions
    from jsonschema.validators import validator_for
    from referencing import Registry

    captured = json.loads(capture.read_text())
    schema, pages = captured["tool"]["outputSchema"], captured["pages"]
    validator = validator_for(schema)(schema, registry=Registry())
    best = math.inf
    for _ in range(rounds):
        started = time.process_time()
        for page in pages:
            if exceptions.best_match(validator.iter_errors(page)) is not None:
                raise SystemExit("a captured page does not validate against the captured outputSchema")
        best = min(best, time.process_time() - started)
    return best / len(pages) * 1000


async def measure_own_work(
    dovecot: Any,
    user: str,
    work_dir: Path,
    *,
    calls: int,
    warmup: int,
    shapes: Sequence[str] = ("default",),
    replay: bool = True,
) -> OwnWork:
    """Warm newest-20 pages of ours (seen before in each of ``shapes``) against the zero-work server, and
    our walk of pages seen first against the zero-work walk (and, with ``replay``, against the zero-work
    walk answering with our envelope), on ``user``'s INBOX of ``dovecot``; calls alternate so drift hits
    all alike."""
    settings = account_settings(dovecot, user, password_env=PASSWORD_ENV)
    kept, first_view = write_configs(work_dir, settings)
    env = {PASSWORD_ENV: dovecot.password, "PATH": os.environ.get("PATH", "")}
    if "PYTHONPATH" in os.environ:  # e.g. PYTHONPATH=<other checkout>/src to measure that code
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]

    def ours(config: Path) -> StdioServerParameters:
        return StdioServerParameters(
            command=str(SERVER_BIN), args=["serve", "--config", str(config)], env=env
        )

    imap = [dovecot.host, str(dovecot.tls_port), user, str(dovecot.ca_file)]
    zero = StdioServerParameters(command=sys.executable, args=[__file__, "serve-zero", *imap], env=env)
    walks = warmup + calls
    if (walks + 1) * PAGE > dovecot_messages(dovecot, user):
        raise SystemExit(f"{walks} pages of {PAGE} need more messages: pass --messages or fewer --calls")
    validation_ms: float | None = None
    async with contextlib.AsyncExitStack() as stack:
        replay_subject: list[tuple[str, Client, int]] = []
        if replay:
            capture = await capture_walk(ours(first_view), work_dir, str(first_view), walks)
            validation_ms = validation_cpu_ms(capture)
            replay_args = [__file__, "serve-replay", *imap, str(capture)]
            replayed = StdioServerParameters(command=sys.executable, args=replay_args, env=env)
            client, pid = await stack.enter_async_context(
                spawned(replayed, work_dir / "replay.log", "serve-replay")
            )
            replay_subject.append((REPLAY_WALK, client, pid))
        zero_client, zero_pid = await stack.enter_async_context(
            spawned(zero, work_dir / "zero.log", "serve-zero")
        )
        our_client, our_pid = await stack.enter_async_context(
            spawned(ours(kept), work_dir / "ours.log", str(kept))
        )
        first_client, first_pid = await stack.enter_async_context(
            spawned(ours(first_view), work_dir / "first.log", str(first_view))
        )
        subjects = [
            Subject(ZERO, "page", {}, zero_client, zero_pid),
            Subject(ZERO_WALK, "page", {"walk": True}, zero_client, zero_pid),
        ]
        subjects += [
            Subject(name, "imap_search_messages", {}, client, pid) for name, client, pid in replay_subject
        ]
        for shape in shapes:
            name = SEEN_BEFORE if shape == "default" else f"{SEEN_BEFORE}, fields {shape}"
            subjects.append(Subject(name, "imap_search_messages", _arguments(shape), our_client, our_pid))
        subjects.append(
            Subject(
                FIRST_VIEW, "imap_search_messages", _arguments("default"), first_client, first_pid, _next_page
            )
        )
        for _ in range(warmup):
            for subject in subjects:
                await subject.call(record=False)
        for _ in range(calls):
            for subject in subjects:
                await subject.call(record=True)
    references = {ZERO: ZERO, ZERO_WALK: ZERO_WALK, REPLAY_WALK: ZERO_WALK, FIRST_VIEW: ZERO_WALK}
    return OwnWork(
        messages=dovecot_messages(dovecot, user),
        calls=calls,
        load=os.getloadavg(),
        subjects={subject.name: subject.series for subject in subjects},
        references=references,
        validation_ms=validation_ms,
    )


async def measure_layers(dovecot: Any, user: str, work_dir: Path, *, calls: int, warmup: int) -> str:
    """Our walk of pages seen first and the zero-work walk, alternating, each server timed by layer from
    inside (``scripts/profile_layers.py``): the table of where each one's CPU per call goes."""
    import json
    import signal

    import profile_layers

    settings = account_settings(dovecot, user, password_env=PASSWORD_ENV)
    _, first_view = write_configs(work_dir, settings)
    env = {PASSWORD_ENV: dovecot.password, "PATH": os.environ.get("PATH", "")}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    script = str(Path(__file__).with_name("profile_layers.py"))
    imap = [dovecot.host, str(dovecot.tls_port), user, str(dovecot.ca_file)]
    launches = {
        "ours": ([script, "serve-ours", str(first_view)], str(first_view)),
        "zero": ([__file__, "serve-zero-timed", *imap], "serve-zero-timed"),
    }
    async with contextlib.AsyncExitStack() as stack:
        subjects: dict[str, Subject] = {}
        for name, (args, marker) in launches.items():
            out = work_dir / f"layers-{name}.json"
            params = StdioServerParameters(
                command=sys.executable, args=args, env={**env, profile_layers.OUT_ENV: str(out)}
            )
            client, pid = await stack.enter_async_context(
                spawned(params, work_dir / f"layers-{name}.log", marker)
            )
            subjects[name] = (
                Subject(name, "imap_search_messages", _arguments("default"), client, pid, _next_page)
                if name == "ours"
                else Subject(name, "page", {"walk": True}, client, pid)
            )

        async def timers() -> dict[str, Any]:
            for subject in subjects.values():
                os.kill(subject.pid, signal.SIGUSR1)
            await anyio.sleep(0.5)
            return {name: json.loads((work_dir / f"layers-{name}.json").read_text()) for name in subjects}

        for _ in range(warmup):
            for subject in subjects.values():
                await subject.call(record=False)
        before = await timers()
        for _ in range(calls):
            for subject in subjects.values():
                await subject.call(record=True)
        after = await timers()
    figures = {name: profile_layers.per_call(before[name], after[name], calls) for name in subjects}
    return profile_layers.table(figures["ours"], figures["zero"])


def dovecot_messages(dovecot: Any, user: str) -> int:
    with dovecot.connect(user) as client:
        return int(client.select_folder("INBOX", readonly=True)[b"EXISTS"])


async def compare(
    messages: int,
    calls: int,
    warmup: int,
    profile: bool,
    shapes: list[str],
    replay: bool,
    json_path: str | None,
    layer_calls: int = 0,
) -> None:
    import json

    from tests.support.servers.dovecot import Dovecot

    load_before = os.getloadavg()
    with (
        Dovecot(user_patterns=("prof*",), default_user="prof") as dovecot,
        tempfile.TemporaryDirectory() as tmp,
    ):
        user = "prof"
        dovecot.seed(user, "INBOX", mailgen.corpus(messages), flags=lambda i: "" if i % 3 == 0 else "\\Seen")
        result = await measure_own_work(
            dovecot, user, Path(tmp), calls=calls, warmup=warmup, shapes=shapes, replay=replay
        )
        layers = ""
        if layer_calls:
            layers = await measure_layers(
                dovecot, user, Path(tmp) / "layers", calls=layer_calls, warmup=warmup
            )
        if profile:
            _, first_view = write_configs(
                Path(tmp), account_settings(dovecot, user, password_env=PASSWORD_ENV)
            )
            env = {PASSWORD_ENV: dovecot.password}
            zero = [dovecot.host, str(dovecot.tls_port), user, str(dovecot.ca_file)]
            profile_in_process(first_view, env, zero, shapes)
    loads = " ".join(f"{x:.2f}" for x in load_before)
    print(
        f"\nwarm pages of {PAGE}, {result.messages:,} messages, {calls} alternating calls each after {warmup} "
        f"warm-up calls; load average (1, 5, 15 min) {loads} before, "
        f"{' '.join(f'{x:.2f}' for x in result.load)} at the end; code: {machine_commit()}\n"
    )
    print(result.table())
    bound = result.bound()
    if bound:
        print("\nThe page seen first against both zero-work walks:\n")
        print(bound)
    if layers:
        print(
            f"\nServer CPU per call by layer ({layer_calls} alternating calls each, timed inside each server):\n"
        )
        print(layers)
    if json_path:
        Path(json_path).write_text(json.dumps({"load_before": load_before, **result.to_json()}, indent=1))


def machine_commit() -> str:
    from tests.support.run.machine import _git_commit

    return (_git_commit() or "unknown") + (
        f", PYTHONPATH={os.environ['PYTHONPATH']}" if "PYTHONPATH" in os.environ else ""
    )


def profile_in_process(config_path: Path, env: dict[str, str], zero: list[str], shapes: list[str]) -> None:
    """CPU per page in this process, walking never-seen pages: ours against the zero-work walk, then ours
    under cProfile."""
    from mail_imap_mcp.app import AppContext
    from mail_imap_mcp.config import load_config
    from mail_imap_mcp.envelope.mcp import _to_result
    from mail_imap_mcp.envelope.model import Meta, SuccessEnvelope
    from mail_imap_mcp.tool_calls import ToolCall
    from mail_imap_mcp.tools import search_messages
    from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput

    os.environ.update(env)
    app = AppContext.from_config(load_config(config_path))

    class Walk:
        """Ours walking the mailbox with its cursors, a page per call."""

        def __init__(self, shape: str) -> None:
            self.arguments = _arguments(shape)

        def __call__(self) -> None:
            args = SearchMessagesInput.model_validate(self.arguments)
            result = search_messages.handle(ToolCall.of(app, search_messages.TOOL, args), args)
            meta = Meta(request_id="req_profile", now_utc="2026-01-01T00:00:00.000Z", duration_ms=1)
            envelope = SuccessEnvelope[Any](summary=result.summary, data=result.data, meta=meta)
            _to_result(envelope).model_dump_json(by_alias=True, exclude_none=True)
            self.arguments = {**self.arguments, "cursor": result.data.next_cursor}

    def cpu_ms(page: Any, rounds: int = 100) -> float:
        for _ in range(5):
            page()
        started = time.process_time()
        for _ in range(rounds):
            page()
        return (time.process_time() - started) / rounds * 1000

    zero_page = ZeroWorkPage(zero[0], int(zero[1]), zero[2], zero[3])
    zero_ms = cpu_ms(lambda: zero_page(walk=True))
    print(
        "\nin process, CPU per page of a walk (100 pages each, handler + envelope + result JSON, no profiler):"
    )
    print(f"  zero-work page      {zero_ms:6.2f} ms")
    for shape in shapes:
        ours_ms = cpu_ms(Walk(shape))
        print(f"  ours, {shape:13} {ours_ms:6.2f} ms  (own work {ours_ms - zero_ms:5.2f} ms)")

    stage_costs(zero_page)

    walk = Walk(shapes[0])
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for _ in range(50):
        walk()
    profiler.disable()
    app.close()
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats(order).print_stats("mail_imap_mcp|pydantic|json|email", 40)
        print(
            f"\nours, {shapes[0]}, under cProfile (50 pages of a walk; our functions, pydantic, json and email "
            f"by {order} time):"
        )
        print(out.getvalue())


def stage_costs(zero_page: ZeroWorkPage, pages: int = 50, rounds: int = 15) -> None:
    """Our CPU per page of 20 by stage, on FETCH answers of a walk read once (no IMAP, no SDK): the best of
    ``rounds`` passes over ``pages`` pages, so another process's load counts as little as it can."""
    from imapclient.response_parser import parse_fetch_response

    from mail_imap_mcp import mime
    from mail_imap_mcp.envelope.mcp import _to_result
    from mail_imap_mcp.envelope.model import Meta, SuccessEnvelope
    from mail_imap_mcp.imap import fetch
    from mail_imap_mcp.mail.ids import MessageRef
    from mail_imap_mcp.presentation import search_page

    client = zero_page.client
    uids = sorted(client.search(["UID", f"1:{zero_page.uidnext}"]), reverse=True)[: pages * PAGE]
    tag = client._imap._command("UID", "FETCH", ",".join(map(str, uids)), zero_page.items)
    typ, data = client._imap._command_complete("FETCH", tag)
    _, data = client._imap._untagged_response(typ, data, "FETCH")
    answers = parse_fetch_response(data, client.normalise_times, True)
    walk = [[answers[uid] for uid in uids[i : i + PAGE]] for i in range(0, len(uids), PAGE)]
    headed = [
        [(r, mime.parse_header_block(fetch.find_item(r, b"BODY[HEADER") or b"")) for r in p] for p in walk
    ]
    structured = [[(r, h, fetch.trusted_structure(r, h)[0]) for r, h in p] for p in headed]
    ref = MessageRef("default", "INBOX", 1, 1)

    def summaries(page: list[dict[bytes, Any]]) -> list[Any]:
        out = []
        for response in page:
            headers = mime.parse_header_block(fetch.find_item(response, b"BODY[HEADER") or b"")
            parts, _ = fetch.trusted_structure(response, headers)
            snippet = fetch._snippet(response, parts, 200, headers)
            out.append(fetch.summary_record(ref, response, parts, snippet, headers))
        return out

    records = [summaries(p) for p in walk]

    def envelope(page: list[Any]) -> None:
        found: dict[str, Any] = {
            "mailbox": "INBOX", "where": "INBOX", "total": 10_000, "returned_before": 0,
            "attempted": len(page), "messages": page, "next_cursor": "c", "issues": [], "warnings": [],
        }  # fmt: skip
        if hasattr(search_page, "compact_search_result"):  # built compact, as ours builds one mailbox's page
            compact = search_page.compact_search_result(search_page.PageFound(**found), by_date=False)
        else:  # older code (PYTHONPATH): the full page, then its compact form
            full = search_page.search_result(
                {}, account_id="default", mailboxes=["INBOX"], by_date=False, has_more=True, **found
            )
            compact = search_page.compact_page(full)
        meta = Meta(request_id="req_profile", now_utc="2026-01-01T00:00:00.000Z", duration_ms=1)
        _to_result(SuccessEnvelope[Any](summary=compact.summary, data=compact.data, meta=meta))

    stages: list[tuple[str, Callable[[Any], Any], list[Any]]] = [
        ("header block", lambda p: [mime.parse_header_block(fetch.find_item(r, b"BODY[HEADER") or b"") for r in p], walk),
        ("BODYSTRUCTURE and its check", lambda p: [fetch.trusted_structure(r, h) for r, h in p], headed),
        ("snippet", lambda p: [fetch._snippet(r, parts, 200, h) for r, h, parts in p], structured),
        ("summary fields", lambda p: [fetch.summary_record(ref, r, parts, "s", h) for r, h, parts in p], structured),
        ("all of the above", summaries, walk),
        ("page models and result JSON", envelope, records),
    ]  # fmt: skip
    print(
        f"\nin process, our CPU per page of {PAGE} by stage (best of {rounds} passes over {len(walk)} pages of a walk):"
    )
    for name, stage, inputs in stages:
        best = min(_cpu_per_item(stage, inputs) for _ in range(rounds))
        print(f"  {name:30} {best:6.3f} ms")


def _cpu_per_item(work: Callable[[Any], Any], items: list[Any]) -> float:
    started = time.process_time()
    for item in items:
        work(item)
    return (time.process_time() - started) / len(items) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve-zero"]:
        host, port, user, ca_file = argv[1:5]
        serve_zero(host, int(port), user, ca_file)
        return 0
    if argv[:1] == ["serve-zero-timed"]:  # the zero-work server timed by layer (--layers)
        import profile_layers

        profile_layers.instrument_zero(ZeroWorkPage)
        host, port, user, ca_file = argv[1:5]
        serve_zero(host, int(port), user, ca_file)
        return 0
    if argv[:1] == ["serve-replay"]:
        host, port, user, ca_file, capture = argv[1:6]
        serve_replay(host, int(port), user, ca_file, capture)
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=10_000, help="mailbox size (default 10,000)")
    parser.add_argument("--calls", type=int, default=60, help="counted calls per server (default 60)")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up calls per server (default 5)")
    parser.add_argument("--profile", action="store_true", help="also profile our page walk in process")
    parser.add_argument(
        "--no-replay",
        action="store_true",
        help="leave out the zero-work walk answering with our envelope (the bound on our own work)",
    )
    parser.add_argument(
        "--layers",
        type=int,
        default=0,
        metavar="CALLS",
        help="also walk CALLS pages seen first on ours and the zero-work server, each timed by layer from "
        "inside (scripts/profile_layers.py), and print where each one's CPU per call goes",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--shapes",
        default="default,full",
        help="our pages to measure, comma-separated: default (no fields argument), compact, full",
    )
    args = parser.parse_args(argv)
    anyio.run(
        compare,
        args.messages,
        args.calls,
        args.warmup,
        args.profile,
        args.shapes.split(","),
        not args.no_replay,
        args.json,
        args.layers,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
