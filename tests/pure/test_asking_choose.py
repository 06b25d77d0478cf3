"""Which way asks the user (``asking.choose``): every row of the rule, and over every combination of its
inputs the invariants no row may break (an agent never approves a send or a permanent delete itself).
Pure: no client, no page, no server."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TypeVar

import pytest

from mail_imap_mcp.asking.choose import Client, Question, Setup, Way, choose

ASKS = Client(can_ask=True)
ASKS_IN_RESULT = Client(can_ask=True, in_result=True)
CANNOT_ASK = Client()
LISTENS = Client(listens=True)
APPROVED = Client(approved=True)

SEND = Question(approval=True)
LONG_SEND = Question(approval=True, page_only=True)
MOVE_BY_SEARCH = Question(approval=True, confirmable=True)
LONG_MOVE = Question(approval=True, page_only=True, confirmable=True)
RENAME = Question(approval=False)
PERMANENT_DELETE = Question(approval=False, irreversible=True)
PURGE = Question(approval=False, user_only=True)

T = TypeVar("T")
DESKTOP = Setup(page=True)
REMOTE = Setup()
TOKENS_FOR_ALL = Setup(tokens_for_irreversible=True)

ROWS = [
    # Approved in this call (the rerun after the user's "yes"): whatever was asked, whoever asks.
    (APPROVED, SEND, REMOTE, Way.ANSWERED),
    (APPROVED, PURGE, REMOTE, Way.ANSWERED),
    (APPROVED, RENAME, DESKTOP, Way.ANSWERED),
    # An approval: the client asks where it can and the question shows it whole.
    (ASKS, SEND, DESKTOP, Way.ELICIT),
    (ASKS_IN_RESULT, SEND, REMOTE, Way.INPUT_REQUIRED),
    (ASKS, MOVE_BY_SEARCH, REMOTE, Way.ELICIT),
    # ... else the page: in the call when it listens for progress, else in the background.
    (ASKS, LONG_SEND, DESKTOP, Way.PAGE_IN_BACKGROUND),
    (CANNOT_ASK, SEND, DESKTOP, Way.PAGE_IN_BACKGROUND),
    (LISTENS, SEND, DESKTOP, Way.PAGE),
    (Client(can_ask=True, listens=True), LONG_SEND, DESKTOP, Way.PAGE),
    (CANNOT_ASK, MOVE_BY_SEARCH, DESKTOP, Way.PAGE_IN_BACKGROUND),
    # ... else nobody can be asked: refused, unless confirming may stand in (a token).
    (CANNOT_ASK, SEND, REMOTE, Way.REFUSE),
    (ASKS, LONG_SEND, REMOTE, Way.REFUSE),
    (CANNOT_ASK, SEND, TOKENS_FOR_ALL, Way.REFUSE),
    (CANNOT_ASK, MOVE_BY_SEARCH, REMOTE, Way.TOKEN),
    (ASKS, LONG_MOVE, REMOTE, Way.TOKEN),
    # A confirmation that can be undone: a token (the envelope layer asks with it where the client can).
    (CANNOT_ASK, RENAME, REMOTE, Way.TOKEN),
    (ASKS, RENAME, DESKTOP, Way.TOKEN),
    # What cannot be undone: only the user, through the client; a token only with the setting.
    (ASKS, PERMANENT_DELETE, REMOTE, Way.ELICIT),
    (ASKS_IN_RESULT, PERMANENT_DELETE, REMOTE, Way.INPUT_REQUIRED),
    (CANNOT_ASK, PERMANENT_DELETE, DESKTOP, Way.REFUSE),
    (CANNOT_ASK, PERMANENT_DELETE, TOKENS_FOR_ALL, Way.TOKEN),
    # Only the user, whatever the setting (a confirmation with a refusal of its own).
    (ASKS, PURGE, TOKENS_FOR_ALL, Way.ELICIT),
    (CANNOT_ASK, PURGE, TOKENS_FOR_ALL, Way.REFUSE),
]


@pytest.mark.parametrize(("client", "question", "setup", "way"), ROWS)
def test_each_row(client: Client, question: Question, setup: Setup, way: Way) -> None:
    assert choose(client, question, setup) is way


def test_the_rows_reach_every_way() -> None:
    assert {row[-1] for row in ROWS} == set(Way)


def _every(kind: Callable[..., T], fields: tuple[str, ...], **fixed: bool) -> list[T]:
    """``kind`` with every combination of ``fields`` (true or false) but those ``fixed``."""
    free = [name for name in fields if name not in fixed]
    combinations = itertools.product((False, True), repeat=len(free))
    return [kind(**fixed, **dict(zip(free, values, strict=True))) for values in combinations]


QUESTION_FIELDS = ("approval", "page_only", "user_only", "irreversible", "confirmable")
CLIENTS = _every(Client, ("can_ask", "in_result", "listens", "approved"))
APPROVALS = _every(Question, QUESTION_FIELDS, approval=True)
CONFIRMATIONS = _every(Question, QUESTION_FIELDS, approval=False)
SETUPS = _every(Setup, ("page", "tokens_for_irreversible"))


def test_an_approval_is_never_passed_by_a_token_unless_confirming_may_stand_in() -> None:
    for client, question, setup in itertools.product(CLIENTS, APPROVALS, SETUPS):
        assert choose(client, question, setup) is not Way.TOKEN or question.confirmable


def test_what_only_the_user_may_confirm_is_never_passed_by_a_token() -> None:
    for client, question, setup in itertools.product(CLIENTS, CONFIRMATIONS, SETUPS):
        if question.user_only or (question.irreversible and not setup.tokens_for_irreversible):
            assert choose(client, question, setup) is not Way.TOKEN


def test_a_page_is_chosen_only_where_one_can_open_and_a_client_asks_only_where_it_can() -> None:
    for client, question, setup in itertools.product(CLIENTS, [*APPROVALS, *CONFIRMATIONS], SETUPS):
        way = choose(client, question, setup)
        if way in (Way.PAGE, Way.PAGE_IN_BACKGROUND):
            assert setup.page and question.approval
        if way in (Way.ELICIT, Way.INPUT_REQUIRED):
            assert client.can_ask and not (question.approval and question.page_only)
            assert (way is Way.INPUT_REQUIRED) == client.in_result
