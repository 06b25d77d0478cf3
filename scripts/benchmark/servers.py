"""The servers and peers the benchmark talks to: our server over stdio (``StdioServer``, with its
per-call clock and IMAP command counts), the peer ``mcp-email-server`` in its own virtualenv, and
what ``/proc`` says about their memory."""

from __future__ import annotations

import contextlib
import json
import math
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client import stdio as stdio_module
from mcp.client.stdio import stdio_client
from tests.support.accounts import account_settings, config_toml
from tests.support.mail import mailgen
from tests.support.run.machine import child_pid
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import ImapServer

from benchmark.common import (
    BENCH_DIR,
    PASSWORD_ENV,
    PEER_PACKAGE,
    PEER_VENV,
    PEER_VERSION,
    ROOT,
    SERVER_BIN,
    BenchError,
    say,
)


def proc_status_kb(pid: int) -> dict[str, int]:
    """``VmRSS``/``VmHWM`` (and friends) of ``pid`` in KiB."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key.startswith("Vm") and rest.strip().endswith("kB"):
            values[key] = int(rest.split()[0])
    return values


def find_child(marker: str) -> int:
    """PID of our child process whose command line contains ``marker``."""
    pid = child_pid(marker)
    if pid is None:
        raise BenchError(f"cannot find the server process ({marker})")
    return pid


class PeakRss:
    """Peak RSS of a process while a block runs: ``VmHWM`` after a reset, plus 1 ms sampling."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before_kb = 0
        self.peak_kb = 0
        self.hwm_reset = False
        self.lifetime_hwm_kb = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakRss:
        status = proc_status_kb(self.pid)
        self.lifetime_hwm_kb = status.get("VmHWM", 0)
        try:
            # Writing 5 resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0).
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
            self.hwm_reset = True
        except OSError:
            self.hwm_reset = False
        self.before_kb = proc_status_kb(self.pid).get("VmRSS", 0)
        self.peak_kb = self.before_kb
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                self.peak_kb = max(self.peak_kb, proc_status_kb(self.pid).get("VmRSS", 0))
            time.sleep(0.001)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(OSError):
            status = proc_status_kb(self.pid)
            if self.hwm_reset:
                self.peak_kb = max(self.peak_kb, status.get("VmHWM", 0))

    @property
    def growth_mb(self) -> float:
        return (self.peak_kb - self.before_kb) / 1024


_COMMANDS_RE = re.compile(rb"imap_commands=(\d+)")
_ROUND_TRIPS_RE = re.compile(rb"round_trips=(\d+)")


@dataclass
class CallSample:
    ms: float
    content: dict[str, Any]
    imap_commands: int | None
    client_ms: float  # of ``ms``: the SDK client parsing the response and validating it against outputSchema


class ClientClock:
    """Seconds the MCP SDK client spends on responses: JSON-RPC parsing and outputSchema validation.

    Both run inside the timed window of a call but are work of the client, not of the server; the
    report shows the server-side share (call time minus this) next to the end-to-end time.
    """

    spent = 0.0

    @classmethod
    def install(cls) -> None:
        original = stdio_module._parse_line
        if getattr(original, "bench_timed", False):
            return

        def timed(line: str) -> Any:
            started = time.perf_counter()
            try:
                return original(line)
            finally:
                cls.spent += time.perf_counter() - started

        timed.bench_timed = True  # type: ignore[attr-defined]
        stdio_module._parse_line = timed

    @classmethod
    def wrap_validation(cls, client: Client) -> None:
        session = client.session
        original = session.validate_tool_result

        async def timed(name: str, result: Any) -> None:
            started = time.perf_counter()
            try:
                await original(name, result)
            finally:
                cls.spent += time.perf_counter() - started

        session.validate_tool_result = timed  # type: ignore[method-assign]


