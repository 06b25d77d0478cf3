"""scripts/bench --index-only: what it prints and how it treats Dovecot + fts-xapian (issue 47 item 19)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from benchmark import index as bench_index  # noqa: E402
from benchmark import index_sizes  # noqa: E402

QUERIES = [
    {"label": "sender word", "field": "from", "word": "garcia", "hits": 40},
    {"label": "subject word", "field": "subject", "word": "budget", "hits": 41},
    {"label": "rare word", "field": "text", "word": "zyzzyva", "hits": 1},
    {"label": "common word", "field": "text", "word": "team", "hits": 700},
]


def finished_run(xapian: dict[str, Any]) -> bench_index.IndexRun:
    """A run's results as run_index_bench leaves them, with ``xapian`` as given."""
    timed = {q["label"]: {"median_ms": 1.5, "store_only_median_ms": 0.5, "round_trips": 1} for q in QUERIES}
    run = bench_index.IndexRun(1000, 4)
    run.results.update(
        queries=QUERIES,
        ours_build={"seconds": 1.0, "messages_per_s": 1000, "bytes_per_message": 900, "peak_rss_mb": 80},
        ours={**timed, "appended": {"found": True, "ms": 3.0, "round_trips": 2}},
        notmuch={**timed, "new_seconds": 2.0, "new_messages_per_s": 500, "index_bytes_per_message": 3000},
        dovecot=timed,
        ours_mcp={"newest page of 20 (INBOX, no query)": {"median_ms": 9.0}},
        xapian=xapian,
    )
    return run


def test_the_index_section_is_printed_as_it_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = finished_run({"skipped": "--index-xapian-messages 0"})
    bench_index.write_index_results(run, tmp_path, machine={"nproc": 2, "cpu_model": "test"})
    printed = capsys.readouterr().out
    written = (tmp_path / "benchmarks.md").read_text()
    assert "| query (hits in our index) |" in printed
    assert printed.strip() in written


def test_a_skipped_fts_xapian_is_said_and_its_cells_are_empty() -> None:
    section = bench_index.index_section(finished_run({"skipped": "--index-xapian-messages 0"}), {})
    assert "Dovecot + fts-xapian not measured: --index-xapian-messages 0" in section
    xapian_row = next(line for line in section.splitlines() if line.startswith("| Dovecot fts-xapian"))
    assert xapian_row.count("–") == 3


def test_zero_xapian_messages_means_none() -> None:
    assert bench_index.xapian_skip_reason(0) == "--index-xapian-messages 0"


def test_a_missing_fts_xapian_plugin_is_said_before_seeding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Dovecot's module directory as doveconf names it: empty here, then holding the plugin.
    def doveconf(*args: Any, **kwargs: Any) -> Any:
        return type("Done", (), {"stdout": f"{tmp_path}\n"})()

    monkeypatch.setattr(bench_index.subprocess, "run", doveconf)
    reason = bench_index.xapian_skip_reason(None)
    assert reason is not None and "dovecot-fts-xapian" in reason and str(tmp_path) in reason
    (tmp_path / "lib21_fts_xapian_plugin.so").write_bytes(b"")
    assert bench_index.xapian_skip_reason(None) is None
    assert bench_index.xapian_skip_reason(500) is None


def test_a_million_keeps_its_own_figures_and_both_sizes_stand_side_by_side(tmp_path: Path) -> None:
    # Issue 51 item 4: a 1,000,000 run writes a JSON and a section of its own, never the 100,000 one's.
    machine = {"nproc": 2, "cpu_model": "test", "date_utc": "today", "load_average_at_start": [1.0]}
    small, large = finished_run({"skipped": "none"}), finished_run({"skipped": "none"})
    small.messages, large.messages = 100_000, 1_000_000
    large.results["notmuch"] = {**large.results["notmuch"], "sender word": {"median_ms": 22.0}}
    bench_index.write_index_results(small, tmp_path, machine=machine)
    bench_index.write_index_results(large, tmp_path, machine=machine)
    assert (tmp_path / "benchmarks-index.json").exists()
    assert (tmp_path / "benchmarks-index-1000000.json").exists()
    written = (tmp_path / "benchmarks.md").read_text()
    assert written.count("100,000 generated messages") == 1
    assert written.count("1,000,000 generated messages") == 1
    sizes = written.split(index_sizes.SIZES_BEGIN)[1].split(index_sizes.SIZES_END)[0]
    assert (
        "| query | 100,000: ours / store alone / notmuch | 1,000,000: ours / store alone / notmuch |" in sizes
    )
    sender = next(line for line in sizes.splitlines() if line.startswith("| sender word |"))
    assert sender.endswith("1.5 / 0.5 / 1.5 | `garcia` (40): 1.5 / 0.5 / 22.0 |")
    # Written again after another 100,000 run: still one table, both sizes.
    bench_index.write_index_results(small, tmp_path, machine=machine)
    assert (tmp_path / "benchmarks.md").read_text().count(index_sizes.SIZES_BEGIN) == 1


def test_a_run_on_another_engine_keeps_its_own_figures_beside_the_sqlite_run_of_its_size(
    tmp_path: Path,
) -> None:
    machine = {"nproc": 2, "cpu_model": "test", "date_utc": "today", "load_average_at_start": [1.0]}
    plain, ranked = finished_run({"skipped": "none"}), finished_run({"skipped": "none"})
    plain.messages = ranked.messages = 1_000_000
    ranked.engine = "sqlite+tantivy"
    ranked.results["ours"] = {**ranked.results["ours"], "scored_engine": {"median_ms": 48.6}}
    bench_index.write_index_results(plain, tmp_path, machine=machine)
    bench_index.write_index_results(ranked, tmp_path, machine=machine)
    assert (tmp_path / "benchmarks-index-1000000.json").exists()
    kept = (tmp_path / "benchmarks-index-1000000-sqlite_tantivy.json").read_text()
    assert '"engine": "sqlite+tantivy"' in kept
    written = (tmp_path / "benchmarks.md").read_text()
    assert written.count("1,000,000 generated messages over 4 folders, our index in `sqlite`;") == 1
    assert written.count("1,000,000 generated messages over 4 folders, our index in `sqlite+tantivy`;") == 1
    assert "--index-messages 1000000 --index-engine sqlite+tantivy; edits inside are overwritten" in written
    assert "| the same, ranked by `sqlite+tantivy`: store alone | | | 48.6 | | | |" in written
    # The sizes side by side stay the SQLite runs': one 1,000,000 column.
    sizes = written.split(index_sizes.SIZES_BEGIN)[1].split(index_sizes.SIZES_END)[0]
    assert sizes.count("1,000,000: ours") == 1


def test_a_sampled_run_says_its_exit_code_and_the_cpu_time_of_its_threads(tmp_path: Path) -> None:
    from benchmark.common import run_sampled

    busy = (
        "import sys, threading, time\n"
        "def spin():\n"
        "    end = time.process_time() + 0.3\n"
        "    while time.process_time() < end: pass\n"
        "worker = threading.Thread(target=spin); worker.start(); spin(); worker.join(); sys.exit(3)\n"
    )
    done = run_sampled([sys.executable, "-c", busy], {}, tmp_path / "stderr")
    assert done.returncode == 3
    assert done.cpu_seconds >= 0.3  # the process's whole CPU time, not one thread's share alone
    assert done.peak_rss_mb > 0
