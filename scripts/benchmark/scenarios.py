"""What is measured: the seeded mailbox, the raw-IMAP floor (``Floor``), and each operation timed
against our server, the floor and the peer at one mailbox size (``bench_size``)."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imapclient import IMAPClient
from imapclient.imapclient import format_criteria_date
from tests.support.mail import mailgen
from tests.support.servers.dovecot import Dovecot

from benchmark.common import (
    DEFAULT_BODY_MAX_CHARS,
    FILTERS,
    LARGE_ATTACHMENT_BYTES,
    MAX_TEXT_PART_BYTES,
    MIN_FILTERED_WINDOW,
    PAGE_DEPTH,
    PAGE_LIMIT,
    PEER_PACKAGE,
    PEER_SUBJECT,
    RAW_WINDOW,
    WINDOW_GROWTH,
    BenchError,
    OpResult,
    Series,
    _round,
    say,
)
from benchmark.servers import (
    PeakRss,
    Peer,
    StdioServer,
    our_server,
    peer_server,
    proc_status_kb,
    write_config,
)
from mail_imap_mcp.imap.fetch import MESSAGE_ITEMS, summary_items
from mail_imap_mcp.imap.parsing import search_all_runs


@dataclass
class Specials:
    """UIDs of the known messages seeded in the middle of the mailbox."""

    small: int
    non_ascii: int
    html: int
    large: int


SPECIAL_SMALL_ID = "<bench-small@mailgen.example>"


def special_messages() -> list[bytes]:
    return [
        mailgen.plain_message(
            "Lunch on Thursday?",
            "Hi,\n\nare we still on for lunch on Thursday at noon?\n\nCheers,\nAlice\n",
            message_id=SPECIAL_SMALL_ID,
        ),
        mailgen.non_ascii_message(),
        mailgen.html_only_message(),
        mailgen.large_attachment_message(LARGE_ATTACHMENT_BYTES),
    ]


def seed_flags(index: int) -> str:
    """Every third message unread, every 29th flagged."""
    flags = [] if index % 3 == 0 else ["\\Seen"]
    if index % 29 == 0:
        flags.append("\\Flagged")
    return " ".join(flags)


def seed_mailbox(dovecot: Dovecot, user: str, size: int) -> Specials:
    """Seed ``size`` messages into the user's INBOX; the four specials sit at ``size // 2``."""
    specials = special_messages()
    middle = size // 2

    def messages() -> Iterator[bytes]:
        stream = mailgen.corpus(size - len(specials))
        for index, message in enumerate(stream):
            if index == middle:
                yield from specials
            yield message

    dovecot.seed(user, "INBOX", messages(), flags=seed_flags)
    first = middle + 1  # UIDs follow seeding order, starting at 1
    return Specials(small=first, non_ascii=first + 1, html=first + 2, large=first + 3)


def _quote(value: str) -> bytes:
    raw = value.encode("ascii")
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def floor_criteria(filters: dict[str, Any]) -> list[bytes]:
    """SEARCH keys our server sends for ``filters`` (see mail_imap_mcp.query.search_keys)."""
    keys: list[bytes] = []
    if "from" in filters:
        keys += [b"FROM", _quote(filters["from"])]
    if "subject" in filters:
        keys += [b"SUBJECT", _quote(filters["subject"])]
    if "since" in filters:
        keys += [b"SINCE", format_criteria_date(dt.date.fromisoformat(filters["since"]))]
    if filters.get("unread_only"):
        keys.append(b"UNSEEN")
    return keys


def _first_text_section(structure: Any, prefix: str = "") -> str | None:
    """Section number of the first text/plain (else text/html) part of an imapclient BODYSTRUCTURE."""
    html: str | None = None
    stack: list[tuple[Any, str]] = [(structure, prefix)]
    while stack:
        node, path = stack.pop(0)
        if node.is_multipart:
            stack[:0] = [(child, f"{path}.{i}" if path else str(i)) for i, child in enumerate(node[0], 1)]
            continue
        kind = (bytes(node[0]) + b"/" + bytes(node[1])).lower()
        section = path or "1"
        if kind == b"text/plain":
            return section
        if kind == b"text/html" and html is None:
            html = section
    return html


