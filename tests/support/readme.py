"""The README's runnable snippets: the fenced block after each ``<!-- readme-test: NAME -->`` marker."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(name: str) -> str:
    """The code of the README block marked ``readme-test: NAME`` (the test fails if there is none)."""
    match = re.search(rf"<!-- readme-test: {name} -->\n```\w+\n(.*?)```", README.read_text(), re.DOTALL)
    assert match, f"README.md has no block marked readme-test: {name}"
    return match.group(1)
