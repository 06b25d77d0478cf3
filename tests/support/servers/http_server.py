"""`mail-imap-mcp serve --transport http` as a user runs it: a real process on 127.0.0.1 (port 0: the
server picks a free one and logs its URL), and the SDK's streamable HTTP client with a bearer token."""

from __future__ import annotations

import email
import email.policy
import functools
import itertools
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from tests.support.accounts import config_toml, server_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail import mailgen
from tests.support.patience import NotYet, eventually, patient

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")
#: The variable the test servers read their bearer token from (``token_env``).
TOKEN_ENV = "MIM_TEST_HTTP_TOKEN"
_LISTENING = re.compile(r"serving MCP at (http://127\.0\.0\.1:(\d+)/mcp)")
_numbers = itertools.count()


def http_config(tmp_path: Path, account: dict[str, Any], extra_http: str = "") -> Path:
    """A config file with ``account`` as ``default``, writes (and permanent delete) allowed, and an
    ``[http]`` section reading the token from ``TOKEN_ENV`` plus ``extra_http`` lines."""
    path = tmp_path / "config.toml"
    path.write_text(
        config_toml({"default": account})
        + server_toml(write_enabled=True, allow_permanent_delete=True)
        + f'[http]\ntoken_env = "{TOKEN_ENV}"\n'
        + extra_http
    )
    return path


def message_with_csv(subject: str) -> bytes:
    """A text message with a small CSV attachment (``report.csv``: ``March,42``)."""
    msg = email.message_from_bytes(
        mailgen.plain_message(subject, "see the report"), policy=email.policy.default
    )
    assert isinstance(msg, EmailMessage)
    msg.add_attachment("month,total\nMarch,42\n", subtype="csv", filename="report.csv")
    return msg.as_bytes()


def new_token() -> str:
    return secrets.token_urlsafe(32)


@dataclass
class HttpServer:
    proc: subprocess.Popen[bytes]
    url: str
    port: int
    token: str | None
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=patient(10))


def start_http_server(
    config: Path,
    *args: str,
    token: str | None = None,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    within: float = 30,
) -> HttpServer:
    """Start the server for ``config`` (``--port 0`` unless ``args`` say otherwise; ``argv`` replaces
    the whole command) and wait until it listens; ``token`` is handed over in ``TOKEN_ENV`` (the
    config's ``[http] token_env``)."""
    log_path = config.parent / f"http-server-{next(_numbers)}.log"
    environ = {**os.environ, **(env or {})}
    if token is not None:
        environ[TOKEN_ENV] = token
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv or [SERVER, "serve", "--config", str(config), "--transport", "http", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=environ,
        )

    def listening() -> re.Match[str] | None:
        text = log_path.read_text(errors="replace")
        found = _LISTENING.search(text)
        if not found and proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}:\n{text}")
        return found

    try:
        # the socket listens from then on: connections queue until uvicorn accepts them
        found = eventually(listening, within=within)
    except NotYet:
        proc.kill()
        raise AssertionError(
            f"server did not listen within {patient(within):g} s:\n{log_path.read_text()}"
        ) from None
    return HttpServer(proc, found.group(1), int(found.group(2)), token, log_path)


def auth_headers(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


#: The timeouts of the SDK's own HTTP client (``create_mcp_http_client``): 30 s, 300 s to read a stream.
_MCP_TIMEOUTS = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)


@functools.cache
def _trust() -> ssl.SSLContext:
    """The trust store every client of the process shares: the SDK's factory makes each client load it
    again (26 ms of CPU), for servers that speak plain HTTP on loopback."""
    return ssl.create_default_context()


@asynccontextmanager
async def http_client(
    url: str,
    token: str | None,
    *,
    headers: dict[str, str] | None = None,
    sessions: set[str] | None = None,
    **options: Any,
) -> AsyncIterator[EnvelopeClient]:
    """An SDK ``Client`` over streamable HTTP sending ``token``, wrapped to check every envelope;
    ``sessions`` collects the ``Mcp-Session-Id`` values the server answered with."""
    headers = {**auth_headers(token), **(headers or {})}

    async def note_session(response: httpx2.Response) -> None:
        if sessions is not None and "mcp-session-id" in response.headers:
            sessions.add(response.headers["mcp-session-id"])

    async with httpx2.AsyncClient(headers=headers, timeout=_MCP_TIMEOUTS, verify=_trust()) as http:
        http.event_hooks = {"response": [note_session]}
        async with Client(streamable_http_client(url, http_client=http), **options) as client:
            yield EnvelopeClient(client)