class Floor:
    """The same IMAP work as our server, with raw imapclient on one warm, selected connection."""

    def __init__(self, dovecot: Dovecot, user: str) -> None:
        self.client: IMAPClient = dovecot.connect(user, within=120)
        started = time.perf_counter()
        state = self.client.select_folder("INBOX", readonly=True)
        self.first_select_s = time.perf_counter() - started
        self.uidvalidity = int(state[b"UIDVALIDITY"])
        self.uidnext = int(state[b"UIDNEXT"])
        self.exists = int(state[b"EXISTS"])

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.logout()

    @property
    def tagnum(self) -> int:
        return int(self.client._imap.tagnum)

    def _search(self, args: list[bytes]) -> list[int]:
        data = self.client._raw_command_untagged(b"SEARCH", args)
        return [int(tok) for line in data if line for tok in line.split() if tok.isdigit()]

    def _counted(self, args: list[bytes]) -> list[int]:
        """``UID SEARCH RETURN (COUNT ALL)``: the total and every match in one scan, as the server's
        first filtered page of a mailbox larger than its first window reads them."""
        data = self.client._raw_command_untagged(
            b"SEARCH", [b"RETURN", b"(COUNT ALL)", *args], response_name="ESEARCH"
        )
        return [uid for first, last in search_all_runs(data) for uid in range(first, last + 1)]

    def _window(self, wanted: int) -> int:
        density = self.exists / max(1, self.uidnext - 1) if self.uidnext > 1 else 1.0
        return math.ceil(wanted / max(density, 0.01) * 1.25) + 8

    def search_page(
        self, criteria: list[bytes], limit: int = PAGE_LIMIT, hi: int | None = None, *, snippets: bool = True
    ) -> list[int]:
        """``UID SEARCH`` over growing UID windows, then one ``UID FETCH``; a filtered first page of a
        mailbox larger than the first window: one ``RETURN (COUNT ALL)`` instead (total and matches)."""
        wanted = limit + 1
        window = self._window(wanted)
        if criteria:
            window = max(window, MIN_FILTERED_WINDOW)
        matches: list[int] = []
        counted = bool(criteria) and hi is None and window < self.uidnext - 1
        if counted:
            matches = sorted(self._counted(criteria), reverse=True)
        while not counted:
            top = hi if hi is not None else max(self.uidnext - 1, 1)
            if hi is not None and hi < 1:
                break
            lo = max(1, top - window + 1)
            found = self._search([b"UID", f"{lo}:{hi if hi is not None else '*'}".encode(), *criteria])
            matches.extend(sorted((u for u in found if u >= lo and (hi is None or u <= hi)), reverse=True))
            if len(matches) >= wanted or lo <= 1:
                break
            hi = lo - 1
            window *= WINDOW_GROWTH
        page = matches[:limit]
        if page:
            self.client.fetch(page, summary_items(200 if snippets else 0))
        return page

    def get_message(self, uid: int) -> None:
        """Headers and BODYSTRUCTURE, then the first text part, capped like the server's budget."""
        response = self.client.fetch([uid], list(MESSAGE_ITEMS))[uid]
        section = _first_text_section(response[b"BODYSTRUCTURE"])
        budget = min(MAX_TEXT_PART_BYTES, max(64 * 1024, DEFAULT_BODY_MAX_CHARS * 16))
        if section:
            self.client.fetch([uid], [f"BODY.PEEK[{section}]<0.{budget}>"])

    def raw_window(self, uid: int) -> None:
        self.client.fetch([uid], ["RFC822.SIZE", f"BODY.PEEK[]<0.{RAW_WINDOW}>"])

    def list_mailboxes(self) -> None:
        self.client.list_folders()


@dataclass
class Settings:
    sizes: list[int]
    iterations: int
    warmup: int
    startup_runs: int
    count_calls: int
    peer_budget_s: float
    peer_max_calls: int
    out_dir: Path
    work_dir: Path
    quick: bool
    network_rtts: list[int] = field(default_factory=list)
    #: The folders axis (benchmark/folders.py): folder counts and RTTs; ``folders_only``: nothing else.
    folders: list[int] = field(default_factory=list)
    folder_rtts: list[int] = field(default_factory=list)
    folders_only: bool = False
    #: Only the startup time (spawn until tools/list answered), printed; nothing written.
    startup_only: bool = False
    #: The local index section alone (``--index-only``): messages and folders.
    index_only: bool = False
    index_messages: int = 100_000
    index_folders: int = 40
    index_ours_only: bool = False
    #: Our index's engine in the index section (``--index-engine``).
    index_engine: str = "sqlite"
    index_xapian_messages: int | None = None
    #: Instead of the index section: indexing with ``index_attachments`` on against off.
    index_attachments: bool = False
    index_meaning: bool = False
    index_rounds: int = 2
    #: Only the team mode (benchmark/team.py): the shared state's cost and pages/s through HAProxy.
    index_flags_only: bool = False
    #: Only the index in PostgreSQL beside SQLite (benchmark/index_engines.py).
    index_engines_only: bool = False
    #: The engines ``--index-engines-only`` compares (sqlite first).
    index_engines: tuple[str, ...] = ("sqlite", "postgresql")
    flags_messages: int = 5_000
    team_only: bool = False
    team_clients: int = 8
    team_seconds: float = 10.0
    #: Only acting on a whole search (benchmark/bulk.py), with this many matches.
    bulk_only: bool = False
    bulk_messages: int = 10_000


