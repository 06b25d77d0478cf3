"""What tests/integration/setup/test_readme.py shares with other test modules."""

from __future__ import annotations

import re
from pathlib import Path


def pinned(lockfile: Path) -> dict[str, str]:
    pins = re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", lockfile.read_text(), re.MULTILINE)
    return {name.lower(): version for name, version in pins}
