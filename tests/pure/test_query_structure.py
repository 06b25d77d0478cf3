"""has:attachment and filename: split from what IMAP SEARCH can send, and judged from a message's
attachments; a conjunct that mixes both kinds is refused rather than answered wrongly."""

from __future__ import annotations

from datetime import date

import pytest

from mail_imap_mcp.query import (
    EVERYTHING,
    AllOf,
    AnyOf,
    Contains,
    Filename,
    HasAttachment,
    Not,
    Query,
    parse,
    search_keys,
)
from mail_imap_mcp.query.imap import NotSearchable
from mail_imap_mcp.query.structure import MixedStructure, split, structure_holds

TODAY = date(2026, 3, 31)


def split_text(text: str) -> tuple[Query, Query | None]:
    return split(parse(text, today=TODAY).tree)


def test_a_query_without_structure_tests_goes_to_the_server_whole() -> None:
    tree = parse("from:bob (a OR b)", today=TODAY).tree
    assert split(tree) == (tree, None)


def test_top_level_structure_conjuncts_are_split_off() -> None:
    assert split_text("from:bob has:attachment") == (Contains("from", "bob"), HasAttachment())
    assert split_text("has:attachment") == (EVERYTHING, HasAttachment())
    assert split_text("a -filename:exe (filename:pdf OR filename:doc)") == (
        Contains("text", "a"),
        AllOf((Not(Filename("exe")), AnyOf((Filename("pdf"), Filename("doc"))))),
    )


@pytest.mark.parametrize(
    "text", ["has:attachment OR from:bob", "-(filename:pdf subject:x)", "{a filename:b}"]
)
def test_a_conjunct_mixing_both_kinds_is_refused(text: str) -> None:
    with pytest.raises(MixedStructure, match="only by AND"):
        split_text(text)


def test_the_imap_compiler_refuses_a_structure_test() -> None:
    with pytest.raises(NotSearchable):
        search_keys(AllOf((Contains("from", "a"), HasAttachment())))
    with pytest.raises(NotSearchable):
        search_keys(Not(Filename("pdf")))


@pytest.mark.parametrize(
    ("text", "filenames", "expected"),
    [
        ("has:attachment", [], False),
        ("has:attachment", [None], True),
        ("-has:attachment", [], True),
        ("filename:pdf", ["Report.PDF"], True),
        ("filename:pdf", ["notes.txt", None], False),
        ("filename:pdf", [None], False),
        ("filename:über", ["U\u0308BERSICHT.xlsx"], True),  # NFC and case folded on both sides
        ('filename:"q3 plan"', ["Q3 Plan.docx"], True),
        ("-filename:exe has:attachment", ["a.exe"], False),
        ("{filename:pdf filename:doc}", ["x.docx"], True),
    ],
)
def test_structure_tests_are_judged_from_the_attachments(
    text: str, filenames: list[str | None], expected: bool
) -> None:
    server, structure = split_text(text)
    assert server == EVERYTHING
    assert structure is not None
    assert structure_holds(structure, filenames) is expected