@dataclass
class SizeResult:
    size: int
    ops: dict[str, OpResult] = field(default_factory=dict)
    seed_s: float = 0.0
    first_select_s: float = 0.0
    page50_walk_ms: float = 0.0
    server_startup_s: float = math.nan
    server_peak_rss_mb: float = 0.0
    server_rss_after_mb: float = math.nan
    peer_startup_s: float | None = None
    peer_error: str | None = None
    special_sizes: dict[str, int] = field(default_factory=dict)
    specials: Specials | None = None
    uidvalidity: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.size,
            "seed_s": round(self.seed_s, 2),
            "first_select_s": round(self.first_select_s, 2),
            "page50_cursor_walk_ms": round(self.page50_walk_ms, 1),
            "server_startup_s": _round(self.server_startup_s, 3),
            "server_peak_rss_mb": _round(self.server_peak_rss_mb, 1),
            "server_rss_at_end_mb": _round(self.server_rss_after_mb, 1),
            "peer_startup_s": _round(self.peer_startup_s, 3),
            "peer_error": self.peer_error,
            "message_sizes_bytes": self.special_sizes,
            "operations": {key: op.to_json() for key, op in self.ops.items()},
        }


@dataclass
class OpSpec:
    """One operation: the tool call, and the floor's equivalent IMAP work (None: no IMAP involved)."""

    key: str
    label: str
    tool: str
    arguments: dict[str, Any]
    floor_call: Callable[[], object] | None
    watch_rss: bool = False


async def measure(op: OpResult, spec: OpSpec, server: StdioServer, floor: Floor, settings: Settings) -> None:
    """Warm up both, then alternate one floor call and one server call so drift hits both alike."""
    for _ in range(settings.warmup):
        await server.call(spec.tool, spec.arguments)
        if spec.floor_call is not None:
            spec.floor_call()
    if spec.floor_call is not None:
        op.floor = Series()
    for _ in range(settings.iterations):
        if spec.floor_call is not None and op.floor is not None:
            before = floor.tagnum
            started = time.perf_counter()
            spec.floor_call()
            op.floor.samples_ms.append((time.perf_counter() - started) * 1000)
            op.floor_commands = floor.tagnum - before
        sample = await server.call(spec.tool, spec.arguments)
        op.ours.samples_ms.append(sample.ms)
        op.ours_no_client.samples_ms.append(sample.ms - sample.client_ms)
        duration = sample.content.get("meta", {}).get("duration_ms")
        if isinstance(duration, int | float):
            op.ours_server_ms.samples_ms.append(float(duration))


async def count_commands(op: OpResult, spec: OpSpec, server: StdioServer, settings: Settings) -> None:
    """IMAP commands per warm call, from the ``imap_commands=N`` lines of a DEBUG-level server."""
    await server.call(spec.tool, spec.arguments)  # warm-up
    for _ in range(settings.count_calls):
        sample = await server.call(spec.tool, spec.arguments)
        op.ours_commands.append(sample.imap_commands or 0)
        op.ours_round_trips.append(server.last_round_trips or 0)
        op.ours_debug.samples_ms.append(sample.ms)


