"""scripts/process_costs.py: ``dump-acct`` lines added up by command, the costliest first."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from process_costs import costs_by_command, main, report

#: Lines as dump-acct printed them for a run of the suite (user and system CPU in ticks of 1/100 s).
LINES = [
    "mail-imap-mcp   |v3|    67.00|     7.00|   310.00|     0|     0| 56704.00|677888.00|   28176|   22460|     |"
    "       0|__      |Sat Nov 28 00:41:09 2026",
    "mail-imap-mcp   |v3|   100.00|    10.00|   510.00|     0|     0| 56704.00|677888.00|   28177|   22460|     |"
    "       0|__      |Sat Nov 28 00:41:10 2026",
    "imapd           |v3|     0.00|     0.00|     0.00| 65534| 65534|  6832.00|  4321.00|   32433|   28207|S    |"
    "       0|__      |Sat Nov 28 00:42:49 2026",
    "chromium        |v3|     3.00|     2.00|    94.00|     0|     0|1518600192.00| 49336.00|   13191|   13104| F  X|"
    "       0|__      |Sat Nov 28 00:45:48 2026",
]


def test_each_command_adds_up_its_processes_cpu_the_costliest_first() -> None:
    commands = costs_by_command(LINES)
    assert [(c.name, round(c.total, 2), len(c.seconds)) for c in commands] == [
        ("mail-imap-mcp", 1.84, 2),
        ("chromium", 0.05, 1),
        ("imapd", 0.0, 1),
    ]


def test_a_line_without_cpu_fields_is_skipped() -> None:
    assert costs_by_command(["", "not|an|accounting line", "x|v3|1.00"]) == []


def test_the_report_gives_the_whole_run_then_each_command_with_its_share() -> None:
    lines = report(costs_by_command(LINES), top=1)
    assert lines[0].split() == ["1.9", "CPU-s", "4", "processes", "100.0%", "(all)"]
    assert lines[1].split()[:6] == ["1.8", "CPU-s", "2", "processes", "97.4%", "mail-imap-mcp"]
    assert "(median 0.92, largest 1.10)" in lines[1]
    assert len(lines) == 2


def test_nothing_on_stdin_is_an_error_that_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main([]) == 2
    assert "no dump-acct lines" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(LINES)))
    assert main(["--top", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
