"""The gate of one call (``asking/gate.py``) says what the user answered on a page in the request's own
words: one answer vocabulary (``Answer``), and only a send's decline is called ``dont_send``. Pure: a page
stands in for the browser."""

from __future__ import annotations

import pytest

from mail_imap_mcp.asking.answers import Answer
from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.envelope.user_call import UserCall
from mail_imap_mcp.services.send_review import SEND_WORDS

MOVE = Review(title="Move 300 messages to Trash:", closing="Move them")
SEND = MOVE.model_copy(update={"words": SEND_WORDS})


def _refusal(review: Review, answer: Answer) -> ToolFailure:
    gate = ConfirmationGate().for_call(UserCall("imap_apply_to_messages", {"query": "from:news"}))
    with pytest.raises(ToolFailure) as refused:
        gate.require_approval(review, lambda shown, digest, render: answer)
    return refused.value


@pytest.mark.parametrize(("review", "said"), [(MOVE, "declined"), (SEND, "dont_send")])
def test_a_decline_is_said_in_the_requests_words(review: Review, said: str) -> None:
    refused = _refusal(review, Answer.DECLINED)
    assert refused.details == {"approval": said} and f"({said})" in refused.message
    assert refused.code.value == "confirmation_required" and not refused.retryable


@pytest.mark.parametrize(
    ("answer", "words"),
    [(Answer.CANCELLED, MOVE.words.cancelled), (Answer.OPENED_TWICE, MOVE.words.opened_twice)],
)
def test_an_ending_without_a_decision_says_so(answer: Answer, words: str) -> None:
    refused = _refusal(MOVE, answer)
    assert refused.details == {"approval": answer.value} and refused.message == words


def test_an_expired_page_and_a_page_that_could_not_open() -> None:
    assert _refusal(SEND, Answer.EXPIRED).details == {"approval": "expired"}
    unavailable = _refusal(MOVE, Answer.UNAVAILABLE)
    assert unavailable.code.value == "permission_denied" and unavailable.details == {
        "approval": "unavailable"
    }


def test_approval_on_the_page_passes() -> None:
    gate = ConfirmationGate().for_call(UserCall("imap_send_draft", {"message_id": "m"}))
    gate.require_approval(SEND, lambda shown, digest, render: Answer.APPROVED)