async def bench_size(dovecot: Dovecot, size: int, peer: Peer, settings: Settings) -> SizeResult:
    result = SizeResult(size)
    user = f"bench{size}"
    say(f"{size} messages: generating and seeding INBOX of {user}")
    started = time.perf_counter()
    specials = seed_mailbox(dovecot, user, size)
    result.seed_s = time.perf_counter() - started
    floor = Floor(dovecot, user)
    result.specials, result.uidvalidity = specials, floor.uidvalidity
    result.first_select_s = floor.first_select_s
    say(f"{size} messages: seeded in {result.seed_s:.1f} s, first EXAMINE {floor.first_select_s:.2f} s")
    if floor.exists != size:
        raise BenchError(f"expected {size} messages in INBOX, the server has {floor.exists}")
    probe = floor.client.search(["HEADER", "Message-ID", SPECIAL_SMALL_ID])
    if list(probe) != [specials.small]:
        raise BenchError(f"small message expected at UID {specials.small}, found {list(probe)}")
    sizes = floor.client.fetch([specials.small, specials.html, specials.large], ["RFC822.SIZE"])
    result.special_sizes = {
        name: int(sizes[uid][b"RFC822.SIZE"])
        for name, uid in (("small", specials.small), ("html", specials.html), ("large", specials.large))
    }

    config = write_config(settings.work_dir / f"config-{size}.toml", dovecot, user)
    # Timings come from a server at the default log level (what users run): at DEBUG, imapclient also
    # traces every protocol line to stderr. The IMAP command counts come from a second process with
    # MAIL_IMAP_MCP_LOG_LEVEL=DEBUG, driven through the same calls (its times are reported as well).
    timing = our_server(
        config, settings.work_dir / f"server-{size}.stderr.log", dovecot.password, debug=False
    )
    counting = our_server(config, settings.work_dir / f"server-{size}-debug.stderr.log", dovecot.password)
    current = timing
    try:
        async with timing.running():
            result.server_startup_s = timing.startup_s
            say(f"{size} messages: server up in {timing.startup_s * 1000:.0f} ms (pid {timing.pid})")
            specs = await operations(result, timing, floor, specials)
            for spec in specs:
                say(f"{size} messages: {spec.label}")
                op = result.ops[spec.key] = OpResult(spec.key, spec.label)
                if not spec.watch_rss:
                    await measure(op, spec, timing, floor, settings)
                    continue
                with PeakRss(timing.pid) as rss:
                    await measure(op, spec, timing, floor, settings)
                op.rss_growth_mb = rss.growth_mb
                op.note = (
                    f"server RSS {rss.before_kb / 1024:.1f} MB before, peak {rss.peak_kb / 1024:.1f} MB "
                    f"during {settings.warmup + settings.iterations} calls"
                )
                result.server_peak_rss_mb = max(
                    result.server_peak_rss_mb, rss.lifetime_hwm_kb / 1024, rss.peak_kb / 1024
                )
            status = proc_status_kb(timing.pid)
            result.server_rss_after_mb = status.get("VmRSS", 0) / 1024
            result.server_peak_rss_mb = max(result.server_peak_rss_mb, status.get("VmHWM", 0) / 1024)
        current = counting
        say(f"{size} messages: counting IMAP commands per call (DEBUG log level)")
        async with counting.running():
            for spec in specs:
                await count_commands(result.ops[spec.key], spec, counting, settings)
    except BenchError:
        say(f"server stderr (tail):\n{current.log_tail()}")
        raise
    finally:
        floor.close()
    await bench_peer(result, dovecot, user, peer, settings)
    return result


def uid_of(summary: dict[str, Any]) -> int:
    """The UID of a message summary: its own field where the result is full, else from its message id."""
    uid = summary.get("uid")
    return int(uid) if uid is not None else int(str(summary["message_id"]).rsplit(":", 1)[1])


