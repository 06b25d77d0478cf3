"""The raw-IMAP floor of a search call: the commands our server's plan sends, replayed without MCP.

:func:`capture_plan` runs one call of ``imap_search_messages`` in this process (our app, the handler,
the envelope and its JSON, as :func:`app_caller` builds them) and records every command line it sends,
grouped by round trip: a group is what is sent between two waits for the server, as
``BudgetedIMAP4.round_trips`` counts them on the socket (pipelined commands share one). :func:`replay`
then sends each group with a plain imaplib connection (login only, no imapclient, no MCP) and reads
every response line up to each command's tagged status, group after group: the same commands, the same
pipelining, the same round trips; what is left is the server's work, the link and reading the lines,
without any parsing. That is the floor the folders axis sets ours against.
"""

from __future__ import annotations

import contextlib
import imaplib
import re
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mail_imap_mcp.imap import budget

_LITERAL = re.compile(rb"\{(\d+)\}\r\n$")
_SELECTION = re.compile(rb"\S+ (?:EXAMINE|SELECT) ")
#: Seconds the replay waits for a line before it gives up (a plan out of step never hangs the bench).
REPLY_TIMEOUT_S = 60


def app_caller(config_path: Path) -> tuple[Any, Callable[[dict[str, Any]], dict[str, Any]]]:
    """Our app built in this process from ``config_path`` and a function calling
    ``imap_search_messages`` as the MCP layer does (handler, envelope, result JSON); it returns the
    call's data. Close the app afterwards."""
    from mail_imap_mcp.app import AppContext
    from mail_imap_mcp.config import load_config
    from mail_imap_mcp.envelope.mcp import _to_result
    from mail_imap_mcp.envelope.model import Meta, SuccessEnvelope
    from mail_imap_mcp.tool_calls import ToolCall
    from mail_imap_mcp.tools import search_messages
    from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput

    app = AppContext.from_config(load_config(config_path))
    meta = Meta(request_id="req_bench", now_utc="2026-01-01T00:00:00.000Z", duration_ms=1)

    def call(arguments: dict[str, Any]) -> dict[str, Any]:
        parsed = SearchMessagesInput.model_validate(arguments)
        result = search_messages.handle(ToolCall.of(app, search_messages.TOOL, parsed), parsed)
        envelope = SuccessEnvelope[Any](summary=result.summary, data=result.data, meta=meta)
        _to_result(envelope).model_dump_json(by_alias=True, exclude_none=True)
        data: dict[str, Any] = result.data.model_dump(mode="json")
        return data

    return app, call


@dataclass(frozen=True)
class Plan:
    """Command lines (tag first, CRLF-terminated), one list per round trip, and the EXAMINE that left
    the mailbox selected which the call starts on (its first commands may rely on it)."""

    round_trips: tuple[tuple[bytes, ...], ...]
    selection: bytes | None = None

    @property
    def commands(self) -> int:
        return sum(len(group) for group in self.round_trips)


@contextlib.contextmanager
def _recording() -> Iterator[list[tuple[int, bytes]]]:
    """Every ``send`` of our connections while inside, with the connection's wait count at that moment."""
    sent: list[tuple[int, bytes]] = []
    original = budget.BudgetedIMAP4.send

    def send(self: budget.BudgetedIMAP4, data: Any) -> None:
        sent.append((self.round_trips, bytes(data)))
        original(self, data)

    budget.BudgetedIMAP4.send = send  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        budget.BudgetedIMAP4.send = original  # type: ignore[method-assign]


def capture_plan(call: Callable[[dict[str, Any]], dict[str, Any]], arguments: dict[str, Any]) -> Plan:
    """The plan of one warm call of ``arguments`` (made after an unrecorded one, as the bench's timed
    calls are). Literals would need a continuation: a plan that sends one is refused."""
    with _recording() as before:
        call(arguments)
    with _recording() as sent:
        call(arguments)
    selections = [line for _, data in before for line in data.split(b"\r\n") if _SELECTION.match(line)]
    groups: dict[int, bytes] = {}
    for waits, data in sent:  # a command may go out in several writes
        groups[waits] = groups.get(waits, b"") + data
    plan = []
    for waits in sorted(groups):
        lines = groups[waits].split(b"\r\n")
        if lines[-1] or any(_LITERAL.search(line + b"\r\n") for line in lines):
            raise ValueError(f"the plan of {arguments} sends a literal; the replay cannot pipeline it")
        plan.append(tuple(line + b"\r\n" for line in lines[:-1]))
    return Plan(tuple(plan), selections[-1] + b"\r\n" if selections else None)


class FloorClient:
    """A plain imaplib connection (implicit TLS, logged in) that replays plans."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, user: str, password: str) -> None:
        self._imap = imaplib.IMAP4_SSL(host, port, ssl_context=context, timeout=REPLY_TIMEOUT_S)
        self._imap.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._imap.login(user, password)

    def replay(self, plan: Plan) -> float:
        """Send each round trip's commands at once, read every line up to each one's tagged status;
        the wall time in ms. A command the server refuses (NO, BAD) stops the floor: it is no floor."""
        if plan.selection is not None:  # untimed: the selection the call started on
            self._send(plan.selection)
        started = time.perf_counter()
        for group in plan.round_trips:
            self._send(b"".join(group))
        return (time.perf_counter() - started) * 1000

    def _send(self, lines: bytes) -> None:
        imap = self._imap
        imap.send(lines)
        pending = {line.split(b" ", 1)[0] for line in lines.split(b"\r\n") if line}
        while pending:
            line = imap.readline()
            if not line:
                raise imaplib.IMAP4.abort("EOF during the replay")
            literal = _LITERAL.search(line)
            if literal:
                imap.read(int(literal.group(1)))
                continue
            tag, _, rest = line.partition(b" ")
            if tag in pending:
                if not rest.startswith(b"OK"):
                    raise imaplib.IMAP4.error(f"the replayed plan was refused: {line[:200]!r}")
                pending.discard(tag)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._imap.logout()
