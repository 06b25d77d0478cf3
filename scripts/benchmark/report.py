"""Tables, targets, charts and the generated section of docs/benchmarks.md."""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import profile_page

from benchmark.common import (
    MARKER_BEGIN,
    MARKER_END,
    PAGE_DEPTH,
    PEER_PACKAGE,
    PEER_VERSION,
    OpResult,
    Series,
)
from benchmark.scenarios import Settings, SizeResult


def fmt_ms(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    if value >= 10_000:
        return f"{value / 1000:.1f} s"
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def fmt_ratio(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}x"


def fmt_series(series: Series | None) -> str:
    if series is None or not series.samples_ms:
        return "-"
    return f"{fmt_ms(series.median)} ({fmt_ms(series.p95)})"


def peer_cell(op: OpResult) -> str:
    return "refused (see below)" if op.peer_error else fmt_series(op.peer)


def results_table(sizes: list[SizeResult]) -> str:
    lines = [
        "| operation | messages | floor median (p95) | ours median (p95) | ours / floor "
        "| ours minus SDK client work (/ floor) | peer median (p95) | peer / ours | IMAP cmds ours (floor) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = list(dict.fromkeys(key for size in sizes for key in size.ops))
    for key in keys:
        for size in sizes:
            op = size.ops.get(key)
            if op is None:
                continue
            commands = sorted(set(op.ours_commands))
            ours_cmds = "/".join(map(str, commands)) or "-"
            floor_cmds = "-" if op.floor_commands is None else str(op.floor_commands)
            lines.append(
                f"| {op.label} | {size.size:,} | {fmt_series(op.floor)} | {fmt_series(op.ours)} "
                f"| {fmt_ratio(op.ratio_floor())} | {fmt_ms(op.ours_no_client.median)} "
                f"({fmt_ratio(op.ratio_floor_no_client())}) | {peer_cell(op)} | {fmt_ratio(op.ratio_peer(), 0)} "
                f"| {ours_cmds} ({floor_cmds}) |"
            )
    errors = [
        f"- peer, {op.label}, {size.size:,} messages: `{op.peer_error}`"
        for size in sizes
        for op in size.ops.values()
        if op.peer_error
    ]
    if errors:
        lines += ["", *errors]
    return "\n".join(lines)


def breakdown_table(sizes: list[SizeResult]) -> str:
    """Where the time of a call goes, from medians (the server's own duration has 1 ms resolution)."""
    lines = [
        "| operation | messages | end to end | SDK client: parse + outputSchema validation "
        "| server handler (meta.duration_ms) | rest: MCP framing, envelope JSON, stdio | floor: same IMAP work "
        "| at DEBUG log level |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in ("list_accounts", "search_page1", "search_page1_nosnippet", "get_small"):
        for size in sizes:
            op = size.ops.get(key)
            if op is None or not op.ours.samples_ms:
                continue
            client = op.ours.median - op.ours_no_client.median
            handler = op.ours_server_ms.median if op.ours_server_ms.samples_ms else math.nan
            rest = op.ours_no_client.median - handler
            lines.append(
                f"| {op.label} | {size.size:,} | {fmt_ms(op.ours.median)} | {fmt_ms(client)} | {fmt_ms(handler)} "
                f"| {fmt_ms(rest)} | {fmt_ms(op.floor.median if op.floor else None)} "
                f"| {fmt_ms(op.ours_debug.median if op.ours_debug.samples_ms else None)} |"
            )
    return "\n".join(lines)


def extras_table(sizes: list[SizeResult], startup: list[float]) -> str:
    lines = [
        "| messages | seed | first EXAMINE | walk to page 50 | server startup | server peak RSS "
        "| RSS growth, get_message 25 MB | peer startup |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        large = size.ops.get("get_large")
        growth = "-" if large is None or large.rss_growth_mb is None else f"{large.rss_growth_mb:.1f} MB"
        peer = "-" if size.peer_startup_s is None else f"{size.peer_startup_s * 1000:.0f} ms"
        lines.append(
            f"| {size.size:,} | {size.seed_s:.1f} s | {size.first_select_s:.2f} s | {size.page50_walk_ms:.0f} ms "
            f"| {size.server_startup_s * 1000:.0f} ms | {size.server_peak_rss_mb:.1f} MB | {growth} | {peer} |"
        )
    if startup:
        lines.append("")
        lines.append(
            f"Startup (spawn until `tools/list` is answered, {len(startup)} fresh processes, default log level): "
            f"median {statistics.median(startup) * 1000:.0f} ms, max {max(startup) * 1000:.0f} ms."
        )
    return "\n".join(lines)


@dataclass
class Target:
    name: str
    goal: str
    figure: str
    met: bool | None
    out_of_reach: bool = False  # missed even by a server that did no work of its own


def zero_work_bound(size: SizeResult, op: OpResult) -> tuple[float, float] | None:
    """Fastest possible call (end to end, and without the SDK client's work) for a server doing no work
    of its own: the floor's IMAP commands + an empty MCP round trip + the client's work on this answer."""
    empty = size.ops.get("list_accounts")
    if empty is None or op.floor is None or not empty.ours.samples_ms:
        return None
    client = op.ours.median - op.ours_no_client.median
    server_side = op.floor.median + empty.ours_no_client.median
    return server_side + client, server_side


def evaluate_targets(sizes: list[SizeResult], startup: list[float]) -> list[Target]:
    small, large = sizes[0], sizes[-1]
    targets: list[Target] = []

    def op(size: SizeResult, key: str) -> OpResult | None:
        return size.ops.get(key)

    page1_small = op(small, "search_page1")
    if page1_small is not None and page1_small.floor is not None:
        ratio = page1_small.ratio_floor()
        floor_ms = page1_small.floor.median
        bound = zero_work_bound(small, page1_small)
        figure = (
            f"{fmt_ratio(ratio)} end to end ({fmt_ms(page1_small.ours.median)} vs {fmt_ms(floor_ms)}); "
            f"{fmt_ratio(page1_small.ratio_floor_no_client())} without the SDK client's own work "
            f"({fmt_ms(page1_small.ours_no_client.median)})"
        )
        if bound is not None:
            figure += (
                f". Bound for a server with zero own work: {fmt_ratio(bound[0] / floor_ms)} end to end, "
                f"{fmt_ratio(bound[1] / floor_ms)} without the client's work"
            )
        targets.append(
            Target(
                f"warm search page 1 (limit 20) vs floor, {small.size:,} messages",
                "<= 1.5x",
                figure,
                None if ratio is None else ratio <= 1.5,
                out_of_reach=bound is not None and bound[0] / floor_ms > 1.5,
            )
        )
    if len(sizes) > 1:
        for key, name in (
            ("search_page1", "search page 1"),
            ("search_page50", f"search page {PAGE_DEPTH} via cursors"),
        ):
            a, b = op(small, key), op(large, key)
            if a is None or b is None:
                continue
            ratio = b.ours.median / a.ours.median
            targets.append(
                Target(
                    f"{name}, {large.size:,} vs {small.size:,} messages",
                    "<= 2x",
                    f"{fmt_ratio(ratio)} ({fmt_ms(b.ours.median)} vs {fmt_ms(a.ours.median)})",
                    ratio <= 2,
                )
            )
        deep, first = op(large, "search_page50"), op(small, "search_page1")
        if deep is not None and first is not None:
            ratio = deep.ours.median / first.ours.median
            targets.append(
                Target(
                    f"(stricter reading) page {PAGE_DEPTH} at {large.size:,} vs page 1 at {small.size:,}",
                    "<= 2x",
                    f"{fmt_ratio(ratio)} ({fmt_ms(deep.ours.median)} vs {fmt_ms(first.ours.median)})",
                    ratio <= 2,
                )
            )
    for size in sizes:
        page = op(size, "search_page1")
        if page is None:
            continue
        ratio = page.ratio_peer()
        figure = f"{fmt_ratio(ratio, 0)} ({fmt_ms(page.peer.median if page.peer else None)} vs {fmt_ms(page.ours.median)})"
        bound = zero_work_bound(size, page)
        best = None if page.peer is None or bound is None else page.peer.median / bound[0]
        if ratio is not None and best is not None:
            figure += f"; at most {fmt_ratio(best, 0)} for a server with zero own work"
        if ratio is None:
            reason = page.peer_error or size.peer_error or "no peer samples"
            figure = f"not measurable, the peer gave no page: `{reason}`"
        targets.append(
            Target(
                f"newest-20 page vs {PEER_PACKAGE}, {size.size:,} messages",
                ">= 100x faster",
                figure,
                None if ratio is None else ratio >= 100,
                out_of_reach=best is not None and best < 100,
            )
        )
    for size in sizes:
        big, tiny = op(size, "get_large"), op(size, "get_small")
        if big is None or tiny is None:
            continue
        ratio = big.ours.median / tiny.ours.median
        targets.append(
            Target(
                f"get_message 25 MB attachment vs small message, {size.size:,} messages",
                "<= 2x",
                f"{fmt_ratio(ratio)} ({fmt_ms(big.ours.median)} vs {fmt_ms(tiny.ours.median)})",
                ratio <= 2,
            )
        )
        growth = big.rss_growth_mb
        targets.append(
            Target(
                f"server peak RSS growth during get_message 25 MB, {size.size:,} messages",
                "< 30 MB",
                "-" if growth is None else f"{growth:.1f} MB ({big.note})",
                None if growth is None else growth < 30,
            )
        )

    def worst_call(keys: Sequence[str]) -> tuple[int, int, str] | None:
        """Most round trips of a warm call among ``keys`` (with that call's commands), from the DEBUG log."""
        seen = [
            (max(o.ours_round_trips), max(o.ours_commands), f"{o.key}@{s.size}")
            for s in sizes
            for k in keys
            if (o := s.ops.get(k)) is not None and o.ours_round_trips
        ]
        return max(seen) if seen else None

    # Counted in round trips since every call revalidates its selection (NOOP + STATUS, pipelined):
    # a warm page is 4 commands in 2 round trips (docs/benchmarks.md, "IMAP plan of each call").
    for keys, name in (
        (("search_page1", "search_page50"), "IMAP round trips per warm search page (mailbox unchanged)"),
        (("get_small", "get_html", "get_large"), "IMAP round trips per warm get_message"),
    ):
        worst = worst_call(keys)
        targets.append(
            Target(
                name,
                "<= 2",
                "-" if worst is None else f"max {worst[0]} ({worst[1]} commands, {worst[2]})",
                None if worst is None else worst[0] <= 2,
            )
        )
    if startup:
        median = statistics.median(startup)
        targets.append(
            Target(
                "startup: spawn until tools/list answered",
                "<= 1.0 s",
                f"median {median * 1000:.0f} ms, max {max(startup) * 1000:.0f} ms ({len(startup)} runs)",
                median <= 1.0,
            )
        )
    return targets


#: Issue 12: a warm newest-20 page takes at most this many times the zero-work server's time.
OWN_WORK_GOAL = 1.25


def own_work_targets(own_work: profile_page.OwnWork) -> list[Target]:
    """The page seen before and the page seen first against the zero-work server (scripts/profile_page)."""
    targets = []
    for name, what in ((profile_page.SEEN_BEFORE, "seen before"), (profile_page.FIRST_VIEW, "seen first")):
        ratio = own_work.ratio(name)
        series, zero = own_work.subjects[name], own_work.reference(name)
        figure = (
            f"{fmt_ratio(ratio)} ({fmt_ms(series.median)} vs {fmt_ms(zero.median)}; server CPU "
            f"{series.cpu_per_call - zero.cpu_per_call:+.2f} ms per call over it)"
        )
        # Missed even by the zero-work walk answering with our envelope: out of any server's reach.
        bound = (
            own_work.ratio(profile_page.REPLAY_WALK)
            if profile_page.REPLAY_WALK in own_work.subjects
            else None
        )
        if name == profile_page.FIRST_VIEW and bound is not None:
            figure += f"; a server with zero own work answering this envelope: {fmt_ratio(bound)}"
        targets.append(
            Target(
                f"own work: warm newest-20 page {what} vs a zero-work server on the same SDK, "
                f"{own_work.messages:,} messages"
                + (" (a walk of never-seen pages)" if name == profile_page.FIRST_VIEW else ""),
                f"<= {OWN_WORK_GOAL}x",
                figure,
                ratio <= OWN_WORK_GOAL,
                out_of_reach=name == profile_page.FIRST_VIEW and bound is not None and bound > OWN_WORK_GOAL,
            )
        )
    return targets


def own_work_section(own_work: profile_page.OwnWork) -> str:
    return "\n".join(
        [
            "### Own work per page",
            "",
            "A warm newest-20 page through the SDK's client against a *zero-work server*: an MCP server on the "
            "same SDK, over stdio, that sends the IMAP commands ours sends for that page on a warm "
            "connection, has imapclient parse the answer, and replies with one short line "
            "(`scripts/profile_page`). *Seen before*: ours as users run it, paging the same 20 again, their "
            "summaries kept (`summary_cache_entries`), so it fetches only FLAGS and RFC822.SIZE. *Seen "
            "first*: ours with `summary_cache_entries = 0` walking the mailbox with its cursors, every page "
            "one it never saw, fetching and parsing everything, against the zero-work server walking the same "
            "pages with the same FETCH, and against that walk answering with our envelope of each page "
            f"(captured) under our outputSchema. {own_work.calls} alternating calls each, server CPU from "
            f"`/proc/<pid>/stat`, load {own_work.load[0]:.2f} at the end.",
            "",
            own_work.table(),
            "",
            own_work.bound(),
        ]
    )


def targets_table(targets: list[Target]) -> str:
    lines = ["| target | goal | measured | met |", "|---|---|---|---|"]
    for target in targets:
        met = {True: "yes", False: "**no**", None: "n/a"}[target.met]
        if target.met is False and target.out_of_reach:
            met = "**no**, out of reach (see bound)"
        lines.append(f"| {target.name} | {target.goal} | {target.figure} | {met} |")
    return "\n".join(lines)


@contextlib.contextmanager
def chart(
    path: Path, title: str, machine: dict[str, Any], panels: int, size: tuple[float, float], sharey: bool
) -> Iterator[Any]:
    """A row of ``panels`` matplotlib axes (headless) to draw on, saved as ``path`` (PNG) with the
    machine in the title: every chart of the bench."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, panels, figsize=size, sharey=sharey, squeeze=False)
    try:
        yield axes[0]
        fig.suptitle(
            f"{title}, {machine['date_utc']}, {machine['nproc']} CPU {machine['cpu_model']}", fontsize=9
        )
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def draw_chart(sizes: list[SizeResult], path: Path, machine: dict[str, Any]) -> None:
    keys = list(dict.fromkeys(key for size in sizes for key in size.ops))
    title = f"mail-imap-mcp benchmark (Python {machine['python']})"
    with chart(path, title, machine, len(sizes), (7 * len(sizes), 0.55 * len(keys) + 2), True) as axes:
        _draw_sizes(sizes, axes, keys)


def _draw_sizes(sizes: list[SizeResult], axes: Any, keys: list[str]) -> None:
    colors = {"floor": "#9e9e9e", "ours": "#1f77b4", "peer": "#d62728"}
    names = {
        "floor": "floor: same IMAP commands, raw imapclient",
        "ours": "mail-imap-mcp over stdio",
        "peer": f"{PEER_PACKAGE} {PEER_VERSION}",
    }
    for ax, size in zip(axes, sizes, strict=True):
        for row, key in enumerate(keys):
            op = size.ops.get(key)
            if op is None:
                continue
            if op.peer_error:
                ax.text(
                    0.01,
                    row + 0.27,
                    f"{PEER_PACKAGE}: refused, see the table",
                    transform=ax.get_yaxis_transform(),
                    va="center",
                    fontsize=7,
                    color=colors["peer"],
                )
            for offset, (name, series) in zip(
                (-0.27, 0.0, 0.27), (("floor", op.floor), ("ours", op.ours), ("peer", op.peer)), strict=True
            ):
                if series is None or not series.samples_ms:
                    continue
                ax.barh(
                    row + offset,
                    series.median,
                    height=0.25,
                    color=colors[name],
                    xerr=[[0], [max(0.0, series.p95 - series.median)]],
                    error_kw={"elinewidth": 0.8, "capsize": 2},
                    label=names[name],
                )
        ax.set_xscale("log")
        ax.set_xlabel("ms per call: median, whisker to p95 (log scale)")
        ax.set_title(f"{size.size:,} messages")
        ax.grid(axis="x", which="both", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        shown = [names[n] for n in ("floor", "ours", "peer") if names[n] in unique]
        ax.legend([unique[n] for n in shown], shown, fontsize=8, loc="lower right")
    first = axes[0]
    first.set_yticks(range(len(keys)))
    first.set_yticklabels([next((s.ops[k].label for s in sizes if k in s.ops), k) for k in keys], fontsize=8)
    first.invert_yaxis()  # shared y axis: once for all panels


def markdown_section(
    sizes: list[SizeResult],
    startup: list[float],
    targets: list[Target],
    machine: dict[str, Any],
    settings: Settings,
) -> str:
    command = "scripts/bench --quick" if settings.quick else "scripts/bench"
    peer_errors = sorted({s.peer_error for s in sizes if s.peer_error})
    peer_line = (
        f"Peer: `{PEER_PACKAGE}` {PEER_VERSION} in `.bench/peer-venv`, implicit TLS to the same Dovecot, "
        "certificate verified through `SSL_CERT_FILE` (it has no CA-file setting), no mutations allowed, "
        f"one warm-up call then up to {settings.peer_max_calls} calls or {settings.peer_budget_s:.0f} s per "
        "operation (at least 3)."
    )
    if peer_errors:
        peer_line += " Peer problems: " + "; ".join(f"`{e}`" for e in peer_errors)
    return "\n".join(
        [
            MARKER_BEGIN,
            f"Latest run: **{machine['date_utc']}**, `{command}`, commit `{machine['git_commit']}`.",
            f"Machine: {machine['nproc']} CPUs ({machine['cpu_model']}), {machine['mem_total_gib']} GiB RAM, "
            f"Linux {machine['kernel']}, Python {machine['python']}, Dovecot {machine['dovecot']}; "
            f"load average {machine['load_average_at_start'][0]} at the start, "
            f"{machine['load_average_at_end'][0]} at the end.",
            f"Ours and floor: {settings.warmup} warm-up calls, then {settings.iterations} alternating calls each. "
            + peer_line,
            "",
            "![benchmark chart](benchmarks.png)",
            "",
            "### Results",
            "",
            results_table(sizes),
            "",
            extras_table(sizes, startup),
            "",
            "### Where the time of a call goes",
            "",
            breakdown_table(sizes),
            "",
            "### Targets",
            "",
            targets_table(targets),
            MARKER_END,
        ]
    )


def update_markdown(path: Path, section: str) -> None:
    if path.exists():
        replaced = replace_between(path.read_text(), MARKER_BEGIN, MARKER_END, section)
        if replaced is not None:
            path.write_text(replaced)
            return
    path.write_text(f"# Benchmarks\n\nGenerated by `scripts/bench`.\n\n{section}\n")


def write_section(markdown: Path, begin: str, end: str, section: str) -> None:
    """``section`` (which carries its markers ``begin`` and ``end``) into ``markdown``: in place of the
    part between those markers, else at its end."""
    text = markdown.read_text() if markdown.exists() else ""
    replaced = replace_between(text, begin, end, section)
    markdown.write_text(replaced if replaced is not None else text.rstrip() + "\n\n" + section + "\n")


def replace_between(text: str, begin: str, end: str, section: str) -> str | None:
    """``text`` with the part from ``begin`` to ``end`` (markers included) replaced by ``section``
    (which carries its own markers); None when ``text`` lacks either marker."""
    if begin not in text or end not in text:
        return None
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + section + tail
