"""Time the extraction child: bare startup, and one extraction per corpus document and image.

Run: ``.venv/bin/python scripts/extract_timings.py [--repeats N]`` (after ``scripts/test`` has
built the virtualenv). Prints medians in milliseconds. Pure: no IMAP server involved; the
IMAP-level numbers (RSS while reading a 30 MB attachment, tool latency) belong to scripts/bench.
:func:`measure` returns the rows for reuse by other reports.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.limits import default_extract_limits, default_image_limits  # noqa: E402
from tests.support.mail.documents import CORPUS  # noqa: E402

from mail_imap_mcp.content.documents import ExtractionError, extract_text  # noqa: E402
from mail_imap_mcp.content.images import prepare_image  # noqa: E402
from mail_imap_mcp.content.sandbox import SandboxLimits, child_command  # noqa: E402


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def child_startup(repeats: int) -> float:
    """Median wall time of spawning the child, limiting it and getting an answer (no parser import)."""
    command = child_command(SandboxLimits(10, 10, 768 << 20, 1 << 20))
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, input=b'{"task": "none", "params": {}}', capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return _median_ms(samples)


def measure(repeats: int = 5) -> list[tuple[str, str, float, str]]:
    """(item, kind, median ms, outcome) for child startup and every corpus item."""
    rows: list[tuple[str, str, float, str]] = [
        ("child startup (no parser)", "-", child_startup(repeats), "ok")
    ]
    with tempfile.TemporaryDirectory() as folder:
        for item in CORPUS.values():
            path = Path(folder) / item.name
            path.write_bytes(item.data)
            samples = []
            outcome = "ok"
            for _ in range(repeats):
                started = time.perf_counter()
                try:
                    if item.kind == "image":
                        prepare_image(path, item.content_type, default_image_limits())
                    else:
                        extract_text(
                            path, item.content_type, item.filename, default_extract_limits(), max_chars=20_000
                        )
                except ExtractionError as exc:
                    outcome = f"{exc.code}" + (f" ({exc.limit})" if exc.limit else "")
                samples.append(time.perf_counter() - started)
            rows.append((item.name, item.kind, _median_ms(samples), outcome))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per item (median reported)")
    args = parser.parse_args()
    print(f"{'item':28} {'kind':6} {'median ms':>10}  outcome")
    for name, kind, ms, outcome in measure(args.repeats):
        print(f"{name:28} {kind:6} {ms:>10}  {outcome}")


if __name__ == "__main__":
    main()
