"""What a command's start costs in CPU seconds: the imports of ``serve`` (the MCP SDK, the server, the
stdio transport) and of ``index``, each with the cyclic collector as the commands run them
(paused, ``mail_imap_mcp/cli/startup.py``) and as Python would by default (on), in fresh processes taken
in turn. Alone: ``.venv/bin/python scripts/startup_cost.py [--rounds N]``.

``--host`` prints one line instead: ``serve``'s imports, once, as the command makes them. ``scripts/test``
shows it at the start of each run: the same imports cost 0.7-0.9 CPU-seconds on some days of the 2-core
machine CI runs on and 1.5-2.1 on others, with the suite's CPU alike (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys

#: The imports each command makes before it does anything.
IMPORTS = {
    "serve": "import mail_imap_mcp.cli, mail_imap_mcp.transport.stdio",
    "index": "import mail_imap_mcp.cli, mail_imap_mcp.cli.index",
}
#: How the collector runs while they are made.
COLLECTOR = {
    "paused": "from mail_imap_mcp.cli.startup import collector_paused\nwith collector_paused():\n    {imports}",
    "on": "{imports}",
}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_of(code: str) -> float:
    before = children_cpu_s()
    subprocess.run([sys.executable, "-c", code], check=True)
    return children_cpu_s() - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="processes per command and collector (10)")
    parser.add_argument("--host", action="store_true", help="one line: serve's imports, once (scripts/test)")
    options = parser.parse_args()
    if options.host:
        once = cpu_of(COLLECTOR["paused"].format(imports=IMPORTS["serve"]))
        print(f"host: serve's imports took {once:.2f} CPU-seconds (scripts/startup_cost.py)")
        return 0
    rounds = options.rounds
    taken: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for command, imports in IMPORTS.items():
            for collector, template in COLLECTOR.items():
                taken.setdefault((command, collector), []).append(cpu_of(template.format(imports=imports)))
    print(f"CPU seconds of a command's imports, median of {rounds} processes each")
    for (command, collector), seconds in taken.items():
        print(f"{command:6} collector {collector:7} {statistics.median(seconds):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