class StdioServer:
    """An MCP server spawned over stdio through the SDK's ``Client``, with stderr kept in a file."""

    def __init__(self, name: str, params: StdioServerParameters, log_path: Path, marker: str) -> None:
        self.name = name
        self.params = params
        self.log_path = log_path
        self.marker = marker
        self.startup_s = math.nan
        self.pid = 0
        self._client: Client | None = None
        self._log: TextIO | None = None
        self._offset = 0
        self.last_round_trips: int | None = None
        #: The input schema of each tool, from the ``tools/list`` answer at start.
        self.input_schemas: dict[str, dict[str, Any]] = {}

    @contextlib.asynccontextmanager
    async def running(self, *, read_timeout_s: float = 600) -> AsyncIterator[StdioServer]:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "w") as log:
            self._log = log
            started = time.perf_counter()
            ClientClock.install()
            transport = stdio_client(self.params, errlog=log)
            async with Client(transport, read_timeout_seconds=read_timeout_s, cache=None) as client:
                listed = await client.list_tools()
                self.input_schemas = {tool.name: dict(tool.input_schema) for tool in listed.tools}
                ClientClock.wrap_validation(client)
                self.startup_s = time.perf_counter() - started
                self._client = client
                self.pid = find_child(self.marker)
                self._offset = self.log_path.stat().st_size
                try:
                    yield self
                finally:
                    self._client = None

    def log_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def _new_commands(self) -> int | None:
        """IMAP commands of the call just made (from the DEBUG log); its round trips go to ``last_round_trips``."""
        with open(self.log_path, "rb") as log:
            log.seek(self._offset)
            chunk = log.read()
        self._offset += len(chunk)
        counts = [int(m) for m in _COMMANDS_RE.findall(chunk)]
        trips = [int(m) for m in _ROUND_TRIPS_RE.findall(chunk)]
        self.last_round_trips = sum(trips) if trips else None
        return sum(counts) if counts else None

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallSample:
        assert self._client is not None
        client_before = ClientClock.spent
        started = time.perf_counter()
        result = await self._client.call_tool(tool, arguments)
        ms = (time.perf_counter() - started) * 1000
        client_ms = (ClientClock.spent - client_before) * 1000
        content = result.structured_content or {}
        if result.is_error or content.get("success") is False:
            text = " ".join(getattr(block, "text", "") for block in result.content)
            raise BenchError(f"{self.name} {tool}({arguments}) failed: {text[:600]}")
        return CallSample(ms, content, self._new_commands(), client_ms)


def our_server(config_path: Path, log_path: Path, password: str, *, debug: bool = True) -> StdioServer:
    """``mail-imap-mcp serve``; with ``debug`` it logs ``imap_commands=N`` after every call."""
    env = {PASSWORD_ENV: password}
    if debug:
        env["MAIL_IMAP_MCP_LOG_LEVEL"] = "DEBUG"
    params = StdioServerParameters(
        command=str(SERVER_BIN), args=["serve", "--config", str(config_path)], env=env
    )
    return StdioServer("mail-imap-mcp", params, log_path, str(config_path))


#: Every timed call of ours outside "Own work per page" is a page (or message) seen for the first time:
#: no summaries kept, so ours fetches and parses what the floor and the peers fetch (like for like).
FIRST_VIEW_SERVER = {"summary_cache_entries": 0}


def server_table(server: dict[str, Any]) -> str:
    """The ``[server]`` table of a config file."""
    return "\n[server]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in server.items())


