"""``scripts/bench``: options, the run (loopback sizes, own work, network mode) and its outputs."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import profile_page
from tests.support.run.machine import machine_info
from tests.support.servers.dovecot import Dovecot

import benchmark.folders as folders_axis
import benchmark.network as network_mode
import benchmark.team as team_mode
from benchmark.common import (
    BENCH_DIR,
    FILTERS,
    MARKER_END,
    PEER_PACKAGE,
    PEER_SUBJECT,
    PEER_VERSION,
    ROOT,
    SERVER_BIN,
    BenchError,
    say,
)
from benchmark.report import (
    breakdown_table,
    draw_chart,
    evaluate_targets,
    extras_table,
    markdown_section,
    own_work_section,
    own_work_targets,
    results_table,
    targets_table,
    update_markdown,
)
from benchmark.scenarios import Settings, SizeResult, bench_size, measure_startup
from benchmark.servers import prepare_peer


async def run_folders_only(settings: Settings) -> int:
    """``--folders-only``: the folders axis alone, written into its own section of benchmarks.md."""
    machine = machine_info()
    say(f"machine: {machine['nproc']} CPU {machine['cpu_model']}, load {machine['load_average_at_start'][0]}")
    peer = prepare_peer(settings.peer_budget_s <= 0)
    if peer.error:
        say(f"peer unavailable: {peer.error}")
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with Dovecot(user_patterns=("bench*",), default_user="bench", max_userip_connections=200) as dovecot:
        result = await folders_axis.run_folders(
            dovecot, settings, settings.folders, settings.folder_rtts, peer
        )
    machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    write_folders(settings, result, machine, time.perf_counter() - started)
    return 0


def write_folders(
    settings: Settings, result: folders_axis.FoldersResult, machine: dict[str, Any], elapsed: float
) -> None:
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "duration_s": round(elapsed, 1), "folders": result.to_json()}
    path = settings.out_dir / "benchmarks-folders.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    folders_axis.draw_folders_chart(result, settings.out_dir / folders_axis.CHART, machine)
    section = folders_axis.folders_section(result, machine)
    print(section)
    markdown = settings.out_dir / "benchmarks.md"
    if markdown.exists():
        folders_axis.update_folders_markdown(markdown, section, "\n## Targets\n")
    say(f"folders axis done in {elapsed:.0f} s; wrote {path.name}, {folders_axis.CHART} and its section")


async def run_startup_only(settings: Settings) -> int:
    """The startup time alone: ``startup_runs`` fresh processes, median and max printed."""
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    with Dovecot(user_patterns=("bench*",), default_user="bench") as dovecot:
        times = await measure_startup(dovecot, "bench", settings)
    median = statistics.median(times) * 1000
    print(
        f"startup (spawn until tools/list answered, {len(times)} runs): median {median:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms"
    )
    return 0


async def run_team_only(settings: Settings) -> int:
    """``--team-only``: a team deployment's costs, written into the Team mode section of benchmarks.md."""
    machine = machine_info()
    say(f"machine: {machine['nproc']} CPU {machine['cpu_model']}, load {machine['load_average_at_start'][0]}")
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    result = await team_mode.run_team(
        settings.work_dir,
        iterations=max(settings.iterations, 50),
        warmup=settings.warmup,
        clients=settings.team_clients,
        seconds=settings.team_seconds,
    )
    section = team_mode.team_section(result, machine)
    print(section)
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    team_mode.update_team_markdown(settings.out_dir / "benchmarks.md", section)
    return 0


async def run_flags_only(settings: Settings) -> int:
    """``--index-flags-only``: a flag query over every folder of Courier with the index on and off."""
    from benchmark.index_flags import flags_section, run_flags, update_flags_markdown

    machine = machine_info()
    result = await run_flags(BENCH_DIR / "index-flags-run", messages=settings.flags_messages, folders=10)
    section = flags_section(result, machine)
    print(section)
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    update_flags_markdown(settings.out_dir / "benchmarks.md", section)
    return 0


async def run_bulk_only(settings: Settings) -> int:
    """``--bulk-only``: a whole search acted on (dry run with the index, the move, a cancel)."""
    from benchmark.bulk import bulk_section, run_bulk, update_bulk_markdown

    result = await run_bulk(BENCH_DIR / "bulk-run", messages=settings.bulk_messages)
    section = bulk_section(result, machine_info())
    print(section)
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    update_bulk_markdown(settings.out_dir / "benchmarks.md", section)
    return 0