async def operations(
    result: SizeResult, server: StdioServer, floor: Floor, specials: Specials
) -> list[OpSpec]:
    """The measured operations; walks the cursors to page 50 and checks the floor finds the same UIDs."""
    search = "imap_search_messages"

    def message_id(uid: int) -> str:
        return f"imap:default:INBOX:{floor.uidvalidity}:{uid}"

    async def check_same_page(arguments: dict[str, Any], floor_page: list[int]) -> None:
        data = (await server.call(search, arguments)).content["data"]
        if [uid_of(m) for m in data["messages"]] != floor_page:
            raise BenchError(f"the floor's mirror found other UIDs than the server for {arguments}")

    page1 = {"limit": PAGE_LIMIT}
    specs = [
        OpSpec(
            "list_accounts", "MCP round trip without IMAP (list_accounts)", "imap_list_accounts", {}, None
        ),
        OpSpec("list_mailboxes", "list mailboxes", "imap_list_mailboxes", {}, floor.list_mailboxes),
        OpSpec("search_page1", "search page 1 (limit 20)", search, page1, lambda: floor.search_page([])),
        OpSpec(
            "search_page1_nosnippet",
            "search page 1, snippet_chars 0",
            search,
            {**page1, "snippet_chars": 0},
            lambda: floor.search_page([], snippets=False),
        ),
    ]
    await check_same_page(page1, floor.search_page([]))

    # Page 50: follow next_cursor 49 times from page 1; the 50th page's call is then re-issued.
    started = time.perf_counter()
    data = (await server.call(search, page1)).content["data"]
    previous = data
    cursor = ""
    for _ in range(PAGE_DEPTH - 1):
        previous = data
        cursor = data["next_cursor"]
        data = (await server.call(search, {**page1, "cursor": cursor})).content["data"]
    result.page50_walk_ms = (time.perf_counter() - started) * 1000
    anchor_hi = uid_of(previous["messages"][-1]) - 1
    if [uid_of(m) for m in data["messages"]] != floor.search_page([], hi=anchor_hi):
        raise BenchError("the floor's mirror of page 50 found other UIDs than the server")
    specs.append(
        OpSpec(
            "search_page50",
            f"search page {PAGE_DEPTH} via cursors",
            search,
            {**page1, "cursor": cursor},
            lambda: floor.search_page([], hi=anchor_hi),
        )
    )

    for name, filters in FILTERS.items():
        arguments = {**page1, **filters}
        criteria = floor_criteria(filters)
        await check_same_page(arguments, floor.search_page(criteria))
        specs.append(
            OpSpec(
                f"search_{name}",
                "search " + ", ".join(f"{k}={v}" for k, v in filters.items()),
                search,
                arguments,
                lambda criteria=criteria: floor.search_page(criteria),  # type: ignore[misc]
            )
        )

    for key, label, uid in (
        ("get_small", "get_message small", specials.small),
        ("get_html", "get_message HTML-only", specials.html),
        ("get_large", "get_message 25 MB attachment", specials.large),
    ):
        specs.append(
            OpSpec(
                key,
                label,
                "imap_get_message",
                {"message_id": message_id(uid)},
                lambda uid=uid: floor.get_message(uid),  # type: ignore[misc]
                watch_rss=True,
            )
        )
    specs.append(
        OpSpec(
            "raw_window",
            f"get_message_raw {RAW_WINDOW} bytes of the 25 MB message",
            "imap_get_message_raw",
            {"message_id": message_id(specials.large), "max_bytes": RAW_WINDOW},
            lambda: floor.raw_window(specials.large),
        )
    )
    return specs


PEER_OPS = (
    ("search_page1", {"account_name": "bench", "page": 1, "page_size": PAGE_LIMIT}),
    (
        "search_subject",
        {"account_name": "bench", "page": 1, "page_size": PAGE_LIMIT, "subject": PEER_SUBJECT},
    ),
)


def describe_error(exc: BaseException) -> str:
    """The innermost error of a (possibly nested) exception group, as ``Type: message``."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:800]


async def bench_peer(result: SizeResult, dovecot: Dovecot, user: str, peer: Peer, settings: Settings) -> None:
    if peer.binary is None:
        result.peer_error = peer.error
        return
    server = peer_server(peer, dovecot, user, settings.work_dir / f"peer-{result.size}.stderr.log")
    try:
        async with server.running():
            result.peer_startup_s = server.startup_s
            for key, arguments in PEER_OPS:
                op = result.ops[key]
                say(f"{result.size} messages: peer {PEER_PACKAGE} list_emails_metadata {arguments}")
                try:
                    await peer_op(op, server, arguments, settings)
                except BenchError as exc:  # a refused call: record it, go on with the next operation
                    op.peer_error = str(exc)[:800]
                    say(f"peer call failed: {op.peer_error}")
    except Exception as exc:
        result.peer_error = describe_error(exc)
        say(f"peer failed: {result.peer_error}\n{server.log_tail()}")


async def peer_op(op: OpResult, server: StdioServer, arguments: dict[str, Any], settings: Settings) -> None:
    """One warm-up call, then timed calls until the budget is spent (at least 3, at most peer_max_calls)."""
    warm = await server.call("list_emails_metadata", arguments)
    emails = warm.content.get("emails")
    if not isinstance(emails, list) or len(emails) != PAGE_LIMIT:
        raise BenchError(f"{server.name} returned an unexpected page: {str(warm.content)[:300]}")
    series = Series()
    deadline = time.perf_counter() + settings.peer_budget_s
    while len(series.samples_ms) < settings.peer_max_calls and (
        len(series.samples_ms) < 3 or time.perf_counter() < deadline
    ):
        series.samples_ms.append((await server.call("list_emails_metadata", arguments)).ms)
    op.peer = series


async def measure_startup(dovecot: Dovecot, user: str, settings: Settings) -> list[float]:
    """Spawn-to-tools/list times of fresh server processes at the default log level."""
    config = write_config(settings.work_dir / "config-startup.toml", dovecot, user)
    times = []
    for run in range(settings.startup_runs):
        server = our_server(
            config, settings.work_dir / f"startup-{run}.stderr.log", dovecot.password, debug=False
        )
        async with server.running():
            times.append(server.startup_s)
    return times
