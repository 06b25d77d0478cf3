"""imap_search_messages' filter arguments: Unicode normalisation of search text, the query they build,
and the cursor digest that binds a filter (the query tree itself: tests/pure/test_query.py)."""

from __future__ import annotations

import unicodedata

import pytest

from mail_imap_mcp.presentation.search_filters import filters_digest, filters_query
from mail_imap_mcp.query import InMailbox, QuerySyntaxError, search_keys
from mail_imap_mcp.query.imap import Key
from mail_imap_mcp.tools.search_messages import FILTER_FIELDS
from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput

NFC = "Jürgen Größe"
NFD = unicodedata.normalize("NFD", NFC)
TEXT_ARGUMENTS = ("query", "from", "to", "cc", "subject", "body")


def sent_keys(args: SearchMessagesInput, own: frozenset[str] = frozenset()) -> list[Key]:
    return search_keys(filters_query(args, own).tree)


def test_fixture_forms_differ() -> None:
    assert NFD != NFC and "u\u0308" in NFD


@pytest.mark.parametrize("argument", TEXT_ARGUMENTS)
def test_search_text_is_sent_in_nfc(argument: str) -> None:
    # Regression: decomposed search text was sent as given and matched differently per server.
    text = f'"{NFD}"' if argument == "query" else NFD  # a phrase: the query's words would be two
    keys = sent_keys(SearchMessagesInput.model_validate({argument: text}))
    assert NFC in keys and NFD not in keys


def test_the_flat_arguments_build_one_query_in_the_order_they_were_sent() -> None:
    args = SearchMessagesInput.model_validate(
        {"subject": "Gru\u0308\u00dfe", "has_keyword": "$Important", "unread_only": True, "from": "ann"}
    )
    keys = sent_keys(args)
    assert keys == [b"FROM", "ann", b"SUBJECT", "Grüße", b"UNSEEN", b"KEYWORD", b"$Important"]
    needing = sent_keys(
        SearchMessagesInput.model_validate({"from": "alice", "needs_reply": True}), frozenset({"m@x"})
    )
    assert needing[:3] == [b"FROM", "alice", b"UNANSWERED"]
    assert needing[-3:] == [b"NOT", b"FROM", "m@x"]


def test_the_query_is_parsed_and_the_other_filters_combine_with_it_by_and() -> None:
    # Regression of the meaning: the query was one TEXT substring; its words must now each match.
    args = SearchMessagesInput.model_validate({"query": "budget -draft in:Archive", "from": "ann"})
    parsed = filters_query(args)
    assert parsed.scope == InMailbox("Archive")
    assert search_keys(parsed.tree) == [b"TEXT", "budget", b"NOT", b"TEXT", "draft", b"FROM", "ann"]
    assert sent_keys(SearchMessagesInput.model_validate({"query": "from:(a OR b)", "unread_only": True})) == [
        b"OR",
        b"FROM",
        "a",
        b"FROM",
        "b",
        b"UNSEEN",
    ]


def test_a_malformed_query_is_refused_before_any_search() -> None:
    with pytest.raises(QuerySyntaxError, match="at character 6: expected a value right after from:"):
        filters_query(SearchMessagesInput.model_validate({"query": "from: ann"}))


@pytest.mark.parametrize("argument", TEXT_ARGUMENTS)
def test_tool_input_is_normalised_before_filter_and_digest(argument: str) -> None:
    decomposed = SearchMessagesInput.model_validate({argument: NFD})
    composed = SearchMessagesInput.model_validate({argument: NFC})
    assert decomposed.model_dump(by_alias=True)[argument] == NFC
    assert sent_keys(decomposed) == sent_keys(composed)
    # A cursor issued for the NFD query is accepted with the NFC query, and the other way round.
    assert filters_digest(decomposed, FILTER_FIELDS) == filters_digest(composed, FILTER_FIELDS)
    assert filters_digest(decomposed, FILTER_FIELDS) != filters_digest(
        SearchMessagesInput.model_validate({argument: "Jurgen Grosse"}), FILTER_FIELDS
    )


def test_has_keyword_stays_an_ascii_atom() -> None:
    with pytest.raises(ValueError):
        SearchMessagesInput.model_validate({"has_keyword": "Gro\u0308ße"})
