"""docs/architecture.md stays a guide (issue 79 item 8): at most 400 lines, and every path it names in
backticks exists in the tree (under the package, or from the repository's root), so a module that moves
or goes cannot leave the guide pointing at it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "mail_imap_mcp"
GUIDE = ROOT / "docs" / "architecture.md"
MAX_GUIDE_LINES = 400

#: A path in backticks: a file ending in .py or .md, or a folder ending in /; not a template (``<tool>``).
PATH = re.compile(r"`([\w./-]+(?:\.py|\.md|\.txt|/))`")


def named_paths(markdown: str) -> set[str]:
    """The paths a page names in backticks (its code blocks are drawings, not checked)."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return set(PATH.findall(prose))


def missing(paths: set[str]) -> list[str]:
    """Those of ``paths`` that exist neither under the package nor from the repository's root."""
    return sorted(path for path in paths if not (PACKAGE / path).exists() and not (ROOT / path).exists())


def test_the_guide_is_at_most_400_lines() -> None:
    assert len(GUIDE.read_text(encoding="utf-8").splitlines()) <= MAX_GUIDE_LINES


def test_every_path_the_guide_names_exists() -> None:
    paths = named_paths(GUIDE.read_text(encoding="utf-8"))
    assert len(paths) > 30  # the check reads the page's paths at all
    assert missing(paths) == []


def test_the_path_check_sees_a_path_that_is_gone() -> None:
    page = "A tool in `tools/registry.py` and `imap/no_such_module.py`, a folder `index/engines/`.\n"
    page += "```\nimap/drawn_only.py\n```\n`tools/<tool>.py` is a template.\n"
    assert named_paths(page) == {"tools/registry.py", "imap/no_such_module.py", "index/engines/"}
    assert missing(named_paths(page)) == ["imap/no_such_module.py"]
