"""What tests/integration/index/test_index_build.py shares with other test modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.patience import patient

ROOT = Path(__file__).resolve().parents[3]


def index(config: Path, *args: str, wait: bool = True) -> Any:
    argv = [sys.executable, "-m", "mail_imap_mcp", "--config", str(config), "index", *args]
    if not wait:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    return subprocess.run(argv, capture_output=True, text=True, timeout=patient(300), cwd=ROOT)
