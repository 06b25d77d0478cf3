"""What a command's start costs in CPU seconds: the imports of ``serve`` (the MCP SDK, the server, the
stdio transport) and of ``index``, each with the cyclic collector as the commands run them
(paused, ``mail_imap_mcp/cli/startup.py``) and as Python would by default (on), in fresh processes taken
in turn; and how many of the package's modules each loads. With ``--whole``, whole processes as a client
starts them: ``serve`` answering ``initialize`` and ``tools/list`` through the MCP SDK's stdio client (what
Claude Desktop, Code or Cursor wait for), ``index --status``, and the sandbox's child reading a small
PDF. Alone: ``.venv/bin/python scripts/startup_cost.py [--rounds N] [--whole]``; to measure another
tree, put its ``src`` first on ``PYTHONPATH`` (the children inherit it).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.mail.documents import text_pdf

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
#: An account whose server is never reached: neither listing the tools nor ``index --status`` asks it.
CONFIG = '[accounts.a]\nhost = "imap.example.org"\nusername = "me"\npassword_env = "P"\n'


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_of(code: str) -> tuple[float, int]:
    """The CPU seconds of a process running ``code``, and how many of the package's modules it loaded."""
    before = children_cpu_s()
    done = subprocess.run([sys.executable, "-c", code + COUNT], check=True, capture_output=True, text=True)
    return children_cpu_s() - before, int(done.stdout.split()[-1])


def imports(rounds: int) -> None:
    taken: dict[tuple[str, str], list[float]] = {}
    loaded: dict[str, int] = {}
    for _ in range(rounds):
        for command, imported in IMPORTS.items():
            for collector, template in COLLECTOR.items():
                cpu_s, loaded[command] = cpu_of(template.format(imports=imported))
                taken.setdefault((command, collector), []).append(cpu_s)
    print(
        f"CPU seconds of a command's imports, median of {rounds} processes each; the package's modules loaded"
    )
    for (command, collector), seconds in taken.items():
        print(
            f"{command:6} collector {collector:7} {statistics.median(seconds):.3f}  {loaded[command]} modules"
        )


def serve_and_list(config: Path) -> None:
    """Start ``serve`` as a client does, ask ``initialize`` and ``tools/list``, and close it."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "mail_imap_mcp", "serve", "--config", str(config)],
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        )
        with open(os.devnull, "w") as log:
            async with Client(stdio_client(params, errlog=log)) as client:
                assert (await client.list_tools()).tools

    anyio.run(run)


def index_status(config: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "mail_imap_mcp", "index", "--status", "--config", str(config)],
        check=True,
        capture_output=True,
    )


def read_pdf(pdf: Path) -> None:
    """The sandbox's document child reading one small PDF (a child of its own, as a tool call runs it)."""
    from mail_imap_mcp.config import ServerSettings
    from mail_imap_mcp.content.documents import extract_limits, extract_text

    limits = extract_limits(ServerSettings())
    extracted = extract_text(pdf, "application/pdf", "a.pdf", limits, max_chars=1000)
    assert "hello" in extracted.text


def whole(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp, "config.toml")
        config.write_text(CONFIG + f'[server]\nindex = true\nindex_dir = "{tmp}/ix"\n', encoding="utf-8")
        pdf = Path(tmp, "a.pdf")
        pdf.write_bytes(text_pdf([["hello"]]))
        starts: dict[str, Callable[[], None]] = {
            "serve+initialize+tools/list": lambda: serve_and_list(config),
            "index --status": lambda: index_status(config),
            "sandbox child (a PDF)": lambda: read_pdf(pdf),
        }
        taken: dict[str, list[float]] = {}
        for _ in range(rounds):
            for name, start in starts.items():
                before = children_cpu_s()
                start()
                taken.setdefault(name, []).append(children_cpu_s() - before)
    print(f"CPU seconds of whole processes, median of {rounds} (min, max)")
    for name, seconds in taken.items():
        print(f"{name:28} {statistics.median(seconds):.3f}  ({min(seconds):.3f}, {max(seconds):.3f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="processes per command and collector (10)")
    parser.add_argument("--whole", action="store_true", help="whole processes as a client starts them")
    args = parser.parse_args()
    (whole if args.whole else imports)(args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
