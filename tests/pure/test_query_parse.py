"""The query language read into a tree and a scope, without a server: every operator, the grammar's
precedence, the errors (position and what was expected), the bounds, hostile text, and a property test
that a tree written out as text parses back to itself."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.query import (
    EVERYTHING,
    OPERATORS,
    AllOf,
    AnyOf,
    Anywhere,
    Contains,
    DateBound,
    Filename,
    HasAttachment,
    HasFlag,
    InMailbox,
    Not,
    ParsedQuery,
    Query,
    QuerySyntaxError,
    SizeBound,
    all_of,
    parse,
)
from mail_imap_mcp.query.parse import MAX_DEPTH, MAX_QUERY_CHARS, MAX_TERMS
from mail_imap_mcp.query.tree import nodes

TODAY = date(2026, 3, 31)


def tree(text: str) -> Query:
    parsed = parse(text, today=TODAY)
    assert parsed.scope is None
    return parsed.tree


def error(text: str) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as caught:
        parse(text, today=TODAY)
    return caught.value


def text(value: str) -> Contains:
    return Contains("text", value)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("invoice", text("invoice")),
        ('"quarterly report"', text("quarterly report")),
        ('"  spaced   out "', text("spaced out")),
        ("from:alice@example.com", Contains("from", "alice@example.com")),
        ("to:bob", Contains("to", "bob")),
        ("cc:carol", Contains("cc", "carol")),
        ("bcc:dave", Contains("bcc", "dave")),
        ('subject:"lunch plans"', Contains("subject", "lunch plans")),
        ("subject:Re:hello", Contains("subject", "Re:hello")),
        ("FROM:alice", Contains("from", "alice")),
        ("has:attachment", HasAttachment()),
        ("has:attachments", HasAttachment()),
        ("filename:pdf", Filename("pdf")),
        ('filename:"q3 report.xlsx"', Filename("q3 report.xlsx")),
        ("is:unread", HasFlag("seen", present=False)),
        ("is:read", HasFlag("seen")),
        ("is:flagged", HasFlag("flagged")),
        ("is:starred", HasFlag("flagged")),
        ("is:answered", HasFlag("answered")),
        ("is:unanswered", HasFlag("answered", present=False)),
        ("IS:Unread", HasFlag("seen", present=False)),
        ("before:2024/01/31", DateBound("before", date(2024, 1, 31))),
        ("after:2024-1-5", DateBound("since", date(2024, 1, 5))),
        ("newer_than:7d", DateBound("since", date(2026, 3, 24))),
        ("older_than:2d", DateBound("before", date(2026, 3, 29))),
        ("newer_than:1m", DateBound("since", date(2026, 2, 28))),  # 31 Feb is the month's last day
        ("older_than:13m", DateBound("before", date(2025, 2, 28))),
        ("newer_than:1y", DateBound("since", date(2025, 3, 31))),
        ("older_than:0d", DateBound("before", TODAY)),
        ("larger:1000", SizeBound("larger", 1000)),
        ("larger:10K", SizeBound("larger", 10 * 1024)),
        ("smaller:5mb", SizeBound("smaller", 5 * 1024**2)),
        ("smaller:2G", SizeBound("smaller", 2 * 1024**3)),
        ("10:30", text("10:30")),
        ("e-mail", text("e-mail")),
        ("or", text("or")),
        ("from:OR", Contains("from", "OR")),
        ("subject:-draft", Contains("subject", "-draft")),
        ("naïve", text("naïve")),
        ("nai\u0308ve", text("naïve")),  # NFC, as every text of the tree
    ],
)
def test_each_term_becomes_its_node(query: str, expected: Query) -> None:
    assert tree(query) == expected


def test_plain_words_must_all_match() -> None:
    assert tree("budget 2025 draft") == AllOf((text("budget"), text("2025"), text("draft")))
    assert tree("budget AND draft") == tree("budget draft")


def test_or_binds_tighter_than_the_implicit_and() -> None:
    assert tree("a b OR c d") == AllOf((text("a"), AnyOf((text("b"), text("c"))), text("d")))
    assert tree("a OR b OR c") == AnyOf((text("a"), text("b"), text("c")))


def test_parentheses_group_and_minus_negates() -> None:
    assert tree("(a b) OR c") == AnyOf((AllOf((text("a"), text("b"))), text("c")))
    assert tree("-a") == Not(text("a"))
    assert tree("-(a OR b) c") == AllOf((Not(AnyOf((text("a"), text("b")))), text("c")))
    assert tree("-from:bob -is:read") == AllOf((Not(Contains("from", "bob")), Not(HasFlag("seen"))))
    assert tree("--a") == Not(Not(text("a")))


def test_braces_are_an_or_of_their_terms() -> None:
    assert tree("{a b -c}") == AnyOf((text("a"), text("b"), Not(text("c"))))
    assert tree("{a OR b}") == tree("{a b}")
    assert tree("{a}") == text("a")


def test_a_text_operator_applies_to_a_group() -> None:
    assert tree("from:(alice OR bob)") == AnyOf((Contains("from", "alice"), Contains("from", "bob")))
    assert tree('subject:(lunch "next week")') == AllOf(
        (Contains("subject", "lunch"), Contains("subject", "next week"))
    )
    assert tree("to:{ann ben}") == AnyOf((Contains("to", "ann"), Contains("to", "ben")))
    assert tree("subject:(-spam x)") == AllOf((Not(Contains("subject", "spam")), Contains("subject", "x")))


def test_in_is_the_scope_not_a_test() -> None:
    assert parse("in:sent report", today=TODAY) == ParsedQuery(text("report"), InMailbox("sent"))
    assert parse('in:"Project X"', today=TODAY) == ParsedQuery(EVERYTHING, InMailbox("Project X"))
    assert parse("IN:Anywhere has:attachment", today=TODAY) == ParsedQuery(HasAttachment(), Anywhere())
    assert parse("in:INBOX.Archive.2024", today=TODAY).scope == InMailbox("INBOX.Archive.2024")
    assert parse("a", today=TODAY).scope is None


def test_a_full_query() -> None:
    parsed = parse(
        'in:anywhere from:(alice OR bob) "q3 plan" -is:read has:attachment filename:pdf after:2026/01/01 '
        "older_than:1d larger:1M",
        today=TODAY,
    )
    assert parsed.scope == Anywhere()
    assert parsed.tree == AllOf(
        (
            AnyOf((Contains("from", "alice"), Contains("from", "bob"))),
            text("q3 plan"),
            Not(HasFlag("seen")),
            HasAttachment(),
            Filename("pdf"),
            DateBound("since", date(2026, 1, 1)),
            DateBound("before", date(2026, 3, 30)),
            SizeBound("larger", 1024**2),
        )
    )


@pytest.mark.parametrize(
    ("query", "position", "expected"),
    [
        ("", 0, "a search term"),
        ("   ", 3, "a search term"),
        ("(a", 2, "')' to close the '(' at character 1"),
        ("{a", 2, "'}' to close the '{' at character 1"),
        ("a)", 1, "closes nothing"),
        ("a }", 2, "closes nothing"),
        ("()", 1, "a search term before ')'"),
        ("{}", 1, "a search term before '}'"),
        ('"abc', 4, "a closing quote for the phrase opened at character 1"),
        ('a ""', 2, "text between the quotes"),
        ("from:", 5, "a value right after from:"),
        ("from: x", 5, "a value right after from:"),
        ("from:(subject:x)", 6, "words or phrases inside from:(...)"),
        ("a OR", 4, "a search term"),
        ("OR a", 0, "a search term"),
        ("a OR OR b", 5, "a search term"),
        ("a AND", 5, "a search term"),
        ("AND a", 0, "a search term"),
        ("is:blue", 3, "is:unread|read|flagged|starred|answered|unanswered"),
        ("has:pdf", 4, "has:attachment"),
        ("before:2024/13/01", 7, "a day after before: as YYYY/MM/DD or YYYY-MM-DD"),
        ("after:yesterday", 6, "a day after after:"),
        ("after:0999/01/01", 6, "a year of four digits"),
        ("older_than:5w", 11, "an age after older_than: such as 7d, 3m or 1y"),
        ("newer_than:101y", 11, "at most 36500d, 1200m, 100y"),
        ("larger:5T", 7, "a size after larger:"),
        ("smaller:3G", 8, "at most 2G"),
        ("larger:-1", 7, "a size after larger:"),
        ("in:x OR b", 0, "in: is the search's scope"),
        ("-in:x", 1, "in: is the search's scope"),
        ("(in:x a)", 1, "in: is the search's scope"),
        ("a OR in:x", 5, "in: is the search's scope"),
        ("in:a in:b", 5, "no second in:"),
        ("a\x00b", 1, "text without control characters"),
        ("a\x1bb", 1, "text without control characters"),
    ],
)
def test_a_malformed_query_names_where_and_what_was_expected(
    query: str, position: int, expected: str
) -> None:
    caught = error(query)
    assert caught.position == position
    assert expected in caught.expected
    assert f"character {position + 1}" in str(caught)


def test_an_unknown_operator_lists_the_known_ones() -> None:
    caught = error("a rank:work")
    assert caught.position == 2
    assert caught.found == "rank:"
    for name in OPERATORS:
        assert f"{name}:" in caught.expected
    assert "in quotes" in caught.expected
    assert tree('"http://example.com"') == text("http://example.com")
    assert error("http://example.com").found == "http:"


def test_the_query_is_bounded() -> None:
    assert tree("a" * MAX_QUERY_CHARS) == text("a" * MAX_QUERY_CHARS)
    assert error("a" * (MAX_QUERY_CHARS + 1)).position == MAX_QUERY_CHARS
    assert tree(" ".join(["w"] * MAX_TERMS)) == AllOf((text("w"),) * MAX_TERMS)
    assert "at most 50 terms" in error(" ".join(["w"] * (MAX_TERMS + 1))).expected
    nested = "(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH
    assert tree(nested) == text("a")
    assert error("(" + nested + ")").position == MAX_DEPTH
    assert error("-" * (MAX_DEPTH + 1) + "a").position == MAX_DEPTH


def parsed_or_refused(query: str) -> ParsedQuery | QuerySyntaxError:
    try:
        return parse(query, today=TODAY)
    except QuerySyntaxError as caught:
        return caught


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_parses_or_is_refused_with_a_position(query: str) -> None:
    outcome = parsed_or_refused(query)
    if isinstance(outcome, QuerySyntaxError):
        assert 0 <= outcome.position <= len(query)
        assert outcome.expected
        assert str(outcome).startswith("at ")


HOSTILE = [
    '"' * 499,
    "(" * 300,
    ")" * 300,
    "-" * 499 + "a",
    "a OR " * 99 + "a",
    "from:" * 100,
    "\u202eevil\u202c",
    "a\u2028b",
    '") UNION SELECT * FROM messages --',
    "subject:x* NEAR(a b)",
    "{" * 200 + "}" * 200,
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_text_is_refused_or_read_as_text(query: str) -> None:
    outcome = parsed_or_refused(query)
    if isinstance(outcome, QuerySyntaxError):
        assert 0 <= outcome.position <= len(query)
    else:
        # Nothing of the text becomes anything but the value of a text node.
        for node in nodes(outcome.tree):
            assert isinstance(node, AllOf | AnyOf | Not | Contains)


# The round trip: a tree of what the language can say, written out as text, parses back to itself.
WORDS = st.text(alphabet="abcxyz019.@_é", min_size=1, max_size=6)
PHRASES = st.lists(WORDS, min_size=2, max_size=3).map(" ".join)
VALUES = st.one_of(WORDS, PHRASES)
FIELDS = st.sampled_from(["text", "from", "to", "cc", "bcc", "subject"])


def leaves() -> st.SearchStrategy[Query]:
    return st.one_of(
        st.builds(Contains, FIELDS, VALUES),
        st.builds(Filename, VALUES),
        st.just(HasAttachment()),
        st.sampled_from(
            [
                HasFlag("seen"),
                HasFlag("seen", False),
                HasFlag("flagged"),
                HasFlag("answered"),
                HasFlag("answered", False),
            ]
        ),
        st.builds(
            DateBound, st.sampled_from(["since", "before"]), st.dates(date(1000, 1, 1), date(9999, 12, 31))
        ),
        st.builds(SizeBound, st.sampled_from(["larger", "smaller"]), st.integers(0, 2**31)),
    )


def written_trees() -> st.SearchStrategy[Query]:
    return st.recursive(
        leaves(),
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda parts: AllOf(tuple(parts))),
            st.lists(inner, min_size=2, max_size=3).map(lambda parts: AnyOf(tuple(parts))),
            inner.map(Not),
        ),
        max_leaves=10,
    )


def written(query: Query) -> str:
    """``query`` in the language (every group in parentheses)."""
    if isinstance(query, AllOf):
        return "(" + " ".join(written(part) for part in query.parts) + ")"
    if isinstance(query, AnyOf):
        return "(" + " OR ".join(written(part) for part in query.parts) + ")"
    if isinstance(query, Not):
        return "-" + written(query.part)
    if isinstance(query, Contains | Filename):
        value = f'"{query.value}"' if " " in query.value else query.value
        name = "filename" if isinstance(query, Filename) else query.field
        return value if name == "text" else f"{name}:{value}"
    if isinstance(query, HasAttachment):
        return "has:attachment"
    if isinstance(query, HasFlag):
        names = {("seen", True): "read", ("seen", False): "unread", ("flagged", True): "flagged"}
        names |= {("answered", True): "answered", ("answered", False): "unanswered"}
        return "is:" + names[query.flag, query.present]
    if isinstance(query, DateBound):
        return f"{'after' if query.bound == 'since' else 'before'}:{query.day.isoformat()}"
    assert isinstance(query, SizeBound)
    return f"{query.bound}:{query.octets}"


def depth(query: Query) -> int:
    if isinstance(query, AllOf | AnyOf):
        return 1 + max(depth(part) for part in query.parts)
    if isinstance(query, Not):
        return 1 + depth(query.part)
    return 0


def terms(query: Query) -> int:
    if isinstance(query, AllOf | AnyOf):
        return sum(terms(part) for part in query.parts)
    if isinstance(query, Not):
        return terms(query.part)
    return 1


def flattened(query: Query) -> Query:
    """``query`` with conjunctions in conjunctions flattened, as the parser builds them."""
    if isinstance(query, AllOf):
        return all_of(*(flattened(part) for part in query.parts))
    if isinstance(query, AnyOf):
        return AnyOf(tuple(flattened(part) for part in query.parts))
    if isinstance(query, Not):
        return Not(flattened(query.part))
    return query


@settings(max_examples=300, deadline=None)
@given(written_trees())
def test_a_tree_written_out_parses_back_to_itself(query: Query) -> None:
    if depth(query) > MAX_DEPTH or terms(query) > MAX_TERMS:
        return
    assert parse(written(query), today=TODAY).tree == flattened(query)


@pytest.mark.parametrize(("query", "position"), [("-", 0), ("budget -", 7), ("a - b", 2), ("--", 1)])
def test_regression_a_lone_minus_is_refused_not_read_as_text_every_message_matches(
    query: str, position: int
) -> None:
    """A ``-`` with nothing right after it was the word "-", which IMAP's TEXT finds in nearly every
    message (4.3 s for 100,000): refused where it stands. A ``-`` inside a word or a phrase stays text."""
    caught = error(query)
    assert (caught.position, caught.found) == (position, "-")
    assert "right after '-'" in caught.expected
    assert tree("-a") == Not(text("a"))
    assert tree('"-"') == text("-")
    assert tree("e-mail") == text("e-mail")