def write_config(path: Path, dovecot: Dovecot, user: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = account_settings(
        dovecot, user, password_env=PASSWORD_ENV, connect_timeout_s=None, command_timeout_s=120
    )
    path.write_text(
        "# Written by scripts/bench for one run.\n"
        + config_toml({"default": settings})
        + server_table(FIRST_VIEW_SERVER)
    )
    return path


@dataclass
class Peer:
    """The peer server's installation, or why it is unavailable."""

    binary: Path | None
    error: str | None = None


def prepare_peer(skip: bool) -> Peer:
    """Install mcp-email-server into its own virtualenv under .bench/ (once; reused afterwards)."""
    if skip:
        return Peer(None, "skipped (--no-peer)")
    binary = PEER_VENV / "bin" / PEER_PACKAGE
    stamp = PEER_VENV / ".installed"
    wanted = f"{PEER_PACKAGE}=={PEER_VERSION}"
    if binary.exists() and stamp.exists() and stamp.read_text() == wanted:
        return Peer(binary)
    say(f"installing {wanted} into {PEER_VENV.relative_to(ROOT)} (its own virtualenv)")
    try:
        if not (PEER_VENV / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True, capture_output=True)
        subprocess.run(
            [
                str(PEER_VENV / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                wanted,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()
        errors = [line for line in detail if "ERROR" in line] or detail[-3:]
        return Peer(None, f"pip install {wanted} failed: {' | '.join(errors)[:500]}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Peer(None, f"installing {wanted} failed: {exc}")
    if not binary.exists():
        return Peer(None, f"{wanted} installed no {PEER_PACKAGE} executable")
    stamp.write_text(wanted)
    return Peer(binary)


def peer_server(peer: Peer, dovecot: Dovecot, user: str, log_path: Path) -> StdioServer:
    assert peer.binary is not None
    home = BENCH_DIR / "peer-home" / user
    home.mkdir(parents=True, exist_ok=True)
    params = StdioServerParameters(
        command=str(peer.binary),
        args=["stdio"],
        env={
            # Its own HOME and a config path that does not exist: nothing of the user's is read or written.
            "HOME": str(home),
            "MCP_EMAIL_SERVER_CONFIG_PATH": str(home / "config.toml"),
            "MCP_EMAIL_SERVER_ACCOUNT_NAME": "bench",
            "MCP_EMAIL_SERVER_EMAIL_ADDRESS": mailgen.RECIPIENT[1],
            "MCP_EMAIL_SERVER_USER_NAME": user,
            "MCP_EMAIL_SERVER_PASSWORD": dovecot.password,
            "MCP_EMAIL_SERVER_IMAP_HOST": dovecot.host,
            "MCP_EMAIL_SERVER_IMAP_PORT": str(dovecot.tls_port),
            "MCP_EMAIL_SERVER_IMAP_SSL": "true",
            "MCP_EMAIL_SERVER_IMAP_START_SSL": "false",
            "MCP_EMAIL_SERVER_IMAP_VERIFY_SSL": "true",
            # It has no CA-file setting, but its default SSLContext honours OpenSSL's SSL_CERT_FILE.
            "SSL_CERT_FILE": str(dovecot.ca_file),
            # Read-only: no mutation class allowed.
            "MCP_EMAIL_SERVER_ALLOWED_MUTATIONS": "",
            "MCP_EMAIL_SERVER_CREDENTIAL_STORAGE": "plaintext",
        },
    )
    return StdioServer(f"{PEER_PACKAGE} {PEER_VERSION}", params, log_path, str(peer.binary))


def indexed_and_plain(
    imap: ImapServer, user: str, work_dir: Path, name: str, server: dict[str, Any]
) -> StdioServer:
    """``mail-imap-mcp serve`` of two accounts of ``user``: ``indexed`` (``index = true``, in
    ``work_dir/index``) and ``plain``, with the ``[server]`` settings ``server``."""
    plain = account_settings(imap, user, password_env=PASSWORD_ENV, command_timeout_s=120)
    config = work_dir / f"{name}.toml"
    config.write_text(
        config_toml({"indexed": {**plain, "index": True}, "plain": plain})
        + server_table({"index_dir": str(work_dir / "index"), **server})
    )
    return our_server(config, work_dir / f"{name}.log", imap.password, debug=False)


async def until_indexed(server: StdioServer) -> None:
    """Wait until the ``indexed`` account's index is ready."""
    while True:
        accounts = (await server.call("imap_list_accounts", {})).content["data"]["accounts"]
        if next(a["index"] for a in accounts if a["account_id"] == "indexed") == "ready":
            return
        await anyio.sleep(0.2)
