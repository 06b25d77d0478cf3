"""What each command cost in a run, from the kernel's process accounting: every process that ended, its CPU
seconds added up by command name (``mail-imap-mcp``, ``python``, ``chromium``, ``imapd``...), with the
number of processes, each one's median and the largest.

The test processes' own report (``tests/support/run/cpu_report.py``) says which test module spent the CPU; this
says which programs did, across the whole run, the servers' forks and the commands the tests ran among
them. Record a run as root with the ``acct`` package (``accton`` starts and stops the accounting), then
summarise the file::

    touch /tmp/run.pacct && accton /tmp/run.pacct
    bash .ci/run
    accton off
    dump-acct /tmp/run.pacct | .venv/bin/python scripts/process_costs.py [--top N]

``dump-acct`` prints one process a line, its fields split by ``|``: the command name, the format, then user
and system CPU time in ticks of 1/100 s (the accounting's ``AHZ``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

#: Ticks of CPU time per second in ``dump-acct``'s output (``AHZ`` of the v3 accounting format).
TICKS_PER_SECOND = 100


@dataclass
class CommandCost:
    """The processes of one command name and the CPU seconds each used."""

    name: str
    seconds: list[float] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.seconds)


def costs_by_command(lines: Iterable[str]) -> list[CommandCost]:
    """The commands of ``dump-acct`` output lines, the costliest first (a line without CPU fields is skipped)."""
    commands: dict[str, CommandCost] = {}
    for line in lines:
        fields = line.split("|")
        try:
            cpu_s = (float(fields[2]) + float(fields[3])) / TICKS_PER_SECOND
        except (IndexError, ValueError):
            continue
        name = fields[0].strip()
        commands.setdefault(name, CommandCost(name)).seconds.append(cpu_s)
    return sorted(commands.values(), key=lambda command: (-command.total, command.name))


def report(commands: list[CommandCost], top: int) -> list[str]:
    """A line per command (the ``top`` costliest) after one for the whole run."""
    everything = sum(command.total for command in commands)
    processes = sum(len(command.seconds) for command in commands)
    lines = [f"{everything:9.1f} CPU-s  {processes:6d} processes  100.0%  (all)"]
    for command in commands[:top]:
        share = 100 * command.total / everything if everything else 0.0
        lines.append(
            f"{command.total:9.1f} CPU-s  {len(command.seconds):6d} processes  {share:5.1f}%  {command.name}"
            f"  (median {statistics.median(command.seconds):.2f}, largest {max(command.seconds):.2f})"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=20, help="commands listed (20)")
    args = parser.parse_args(argv)
    commands = costs_by_command(sys.stdin)
    if not commands:
        print("process_costs: no dump-acct lines on stdin", file=sys.stderr)
        return 2
    print("\n".join(report(commands, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
