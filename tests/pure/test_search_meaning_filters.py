"""Every filter argument of imap_search_messages with ``about`` and ``like``, against each index engine's
compiler: one the index answers is kept (a part of the query, named by its argument), one it cannot is
``invalid_input`` naming the argument and why (the search by meaning is the index's alone), never an
error to retry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.index.engines.postgresql.query import PgCompiler
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.presentation.search_filters import by_meaning_checked, filters_query, index_answers_filters
from mail_imap_mcp.query import Query
from mail_imap_mcp.tools.search_messages import FILTER_FIELDS
from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput

CHECKS: dict[str, Callable[[Query], object]] = {
    "sqlite": compile_fts5,  # sqlite+tantivy checks as sqlite does
    "postgresql": PgCompiler(Tokenizer()).compile,
}

#: Each filter argument given alone, with the argument its query part is named by.
ANSWERED: list[tuple[dict[str, Any], str]] = [
    ({"query": "from:brandt heating"}, "query"),
    ({"query": "has:attachment filename:pdf is:flagged larger:1M -subject:x"}, "query"),
    ({"query": "label:work"}, "query"),
    ({"from": "brandt"}, "from"),
    ({"to": "ann"}, "to"),
    ({"cc": "bob"}, "cc"),
    ({"subject": "heating"}, "subject"),
    ({"body": "boiler"}, "body"),
    ({"since": "2024-01-01"}, "since"),
    ({"before": "2024-01-01"}, "before"),
    ({"last_days": 7}, "last_days"),
    ({"unread_only": True}, "unread_only"),
    ({"flagged": True}, "flagged"),
    ({"flagged": False}, "flagged"),
    ({"has_keyword": "$Important"}, "has_keyword"),
    ({"larger_than_bytes": 1000}, "larger_than_bytes"),
    ({"smaller_than_bytes": 1000}, "smaller_than_bytes"),
]
#: Each filter the index cannot answer, with the argument the refusal names.
REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"needs_reply": True}, "needs_reply"),
    ({"query": "bcc:ann"}, "query"),
    ({"query": "heating OR bcc:ann"}, "query"),
    ({"from": "@"}, "from"),
    ({"subject": "--"}, "subject"),
]
RANKED_BY = [{"about": "the heating is broken"}, {"like": "imap:default:INBOX:1:1"}]


def _args(**given: Any) -> SearchMessagesInput:
    return SearchMessagesInput.model_validate(given)


def test_every_filter_argument_is_in_the_table() -> None:
    tabled = {name for _, name in ANSWERED + REFUSED} | {"since"}
    assert tabled >= set(FILTER_FIELDS)


#: Each case: the filters, the argument named, and whether the index refuses it.
CASES = [(*case, False) for case in ANSWERED] + [(*case, True) for case in REFUSED]


@pytest.mark.parametrize("engine", CHECKS)
@pytest.mark.parametrize("ranked_by", RANKED_BY, ids=["about", "like"])
@pytest.mark.parametrize(("filters", "argument", "refused"), CASES, ids=[str(case[0]) for case in CASES])
def test_a_filter_is_kept_by_its_argument_or_refused_as_invalid_input_naming_it(
    engine: str, ranked_by: dict[str, str], filters: dict[str, Any], argument: str, refused: bool
) -> None:
    given = next(iter(ranked_by))
    parsed = filters_query(_args(**ranked_by, **filters))
    assert [name for name, _ in parsed.arguments] == [argument]
    if not refused:
        index_answers_filters(parsed, given, CHECKS[engine])
        return
    with pytest.raises(ToolFailure) as failed:
        index_answers_filters(parsed, given, CHECKS[engine])
    failure = failed.value
    assert failure.code is ErrorCode.INVALID_INPUT and failure.details["parameter"] == argument
    assert f"'{given}'" in failure.message and not failure.retryable


def test_the_parts_named_by_argument_make_the_whole_query_in_order() -> None:
    parsed = filters_query(_args(query="heating", subject="radiator", unread_only=True, needs_reply=True))
    assert [name for name, _ in parsed.arguments] == ["query", "subject", "unread_only", "needs_reply"]
    assert filters_query(_args()).arguments == ()


@pytest.mark.parametrize("wordless", ["   ", ".", "-- ?!", "_"])
def test_about_without_a_word_is_invalid_input_naming_it(wordless: str) -> None:
    with pytest.raises(ToolFailure) as refused:
        by_meaning_checked(wordless, None, None)
    assert refused.value.details["parameter"] == "about"


@pytest.mark.parametrize("worded", ["the bill", "Heizung kaputt", "日本", "4411"])
def test_about_with_a_word_in_any_script_ranks_by_meaning(worded: str) -> None:
    assert by_meaning_checked(worded, None, "relevance")
