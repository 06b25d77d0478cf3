"""A query as a rule's Sieve test (``query/sieve.py``), the third compiler of the query tree: what it
compiles to, what it refuses naming the part, and the condition a dry run searches."""

from __future__ import annotations

from datetime import date

import pytest

from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import NotSayableInSieve, quoted, rule_condition, sieve_condition
from mail_imap_mcp.query.tree import AnyOf, Contains, Header, Not

TODAY = date(2026, 11, 29)


def _compiled(text: str, offered: frozenset[str] | None = None) -> tuple[str, tuple[str, ...]]:
    condition = sieve_condition(parse(text, today=TODAY).tree, offered)
    return condition.test, condition.requires


@pytest.mark.parametrize(
    ("query", "test", "requires"),
    [
        ("from:school.example", 'header :contains "from" "school.example"', ()),
        ("subject:Zeugnis", 'header :contains "subject" "Zeugnis"', ()),
        ("larger:1000000", "size :over 1000000", ()),
        ("smaller:500", "size :under 500", ()),
        ("after:2026/01/31", 'currentdate :value "ge" "date" "2026-01-31"', ("date", "relational")),
        ("-to:me@example.org", 'not header :contains "to" "me@example.org"', ()),
    ],
)
def test_each_operator_compiles_to_its_sieve_test(query: str, test: str, requires: tuple[str, ...]) -> None:
    assert _compiled(query) == (test, requires)


def test_and_or_not_nest_as_allof_anyof_not() -> None:
    test, requires = _compiled('from:school (subject:"Elternabend" OR subject:Zeugnis) -larger:5000000')
    assert test == (
        "allof(\n"
        '  header :contains "from" "school",\n'
        "  anyof(\n"
        '    header :contains "subject" "Elternabend",\n'
        '    header :contains "subject" "Zeugnis"\n'
        "  ),\n"
        "  not size :over 5000000\n"
        ")"
    )
    assert requires == ()


def test_a_word_looks_in_the_senders_recipients_subject_and_body_as_its_dry_run_does() -> None:
    tree = parse("Newsletter", today=TODAY).tree
    assert rule_condition(tree) == AnyOf(
        tuple(Contains(field, "Newsletter") for field in ("subject", "from", "to", "cc", "body"))
    )
    test, requires = _compiled("Newsletter")
    assert (
        test.startswith("anyof(\n") and 'body :text :contains "Newsletter"' in test and requires == ("body",)
    )


def test_header_tests_and_strings_are_escaped() -> None:
    assert sieve_condition(Header("List-Id")).test == 'exists "List-Id"'
    assert sieve_condition(Not(Header("List-Id", "news"))).test == 'not header :contains "List-Id" "news"'
    assert sieve_condition(Contains("subject", 'say "hi" \\o/')).test == (
        'header :contains "subject" "say \\"hi\\" \\\\o/"'
    )
    assert quoted("Grüße") == '"Grüße"'
    with pytest.raises(NotSayableInSieve, match="not a header field's name"):
        sieve_condition(Header("Bad: name", "x"))


@pytest.mark.parametrize(
    ("query", "part"),
    [
        ("from:a is:unread", "is:unread"),
        ("is:starred OR from:b", "is:starred"),
        ("label:Work", "label:Work"),
        ("category:promotions", "category:promotions"),
        ("has:attachment", "has:attachment"),
        ("filename:pdf", "filename:pdf"),
    ],
)
def test_what_a_rule_cannot_test_is_refused_naming_the_part(query: str, part: str) -> None:
    with pytest.raises(NotSayableInSieve) as refused:
        _compiled(query)
    assert refused.value.part == part and refused.value.reason


def test_an_extension_the_server_lacks_is_refused_naming_the_part_that_needs_it() -> None:
    with pytest.raises(NotSayableInSieve) as refused:
        _compiled("from:a Zeugnis", frozenset({"fileinto"}))
    assert refused.value.part == "Zeugnis" and "'body'" in refused.value.reason
    with pytest.raises(NotSayableInSieve) as dated:
        _compiled("after:2026/01/01", frozenset({"date"}))
    assert dated.value.part == "after:2026/01/01" and "relational" in dated.value.reason
    assert _compiled("from:a", frozenset()) == ('header :contains "from" "a"', ())


def test_the_condition_goes_into_a_script_with_its_require_line() -> None:
    condition = sieve_condition(parse("Zeugnis after:2026/01/01", today=TODAY).tree)
    assert condition.require_line() == 'require ["body", "date", "relational"];\n'
    assert sieve_condition(parse("from:a", today=TODAY).tree).require_line() == ""
