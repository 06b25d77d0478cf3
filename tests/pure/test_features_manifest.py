"""The feature-to-tests manifest (tests/integration/FEATURES.toml) both ways: every tool, capability and way
of asking has its feature folder, and every folder is in the manifest, saying what it covers. The tools,
capabilities and ways are read from the code, so a new one fails here until it has its folder."""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.asking.choose import Way
from mail_imap_mcp.capabilities import CAPABILITIES
from mail_imap_mcp.tools.registry import TOOLS

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"
MANIFEST: dict[str, dict[str, Any]] = tomllib.loads((INTEGRATION / "FEATURES.toml").read_text())

#: What the manifest lists, each from the code: kind -> the names.
DECLARED = {
    "tools": {tool.name for tool in TOOLS},
    "capabilities": {capability.name for capability in CAPABILITIES},
    "ways": {way.value for way in Way},
}


def folders() -> set[str]:
    return {path.name for path in INTEGRATION.iterdir() if path.is_dir() and any(path.glob("test_*.py"))}


def test_every_folder_is_in_the_manifest_and_every_entry_is_a_folder() -> None:
    assert set(MANIFEST) == folders()


@pytest.mark.parametrize("folder", sorted(MANIFEST))
def test_each_folder_says_what_it_covers_and_has_its_own_conftest(folder: str) -> None:
    entry = MANIFEST[folder]
    assert set(entry) <= {"covers", *DECLARED}, f"{folder}: unknown keys {set(entry) - {'covers', *DECLARED}}"
    assert entry.get("covers", "").strip(), f"{folder} does not say what it covers"
    assert (INTEGRATION / folder / "conftest.py").is_file()


@pytest.mark.parametrize("kind", sorted(DECLARED))
def test_each_tool_capability_and_way_has_one_folder(kind: str) -> None:
    listed = Counter(name for entry in MANIFEST.values() for name in entry.get(kind, []))
    assert set(listed) - DECLARED[kind] == set(), f"{kind} in the manifest that the code does not declare"
    assert DECLARED[kind] - set(listed) == set(), f"{kind} without a feature folder in FEATURES.toml"
    assert [name for name, count in listed.items() if count > 1] == [], f"{kind} in several folders"


def test_each_tools_folder_calls_it() -> None:
    """A tool's folder holds tests that call it by its wire name."""
    absent = [
        (folder, tool)
        for folder, entry in MANIFEST.items()
        for tool in entry.get("tools", [])
        if not any(tool in module.read_text() for module in (INTEGRATION / folder).glob("test_*.py"))
    ]
    assert absent == []