async def run(settings: Settings) -> int:
    if settings.bulk_only:
        return await run_bulk_only(settings)
    if settings.team_only:
        return await run_team_only(settings)
    if settings.folders_only:
        return await run_folders_only(settings)
    if settings.startup_only:
        return await run_startup_only(settings)
    if settings.index_flags_only:
        return await run_flags_only(settings)
    if settings.index_engines_only:
        from benchmark.index_engines import run_engines_bench

        run_engines_bench(
            settings.index_messages,
            settings.index_folders,
            settings.out_dir,
            BENCH_DIR / "index-engines-run",
            settings.index_engines,
        )
        return 0
    if settings.index_only and settings.index_meaning:
        from benchmark.index_meaning import run_meaning_bench

        run_meaning_bench(
            settings.index_messages,
            settings.index_folders,
            BENCH_DIR / "index-meaning-run",
            settings.index_engine,
            settings.index_rounds,
        )
        return 0
    if settings.index_only and settings.index_attachments:
        from benchmark.index_attachments import run_attachments_bench

        run_attachments_bench(
            settings.index_messages,
            settings.index_folders,
            settings.out_dir,
            BENCH_DIR / "index-attachments-run",
        )
        return 0
    if settings.index_only:
        from benchmark.index import run_index_bench

        await run_index_bench(
            settings.index_messages,
            settings.index_folders,
            settings.out_dir,
            BENCH_DIR / "index-run",
            ours_only=settings.index_ours_only,
            xapian_messages=settings.index_xapian_messages,
            engine=settings.index_engine,
        )
        return 0
    machine = machine_info()
    say(f"machine: {machine['nproc']} CPU {machine['cpu_model']}, Python {machine['python']}")
    load = machine["load_average_at_start"][0]
    if load > machine["nproc"] / 2:
        say(f"warning: load average {load} on {machine['nproc']} CPUs; other work will skew the timings")
    peer = prepare_peer(settings.peer_budget_s <= 0)
    if peer.error:
        say(f"peer unavailable: {peer.error}")
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    results: list[SizeResult] = []
    started = time.perf_counter()
    with Dovecot(user_patterns=("bench*",), default_user="bench", max_userip_connections=200) as dovecot:
        say("measuring startup")
        startup = await measure_startup(dovecot, "bench", settings)
        for size in settings.sizes:
            results.append(await bench_size(dovecot, size, peer, settings))
        say("own work per page: ours against the zero-work server on the same SDK")
        own_work = await profile_page.measure_own_work(
            dovecot,
            f"bench{results[0].size}",
            settings.work_dir / "own-work",
            calls=settings.iterations * 2,
            warmup=settings.warmup,
        )
        network = None
        if settings.network_rtts:
            first = results[0]
            assert first.specials is not None
            network = await network_mode.run_network(
                dovecot, f"bench{first.size}", first.size, first.specials, first.uidvalidity, peer, settings
            )
        folders = None
        if settings.folders:
            folders = await folders_axis.run_folders(
                dovecot, settings, settings.folders, settings.folder_rtts, peer
            )
    elapsed = time.perf_counter() - started
    machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    targets = evaluate_targets(results, startup) + own_work_targets(own_work)
    network_targets = network_mode.network_targets(network) if network is not None else []

    print()
    print(results_table(results))
    print()
    print(extras_table(results, startup))
    print()
    print(breakdown_table(results))
    print()
    print(own_work.table())
    print()
    print(targets_table(targets))
    print()
    if network is not None:
        print(network_mode.network_table(network))
        print()
        print(targets_table(network_targets))
        print()

    settings.out_dir.mkdir(parents=True, exist_ok=True)
    payload = {
        "machine": machine,
        "settings": {
            "sizes": settings.sizes,
            "iterations": settings.iterations,
            "warmup": settings.warmup,
            "startup_runs": settings.startup_runs,
            "peer": f"{PEER_PACKAGE}=={PEER_VERSION}",
            "peer_budget_s_per_op": settings.peer_budget_s,
            "peer_max_calls": settings.peer_max_calls,
            "quick": settings.quick,
            "filters": FILTERS,
            "peer_subject": PEER_SUBJECT,
        },
        "duration_s": round(elapsed, 1),
        "startup_s": [round(s, 4) for s in startup],
        "sizes": [r.to_json() for r in results],
        "targets": [target.__dict__ for target in targets],
        "own_work": own_work.to_json(),
        "network": network.to_json() if network is not None else None,
        "network_targets": [target.__dict__ for target in network_targets],
    }
    (settings.out_dir / "benchmarks.json").write_text(
        json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    )
    draw_chart(results, settings.out_dir / "benchmarks.png", machine)
    section = markdown_section(results, startup, targets, machine, settings)
    section = section.replace("### Targets", own_work_section(own_work) + "\n\n### Targets", 1)
    if network is not None:
        network_mode.draw_network_chart(network, settings.out_dir / "benchmarks-network.png", machine)
        section = section.replace(
            MARKER_END, "\n" + network_mode.network_section(network, network_targets) + "\n" + MARKER_END
        )
    update_markdown(settings.out_dir / "benchmarks.md", section)
    if folders is not None:
        write_folders(settings, folders, machine, elapsed)
    say(
        f"done in {elapsed:.0f} s; wrote benchmarks.json, benchmarks.png and benchmarks.md in {settings.out_dir}"
    )
    return 0


