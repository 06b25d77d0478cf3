"""The system flags as the index's bits: one definition (``index.store.FLAG_BITS``) that the store writes,
reads back and the compiled queries test, so the three can never disagree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mail_imap_mcp.index.engines.postgresql.query import PgCompiler
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.index.store import FLAG_BITS, flag_bits, flag_names
from mail_imap_mcp.query.tree import HasFlag, Not

SRC = Path(__file__).resolve().parents[2] / "src" / "mail_imap_mcp"


@pytest.mark.parametrize("name", sorted(FLAG_BITS))
def test_each_flag_is_stored_read_back_and_queried_by_the_same_bit(name: str) -> None:
    spelled = "\\" + name.title()
    bits, keywords = flag_bits([spelled.upper(), "$Label1"])
    assert (bits, keywords) == (FLAG_BITS[name], "$Label1")
    assert flag_names(bits) == (spelled,)
    assert f"m.flag_bits & {bits})" in compile_fts5(HasFlag(name, True)).where


@pytest.mark.parametrize("name", sorted(FLAG_BITS))
def test_postgresql_tests_a_flag_as_the_stored_values_that_have_its_bit_or_lack_it(name: str) -> None:
    """PostgreSQL's test is the list of values (an index of the column answers it): every value the
    store may write with the bit set, or without it (a NOT of the test too), never both."""
    compile_pg = PgCompiler(Tokenizer()).compile

    def values(where: str) -> set[int]:
        listed = re.fullmatch(r"\(m\.flag_bits IN \(([\d, ]+)\)\)", where)
        assert listed is not None, where
        return {int(value) for value in listed.group(1).split(",")}

    stored = {flag_bits(flag_names(bits))[0] for bits in range(sum(FLAG_BITS.values()) + 1)}
    bit = FLAG_BITS[name]
    assert values(compile_pg(HasFlag(name, True)).where) & stored == {v for v in stored if v & bit}
    assert values(compile_pg(HasFlag(name, False)).where) & stored == {v for v in stored if not v & bit}
    assert values(compile_pg(Not(HasFlag(name, False))).where) == values(
        compile_pg(HasFlag(name, True)).where
    )
    assert not values(compile_pg(HasFlag(name, True)).where) & values(compile_pg(HasFlag(name, False)).where)


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
