"""What a command's start costs in CPU seconds: the imports of ``serve`` (the MCP SDK, the server, the
stdio transport) and of ``index``, each with the cyclic collector as the commands run them
(paused, ``mail_imap_mcp/cli/startup.py``) and as Python would by default (on), in fresh processes taken
in turn; and how many of the package's modules each loads. Alone:
``.venv/bin/python scripts/startup_cost.py [--rounds N]``.
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
#: Prints how many of the package's modules are loaded.
COUNT = "\nimport sys\nprint(sum(name.startswith('mail_imap_mcp') for name in sys.modules))"
#: How the collector runs while they are made.
COLLECTOR = {
    "paused": "from mail_imap_mcp.cli.startup import collector_paused\nwith collector_paused():\n    {imports}",
    "on": "{imports}",
}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_of(code: str) -> tuple[float, int]:
    """The CPU seconds of a process running ``code``, and how many of the package's modules it loaded."""
    before = children_cpu_s()
    done = subprocess.run([sys.executable, "-c", code + COUNT], check=True, capture_output=True, text=True)
    return children_cpu_s() - before, int(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="processes per command and collector (10)")
    rounds = parser.parse_args().rounds
    taken: dict[tuple[str, str], list[float]] = {}
    loaded: dict[str, int] = {}
    for _ in range(rounds):
        for command, imports in IMPORTS.items():
            for collector, template in COLLECTOR.items():
                cpu_s, loaded[command] = cpu_of(template.format(imports=imports))
                taken.setdefault((command, collector), []).append(cpu_s)
    print(
        f"CPU seconds of a command's imports, median of {rounds} processes each; the package's modules loaded"
    )
    for (command, collector), seconds in taken.items():
        print(
            f"{command:6} collector {collector:7} {statistics.median(seconds):.3f}  {loaded[command]} modules"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
