"""Where the server's CPU per call goes, by layer: our server and the zero-work one, timed from inside.

``scripts/profile_page --layers`` starts our server through this module (``serve-ours``) and the
zero-work one through ``profile_page.py serve-zero-timed``, which calls :func:`instrument_zero`. Both
wrap the functions of each layer with a timer of the calling thread's CPU (``time.thread_time``), then
run the server as usual, and walk never-seen pages (ours with ``summary_cache_entries = 0``). On
``SIGUSR1`` a server writes its timers and its threads' CPU (from ``/proc/self/task``) to the file named
by ``MAIL_IMAP_LAYERS_OUT``, before and after the counted calls. The layers are exclusive, so they add
up to the process's CPU per call: what a timer does not cover is a row of its own (the rest of the
handler, of the main thread, the other threads). The timers cost a few microseconds each (about 0.1 ms
per call with 20 messages).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

OUT_ENV = "MAIL_IMAP_LAYERS_OUT"
_cpu: defaultdict[str, float] = defaultdict(float)


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _cpu[name] += time.thread_time() - started

    return timed


def _timed_async(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return await fn(*args, **kwargs)
        finally:
            _cpu[name] += time.thread_time() - started

    return timed


def _wrap(owner: Any, attribute: str, name: str, *, is_async: bool = False) -> None:
    if hasattr(owner, attribute):  # a layer older code does not have is left out
        wrap = _timed_async if is_async else _timed
        setattr(owner, attribute, wrap(name, getattr(owner, attribute)))


def _threads() -> dict[str, float]:
    """CPU seconds of this process's threads: the main thread (the event loop) and the others summed."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {"main": 0.0, "other": 0.0}
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(FileNotFoundError):
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            out["main" if int(tid) == os.getpid() else "other"] += (int(fields[11]) + int(fields[12])) / ticks
    return out


def _dump(*_: Any) -> None:
    times = os.times()
    report = {"layers": dict(_cpu), "threads": _threads(), "process": times.user + times.system}
    Path(os.environ[OUT_ENV]).write_text(json.dumps(report))


def _instrument_ours() -> None:
    from mail_imap_mcp import mime
    from mail_imap_mcp.envelope import mcp
    from mail_imap_mcp.imap import connection, fetch, session
    from mail_imap_mcp.presentation import failures, search_page
    from mail_imap_mcp.services import search, search_summaries
    from mail_imap_mcp.tools import search_messages

    _wrap(mcp.EnvelopeTool, "run", "main: EnvelopeTool.run", is_async=True)
    _wrap(mcp, "_to_result", "main: result JSON")
    _wrap(failures, "run", "handler")
    _wrap(connection.AccountConnection, "run", "connection.run")
    _wrap(search, "ordered_page", "search_page")
    _wrap(search_summaries, "summaries_each", "fetch_summaries")
    _wrap(session.ImapSession, "_uid_fetch", "_uid_fetch")
    _wrap(session, "parse_fetch_response", "parse_fetch_response")
    _wrap(mime, "parse_header_block", "header block")
    _wrap(fetch, "trusted_structure", "BODYSTRUCTURE")
    _wrap(fetch, "_snippet", "snippet")
    _wrap(fetch, "summary_record", "summary fields")
    for builder in ("search_result", "compact_search_result"):
        _wrap(search, builder, "page models")  # where older code built them
        _wrap(search_page, builder, "page models")
    _wrap(search_messages, "compact_page", "page models")


def instrument_zero(page: type) -> None:
    """Time the zero-work server's tool (``page``: profile_page's ZeroWorkPage) and imapclient's parse."""
    import imapclient.response_parser

    signal.signal(signal.SIGUSR1, _dump)
    _wrap(imapclient.response_parser, "parse_fetch_response", "parse_fetch_response")
    _wrap(page, "__call__", "handler")


def main(argv: list[str]) -> None:
    """``serve-ours CONFIG``: our server, timed. (The zero-work one: ``profile_page.py serve-zero-timed``.)"""
    if argv[:1] != ["serve-ours"] or len(argv) != 2:
        raise SystemExit("usage: profile_layers.py serve-ours CONFIG")
    signal.signal(signal.SIGUSR1, _dump)
    _instrument_ours()
    from mail_imap_mcp.cli import main as cli

    cli(["serve", "--config", argv[1]])


# ------------------------------------------------------------------------------ reading the timers


def rows(name: str, per_call: dict[str, Any]) -> Iterator[tuple[str, float]]:
    """The exclusive layers of one server, ms per call, in the order of a call; they sum to its CPU."""
    layer = defaultdict(float, per_call["layers"])
    threads = per_call["threads"]
    if name == "zero":
        yield (
            "tool: IMAP commands (imaplib, imapclient) and their I/O",
            layer["handler"] - layer["parse_fetch_response"],
        )
        yield "tool: FETCH answers parsed (imapclient)", layer["parse_fetch_response"]
        handler = layer["handler"]
        main_own = 0.0
    else:
        parsing = sum(layer[n] for n in ("header block", "BODYSTRUCTURE", "snippet", "summary fields"))
        yield "revalidation + UID SEARCH (ordered_page)", layer["search_page"]
        yield "UID FETCH sent and read (our wire)", layer["_uid_fetch"] - layer["parse_fetch_response"]
        yield "FETCH answers parsed (the session's parse_fetch_response)", layer["parse_fetch_response"]
        yield "header block", layer["header block"]
        yield "BODYSTRUCTURE and its check", layer["BODYSTRUCTURE"]
        yield "snippet", layer["snippet"]
        yield "summary fields", layer["summary fields"]
        yield (
            "rest of summaries_each (loop, cache, refs)",
            layer["fetch_summaries"] - layer["_uid_fetch"] - parsing,
        )
        yield (
            "rest of connection.run (lock, retry, settle)",
            layer["connection.run"] - layer["search_page"] - layer["fetch_summaries"],
        )
        yield "page models (summary models, page data)", layer["page models"]
        yield (
            "rest of the handler (arguments, cursor, filters digest)",
            layer["handler"] - layer["connection.run"] - layer["page models"],
        )
        handler = layer["handler"]
        main_own = layer["main: EnvelopeTool.run"]
        yield "main thread: EnvelopeTool.run (validation, hop to the worker, envelope, result JSON)", main_own
    yield (
        "main thread: the rest (event loop, SDK: JSON-RPC, stdio, result serialised)",
        threads["main"] - main_own,
    )
    yield (
        "other threads (SDK's stdio reads and writes, thread pool)",
        per_call["process"] - threads["main"] - handler,
    )


def per_call(before: dict[str, Any], after: dict[str, Any], calls: int) -> dict[str, Any]:
    """What the counted calls added to the timers, in ms per call."""

    def diff(a: Any, b: Any) -> Any:
        if isinstance(b, dict):
            return {k: diff(a.get(k, 0.0), v) for k, v in b.items()}
        return (b - a) * 1000 / calls

    return {key: diff(before[key], after[key]) for key in ("layers", "threads", "process")}


def table(ours: dict[str, Any], zero: dict[str, Any]) -> str:
    lines = ["| layer | ms of CPU per call |", "|---|---:|"]
    for title, name, figures in (("ours, page seen first", "ours", ours), ("zero-work walk", "zero", zero)):
        lines.append(f"| **{title}** | **{figures['process']:.2f}** |")
        lines += [f"| {label} | {value:.2f} |" for label, value in rows(name, figures)]
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
