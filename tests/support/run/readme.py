"""The README's runnable snippets: the fenced block after each ``<!-- readme-test: NAME -->`` marker."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_block(name: str, document: Path = README) -> str:
    """The code of the block marked ``readme-test: NAME`` in the README (or ``document``, another page of
    the documentation); the test fails if there is none."""
    match = re.search(rf"<!-- readme-test: {name} -->\n```\w+\n(.*?)```", document.read_text(), re.DOTALL)
    assert match, f"{document.name} has no block marked readme-test: {name}"
    return match.group(1)
