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
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import mailgen  # noqa: E402
from tests.support.accounts import account_settings, config_toml  # noqa: E402
from tests.support.machine import child_pid, cpu_seconds  # noqa: E402

PASSWORD_ENV = "MAIL_IMAP_PROFILE_PASSWORD"
SERVER_BIN = ROOT / ".venv" / "bin" / "mail-imap-mcp"
PAGE = 20


# ------------------------------------------------------------------------------ zero-work server


class ZeroWorkPage:
    """A warm newest-20 page with the IMAP commands ours sends, parsed by imapclient, and nothing else."""

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

    def __call__(self) -> int:
        from imapclient.response_parser import parse_fetch_response

        client = self.client
        imap = client._imap
        noop = imap._command("NOOP")
        status = imap._command("STATUS", client._normalise_folder("INBOX"), b"(UIDVALIDITY UIDNEXT)")
        window = client._raw_command_untagged(b"SEARCH", [b"UID", f"{max(1, self.uidnext - 35)}:*".encode()])
        imap._command_complete("NOOP", noop)
        imap._command_complete("STATUS", status)
        imap.untagged_responses.clear()
        uids = sorted((int(t) for line in window if line for t in line.split()), reverse=True)[:PAGE]
        tag = imap._command("UID", "FETCH", ",".join(map(str, uids)), self.items)
        typ, data = imap._command_complete("FETCH", tag)
        _, data = imap._untagged_response(typ, data, "FETCH")
        return len(parse_fetch_response(data, client.normalise_times, True))


def serve_zero(host: str, port: int, user: str, ca_file: str) -> None:
    """The zero-work MCP server: same SDK, same IMAP commands for a warm newest-20 page, no own work."""
    from mcp.server.mcpserver import MCPServer

    fetch_page = ZeroWorkPage(host, port, user, ca_file)  # logs in with the password from the environment
    server = MCPServer("zero-work")

    @server.tool()
    def page() -> str:
        """Newest 20 messages' summary items; answers only their count."""
        return str(fetch_page())

    server.run("stdio")


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
    series: Series = field(default_factory=Series)

    async def call(self, *, record: bool) -> None:
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


