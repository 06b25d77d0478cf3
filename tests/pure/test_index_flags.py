"""The system flags as the index's bits: one definition (``index.store.FLAG_BITS``) that the store writes,
reads back and the compiled queries test, so the three can never disagree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.store import FLAG_BITS, flag_bits, flag_names
from mail_imap_mcp.query.tree import HasFlag

SRC = Path(__file__).resolve().parents[2] / "src" / "mail_imap_mcp"


@pytest.mark.parametrize("name", sorted(FLAG_BITS))
def test_each_flag_is_stored_read_back_and_queried_by_the_same_bit(name: str) -> None:
    spelled = "\\" + name.title()
    bits, keywords = flag_bits([spelled.upper(), "$Label1"])
    assert (bits, keywords) == (FLAG_BITS[name], "$Label1")
    assert flag_names(bits) == (spelled,)
    assert f"m.flag_bits & {bits})" in compile_fts5(HasFlag(name, True)).where


def test_stored_bits_name_every_flag_they_hold() -> None:
    assert flag_names(sum(FLAG_BITS.values())) == tuple("\\" + name.title() for name in FLAG_BITS)
    assert flag_names(0) == ()


def test_the_flag_bits_are_defined_in_one_place() -> None:
    """No module but ``index/store.py`` maps a flag name to its bit or a bit to its name."""
    mapping = re.compile(r"""(?i:["']\\*seen["']\s*:\s*1\b)|_FLAG_NAMES\s*=|\bFLAG_BITS\s*=""")
    defining = sorted(
        str(path.relative_to(SRC)) for path in SRC.rglob("*.py") if mapping.search(path.read_text())
    )
    assert defining == ["index/store.py"]
