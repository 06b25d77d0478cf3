"""The query tree as Gmail's own search (X-GM-RAW) with IMAP keys beside it, and Gmail's operators in the
query language (no server)."""

from __future__ import annotations

from datetime import date

import pytest

from mail_imap_mcp.query import (
    DIALECTS,
    AllOf,
    AnyOf,
    Category,
    Contains,
    DateBound,
    Filename,
    GmailOnly,
    HasAttachment,
    HasFlag,
    HasKeyword,
    Header,
    Label,
    NeedsReply,
    Not,
    QuerySyntaxError,
    SizeBound,
    gmail_search_keys,
    needs_utf8,
    parse,
    search_keys,
)

TODAY = date(2026, 3, 31)


def test_what_gmail_says_goes_as_one_x_gm_raw_and_the_rest_as_imap_keys() -> None:
    query = AllOf(
        (
            Contains("from", "alice@example.com"),
            Contains("subject", "quarterly budget"),
            HasAttachment(),
            DateBound("since", date(2026, 1, 5)),
            SizeBound("larger", 1000),
            HasFlag("seen", present=False),
            HasFlag("answered", present=False),
            HasKeyword("$Work"),
        )
    )
    assert gmail_search_keys(query) == [
        b"X-GM-RAW",
        'from:alice@example.com subject:"quarterly budget" has:attachment after:2026/01/05 larger:1000 is:unread',
        b"UNANSWERED",
        b"KEYWORD",
        b"$Work",
    ]
    assert DIALECTS["gmail"] is gmail_search_keys


def test_labels_categories_and_their_or_and_not() -> None:
    query = AllOf(
        (
            AnyOf((Label("Work"), Label("My Projects/2026"))),
            Not(Label("\\Important")),
            Category("social"),
            Filename("report.pdf"),
            Contains("text", "lunch"),
        )
    )
    (key, raw) = gmail_search_keys(query)
    assert key == b"X-GM-RAW"
    assert (
        raw
        == "(label:Work OR label:My-Projects-2026) -is:important category:social filename:report.pdf lunch"
    )
    assert gmail_search_keys(Label("\\Inbox")) == [b"X-GM-RAW", "in:inbox"]


def test_a_disjunction_gmail_cannot_say_whole_goes_as_imap_keys_and_a_label_in_it_is_refused() -> None:
    mixed = AnyOf((Contains("from", "bob"), HasFlag("answered")))
    assert gmail_search_keys(mixed) == search_keys(mixed)
    with pytest.raises(GmailOnly):
        gmail_search_keys(AnyOf((Label("Work"), Header("List-Id"))))
    with pytest.raises(GmailOnly):
        search_keys(Label("Work"))  # a server without Gmail's search
    assert gmail_search_keys(AllOf()) == []
    replies = gmail_search_keys(NeedsReply())
    # needs_reply: its senders in Gmail's words, its flag and headers as IMAP keys.
    assert replies[0] == b"X-GM-RAW" and "-from:noreply" in str(replies[1])
    assert b"UNANSWERED" in replies and b"HEADER" in replies


def test_body_text_and_quotes() -> None:
    assert gmail_search_keys(Contains("body", "x")) == [b"BODY", "x"]
    assert gmail_search_keys(Contains("text", 'say "hi" now')) == [b"X-GM-RAW", '"say hi now"']


def test_the_language_reads_gmails_operators() -> None:
    parsed = parse("label:work is:important category:Promotions is:starred", today=TODAY)
    assert parsed.tree == AllOf(
        (Label("work"), Label("\\Important"), Category("promotions"), HasFlag("flagged"))
    )
    with pytest.raises(QuerySyntaxError):
        parse("category:spam", today=TODAY)


def test_regression_a_quoted_operator_word_is_sent_as_a_phrase_not_as_the_operator() -> None:
    """``"a" "OR" "b"`` went out as ``a OR b`` (either word) and ``"-a"`` as ``-a`` (not a): a quoted
    word that Gmail reads as an operator bare stays quoted in X-GM-RAW."""

    def raw(query: str) -> object:
        (key, value) = gmail_search_keys(parse(query, today=TODAY).tree)
        assert key == b"X-GM-RAW"
        return value

    assert raw('"a" "OR" "b"') == 'a "OR" b'
    assert raw('"-a"') == '"-a"'
    assert raw('"+a" "and" "AROUND" from:"OR"') == '"+a" "and" "AROUND" from:"OR"'
    assert raw("a OR b -c") == "(a OR b) -c"
    assert raw("e-mail or") == 'e-mail "or"'  # a hyphen inside a word as it is; "or" quoted in any case


def test_regression_a_file_name_or_label_beyond_ascii_is_sent_in_utf8() -> None:
    """``filename:übersicht`` and ``label:Café`` went out as ASCII (an internal error): the charset is
    UTF-8 wherever any text of the query, a file name or a label included, is beyond ASCII."""
    assert needs_utf8(Filename("übersicht")) and needs_utf8(Label("Café"))
    assert needs_utf8(parse("has:attachment filename:übersicht", today=TODAY).tree)
    assert not needs_utf8(AllOf((Filename("report.pdf"), Label("Work"), Category("social"))))