@contextlib.asynccontextmanager
async def spawned(params: StdioServerParameters, log: Path, marker: str) -> AsyncIterator[tuple[Client, int]]:
    with open(log, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            await client.list_tools()
            yield client, _child(marker)


def _arguments(shape: str) -> dict[str, Any]:
    """Arguments of a newest-20 page; shape "default" sends no ``fields`` (also for servers without it)."""
    return {"limit": PAGE} if shape == "default" else {"limit": PAGE, "fields": shape}


#: Ours, paging the same newest 20 again and again: a page seen before (the summaries kept, only the
#: flags fetched) and, with the cache off, a page seen for the first time (everything fetched and parsed).
SEEN_BEFORE = "ours, page seen before"
FIRST_VIEW = "ours, page seen first"


@dataclass
class OwnWork:
    """One comparison: per subject (the zero-work server first), its series of alternating calls."""

    messages: int
    calls: int
    load: float
    subjects: dict[str, Series]

    @property
    def zero(self) -> Series:
        return self.subjects["zero-work server"]

    def ratio(self, name: str) -> float:
        """Median wall time of ``name`` over the zero-work server's."""
        return self.subjects[name].median / self.zero.median

    def table(self) -> str:
        rows = [
            "| server | wall median | / zero-work | server CPU per call | CPU over zero-work |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, series in self.subjects.items():
            rows.append(
                f"| {name} | {series.median:.2f} ms | {series.median / self.zero.median:.2f}x | "
                f"{series.cpu_per_call:.2f} ms | {series.cpu_per_call - self.zero.cpu_per_call:+.2f} ms |"
            )
        return "\n".join(rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "calls": self.calls,
            "load": round(self.load, 2),
            "subjects": {
                name: {
                    "median_ms": round(s.median, 3),
                    "ratio": round(s.median / self.zero.median, 3),
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


async def measure_own_work(
    dovecot: Any, user: str, work_dir: Path, *, calls: int, warmup: int, shapes: Sequence[str] = ("default",)
) -> OwnWork:
    """Warm newest-20 pages of ours (seen before in each of ``shapes``, and seen first) against the
    zero-work server, on ``user``'s INBOX of ``dovecot``; calls alternate so drift hits all alike."""
    settings = account_settings(dovecot, user, password_env=PASSWORD_ENV)
    kept, first_view = write_configs(work_dir, settings)
    env = {PASSWORD_ENV: dovecot.password, "PATH": os.environ.get("PATH", "")}
    if "PYTHONPATH" in os.environ:  # e.g. PYTHONPATH=<other checkout>/src to measure that code
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]

    def ours(config: Path) -> StdioServerParameters:
        return StdioServerParameters(
            command=str(SERVER_BIN), args=["serve", "--config", str(config)], env=env
        )

    zero_args = [__file__, "serve-zero", dovecot.host, str(dovecot.tls_port), user, str(dovecot.ca_file)]
    zero = StdioServerParameters(command=sys.executable, args=zero_args, env=env)
    async with (
        spawned(zero, work_dir / "zero.log", "serve-zero") as (zero_client, zero_pid),
        spawned(ours(kept), work_dir / "ours.log", str(kept)) as (our_client, our_pid),
        spawned(ours(first_view), work_dir / "first.log", str(first_view)) as (first_client, first_pid),
    ):
        subjects = [Subject("zero-work server", "page", {}, zero_client, zero_pid)]
        for shape in shapes:
            name = SEEN_BEFORE if shape == "default" else f"{SEEN_BEFORE}, fields {shape}"
            subjects.append(Subject(name, "imap_search_messages", _arguments(shape), our_client, our_pid))
        subjects.append(
            Subject(FIRST_VIEW, "imap_search_messages", _arguments("default"), first_client, first_pid)
        )
        for _ in range(warmup):
            for subject in subjects:
                await subject.call(record=False)
        for _ in range(calls):
            for subject in subjects:
                await subject.call(record=True)
    return OwnWork(
        messages=dovecot_messages(dovecot, user),
        calls=calls,
        load=os.getloadavg()[0],
        subjects={subject.name: subject.series for subject in subjects},
    )


def dovecot_messages(dovecot: Any, user: str) -> int:
    with dovecot.connect(user) as client:
        return int(client.select_folder("INBOX", readonly=True)[b"EXISTS"])


async def compare(messages: int, calls: int, warmup: int, profile: bool, shapes: list[str]) -> None:
    from tests.support.dovecot import Dovecot

    with (
        Dovecot(user_patterns=("prof*",), default_user="prof") as dovecot,
        tempfile.TemporaryDirectory() as tmp,
    ):
        user = "prof"
        dovecot.seed(user, "INBOX", mailgen.corpus(messages), flags=lambda i: "" if i % 3 == 0 else "\\Seen")
        result = await measure_own_work(dovecot, user, Path(tmp), calls=calls, warmup=warmup, shapes=shapes)
        if profile:
            _, first_view = write_configs(
                Path(tmp), account_settings(dovecot, user, password_env=PASSWORD_ENV)
            )
            env = {PASSWORD_ENV: dovecot.password}
            zero = [dovecot.host, str(dovecot.tls_port), user, str(dovecot.ca_file)]
            profile_in_process(first_view, env, zero, shapes)
    print(
        f"\nwarm newest-{PAGE} page, {result.messages:,} messages, {calls} alternating calls each "
        f"(load {result.load:.2f})\n"
    )
    print(result.table())


def profile_in_process(config_path: Path, env: dict[str, str], zero: list[str], shapes: list[str]) -> None:
    """CPU per page in this process, ours against the zero-work page, then ours under cProfile."""
    from mail_imap_mcp.config import load_config
    from mail_imap_mcp.envelope.mcp import _to_result
    from mail_imap_mcp.envelope.model import Meta, SuccessEnvelope
    from mail_imap_mcp.tools import search_messages
    from mail_imap_mcp.tools.context import AppContext

    os.environ.update(env)
    app = AppContext.from_config(load_config(config_path))
    zero_page = ZeroWorkPage(zero[0], int(zero[1]), zero[2], zero[3])

    def our_page(shape: str) -> None:
        args = search_messages.SearchMessagesInput.model_validate(_arguments(shape))
        result = search_messages.handle(app, args)
        meta = Meta(request_id="req_profile", now_utc="2026-01-01T00:00:00.000Z", duration_ms=1)
        envelope = SuccessEnvelope[Any](summary=result.summary, data=result.data, meta=meta)
        _to_result(envelope).model_dump_json(by_alias=True, exclude_none=True)

    def cpu_ms(page: Any, rounds: int = 100) -> float:
        for _ in range(5):
            page()
        started = time.process_time()
        for _ in range(rounds):
            page()
        return (time.process_time() - started) / rounds * 1000

    zero_ms = cpu_ms(zero_page)
    print("\nin process, CPU per page (100 pages each, handler + envelope + result JSON, no profiler):")
    print(f"  zero-work page      {zero_ms:6.2f} ms")
    for shape in shapes:
        ours_ms = cpu_ms(lambda shape=shape: our_page(shape))
        print(f"  ours, {shape:13} {ours_ms:6.2f} ms  (own work {ours_ms - zero_ms:5.2f} ms)")

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for _ in range(50):
        our_page(shapes[0])
    profiler.disable()
    app.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats("mail_imap_mcp|pydantic|json", 40)
    print(
        f"\nours, {shapes[0]}, under cProfile (50 pages; our functions, pydantic and json by cumulative time):"
    )
    print(out.getvalue())


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve-zero"]:
        host, port, user, ca_file = argv[1:5]
        serve_zero(host, int(port), user, ca_file)
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=10_000, help="mailbox size (default 10,000)")
    parser.add_argument("--calls", type=int, default=60, help="counted calls per server (default 60)")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up calls per server (default 5)")
    parser.add_argument("--profile", action="store_true", help="also profile our page in process")
    parser.add_argument(
        "--shapes",
        default="default,full",
        help="our pages to measure, comma-separated: default (no fields argument), compact, full",
    )
    args = parser.parse_args(argv)
    anyio.run(compare, args.messages, args.calls, args.warmup, args.profile, args.shapes.split(","))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
