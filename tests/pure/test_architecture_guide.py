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
#: A change's steps under "Where a change goes" fit in this many lines, or the guide is a reference again.
MAX_CHANGE_LINES = 10

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


def changes(markdown: str) -> dict[str, int]:
    """Each ``###`` case of the section "Where a change goes", with its lines that are not blank."""
    section = markdown.split("\n## Where a change goes\n", 1)[1].split("\n## ", 1)[0]
    cases = re.split(r"^### ", section, flags=re.MULTILINE)[1:]
    return {case.splitlines()[0]: sum(1 for line in case.splitlines()[1:] if line.strip()) for case in cases}


def test_each_change_is_told_in_at_most_ten_lines() -> None:
    told = changes(GUIDE.read_text(encoding="utf-8"))
    assert {"A new tool", "An index engine"} <= set(told)
    assert {case: count for case, count in told.items() if count > MAX_CHANGE_LINES} == {}


def test_every_path_the_guide_names_exists() -> None:
    paths = named_paths(GUIDE.read_text(encoding="utf-8"))
    assert len(paths) > 30  # the check reads the page's paths at all
    assert missing(paths) == []


def test_the_path_check_sees_a_path_that_is_gone() -> None:
    page = "A tool in `tools/registry.py` and `imap/no_such_module.py`, a folder `index/engines/`.\n"
    page += "```\nimap/drawn_only.py\n```\n`tools/<tool>.py` is a template.\n"
    assert named_paths(page) == {"tools/registry.py", "imap/no_such_module.py", "index/engines/"}
    assert missing(named_paths(page)) == ["imap/no_such_module.py"]