def parse_args(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="scripts/bench", description="Benchmark mail-imap-mcp against raw IMAP and mcp-email-server."
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 2k and 10k messages, fewer calls")
    parser.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], help="mailbox sizes, e.g. 10000,100000"
    )
    parser.add_argument("--iterations", type=int, help="timed calls per operation (default 30; quick 10)")
    parser.add_argument("--warmup", type=int, help="untimed warm-up calls per operation (default 3; quick 2)")
    parser.add_argument("--startup-runs", type=int, help="fresh processes for the startup time (default 7)")
    parser.add_argument(
        "--peer-budget",
        type=float,
        help="seconds per peer operation (default 45; quick 10; 0 skips the peer)",
    )
    parser.add_argument("--peer-max-calls", type=int, default=20, help="most timed peer calls per operation")
    parser.add_argument("--no-peer", action="store_true", help="do not install or run mcp-email-server")
    parser.add_argument("--out", type=Path, help="output directory (default docs/; quick: .bench/quick/)")
    parser.add_argument(
        "--rtts",
        type=lambda s: [int(x) for x in s.split(",") if x != ""],
        default=None,
        help="network mode: round-trip times in ms of the link emulation (default 0,20,50; '' skips it)",
    )
    parser.add_argument(
        "--folders",
        type=lambda s: [int(x) for x in s.split(",") if x != ""],
        default=None,
        help="folders axis: folder counts of the every-folder searches (default 10,40,150; '' skips it)",
    )
    parser.add_argument(
        "--folder-rtts",
        type=lambda s: [int(x) for x in s.split(",") if x != ""],
        default=None,
        help="folders axis: round-trip times in ms (default 0,20,50; 150 folders also at 80)",
    )
    parser.add_argument("--folders-only", action="store_true", help="run the folders axis alone")
    parser.add_argument(
        "--startup-only", action="store_true", help="measure the startup time alone, print it"
    )
    parser.add_argument(
        "--index-only",
        action="store_true",
        help="the local index section alone: ours, notmuch, Dovecot UID SEARCH and fts-xapian",
    )
    parser.add_argument("--index-messages", type=int, default=100_000, help="index section: messages")
    parser.add_argument(
        "--index-xapian-messages",
        type=int,
        help="index section: messages for fts-xapian (default: all; 0: none)",
    )
    parser.add_argument(
        "--index-ours-only",
        action="store_true",
        help="index section: measure ours again, keep the anchors of the last full run (same size)",
    )
    parser.add_argument("--index-folders", type=int, default=40, help="index section: folders")
    parser.add_argument(
        "--index-engine",
        choices=("sqlite", "sqlite+tantivy"),
        default="sqlite",
        help="index section: our index's engine (sqlite+tantivy: its own JSON file and section)",
    )
    parser.add_argument(
        "--index-attachments",
        action="store_true",
        help="with --index-only: indexing with index_attachments on against off instead (documents attached "
        "to about 17%% of the messages), its own section",
    )
    parser.add_argument(
        "--index-meaning",
        action="store_true",
        help="with --index-only: indexing with index_meaning (vectors for search by meaning) off and on in "
        "turn (--index-rounds), the build's wall and CPU time and the load, printed",
    )
    parser.add_argument("--index-rounds", type=int, default=2, help="--index-meaning: builds of each")
    parser.add_argument(
        "--index-engines-only",
        action="store_true",
        help="the index in PostgreSQL and in SQLite ranked by Tantivy beside SQLite on the same messages "
        "(--index-messages, --index-folders, --index-engines)",
    )
    parser.add_argument(
        "--index-engines",
        default="sqlite,postgresql",
        help="--index-engines-only: the engines, comma-separated, sqlite first (sqlite, sqlite+tantivy, "
        "postgresql)",
    )
    parser.add_argument(
        "--index-flags-only",
        action="store_true",
        help="a flag query over every folder of Courier (no CONDSTORE) with the local index on and off",
    )
    parser.add_argument("--flags-messages", type=int, default=5_000, help="--index-flags-only: messages")
    parser.add_argument(
        "--team-only",
        action="store_true",
        help="team mode alone: the shared state's cost per call, pages/s through HAProxy with 1-3 instances",
    )
    parser.add_argument("--team-clients", type=int, default=8, help="team mode: concurrent clients")
    parser.add_argument(
        "--bulk-only",
        action="store_true",
        help="acting on a whole search: the dry run's count with the index, the move to Trash, a cancel",
    )
    parser.add_argument("--bulk-messages", type=int, default=10_000, help="--bulk-only: matching messages")
    parser.add_argument(
        "--team-seconds", type=float, default=10.0, help="team mode: seconds per instance count"
    )
    args = parser.parse_args(argv)
    quick = bool(args.quick)
    peer_budget = args.peer_budget if args.peer_budget is not None else (10.0 if quick else 45.0)
    return Settings(
        sizes=args.sizes or ([2_000, 10_000] if quick else [10_000, 100_000]),
        iterations=args.iterations or (10 if quick else 30),
        warmup=args.warmup or (2 if quick else 3),
        startup_runs=args.startup_runs or (3 if quick else 7),
        count_calls=3 if quick else 10,
        peer_budget_s=0.0 if args.no_peer else peer_budget,
        peer_max_calls=args.peer_max_calls,
        out_dir=(args.out or (BENCH_DIR / "quick" if quick else ROOT / "docs")).resolve(),
        work_dir=BENCH_DIR / "run",
        quick=quick,
        network_rtts=list(args.rtts if args.rtts is not None else (0, 20, 50)),
        folders=list(args.folders if args.folders is not None else folders_axis.FOLDER_COUNTS),
        folder_rtts=list(args.folder_rtts if args.folder_rtts is not None else folders_axis.FOLDER_RTTS_MS),
        folders_only=bool(args.folders_only),
        startup_only=bool(args.startup_only),
        index_only=bool(args.index_only),
        index_messages=args.index_messages,
        index_folders=args.index_folders,
        index_ours_only=bool(args.index_ours_only),
        index_engine=args.index_engine,
        index_xapian_messages=args.index_xapian_messages,
        index_attachments=bool(args.index_attachments),
        index_meaning=bool(args.index_meaning),
        index_rounds=args.index_rounds,
        index_flags_only=bool(args.index_flags_only),
        index_engines_only=bool(args.index_engines_only),
        index_engines=tuple(args.index_engines.split(",")),
        flags_messages=args.flags_messages,
        team_only=bool(args.team_only),
        team_clients=args.team_clients,
        team_seconds=args.team_seconds,
        bulk_only=bool(args.bulk_only),
        bulk_messages=args.bulk_messages,
    )


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_args(argv)
    if not SERVER_BIN.exists():
        raise SystemExit(f"{SERVER_BIN} is missing; run scripts/bench (it sets up .venv) instead of bench.py")
    if any(size < 1100 for size in settings.sizes):
        raise SystemExit("mailbox sizes must be at least 1100 (page 50 of 20 messages needs 1,001)")
    try:
        return anyio.run(run, settings)
    except BenchError as exc:
        say(f"error: {exc}")
        return 1
