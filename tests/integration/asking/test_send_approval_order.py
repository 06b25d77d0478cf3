"""Text a recipient's program draws in another order than it is written is never approved in the question
(issue 89 item 3): imap_send_draft through the SDK's MCP client against the real submission chain
(tests/support/servers/submission.py), each draft of tests/support/mail/reordering_shapes.py (a table's
``<tfoot>`` first, its ``<thead>`` last, its ``<caption>`` after the rows, a bidirectional control in the
HTML, the text, the subject or the sender's name).

- With a client that can ask and no approval page, each is refused with the reason, nobody asked and nothing
  sent.
- With a page, headless Chromium shows it, saying in words why, and "Send" sends it.
- A table in its drawing order is asked in the question, which shows its rows in that order, and sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.support.clients import chromium
from tests.support.clients.chromium import open_approval_page, press_send
from tests.support.clients.elicitation import answering
from tests.support.clients.in_process import open_client
from tests.support.mail.reordering_shapes import IN_ORDER, LUNCH, REORDERINGS, TOTAL, Reordering, drafted
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.send import TOOL, _append, _decided, _delivered, _draft_id, _setup
from tests.support.shared.send_approval_content import _page_app, asked_and_sent, refused_without_a_page

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """The process's approval browser (started once a process)."""
    with chromium.pooled() as driver:
        yield driver


def _drafted(chain: SubmissionDovecot, shape: Reordering) -> tuple[str, str]:
    """A sender whose Drafts hold one draft in ``shape`` to a new recipient: (sender, recipient)."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", drafted(chain.address(sender), chain.address(bob), shape))
    return sender, bob


@pytest.mark.parametrize("name", sorted(REORDERINGS))
async def test_text_drawn_in_another_order_is_refused_with_the_reason_where_no_page_can_open(
    chain: SubmissionDovecot, name: str
) -> None:
    sender, bob = _drafted(chain, REORDERINGS[name])
    assert REORDERINGS[name].reason in await refused_without_a_page(chain, sender, bob)


def _approving(browser: WebDriver, seen: dict[str, Any]) -> Callable[[str], bool]:
    """The user's browser: the page opened in Chromium, its reason kept in ``seen``, and "Send" pressed."""

    def user(url: str) -> bool:
        wait = open_approval_page(browser, url)
        seen["why"] = browser.find_element(By.ID, "page-only").text
        press_send(browser, wait)
        return True

    return user


async def test_a_reordering_subject_is_approved_on_the_page_which_says_why_in_words(
    chain: SubmissionDovecot, browser: WebDriver
) -> None:
    sender, bob = _drafted(chain, REORDERINGS["bidi in the subject"])
    seen: dict[str, Any] = {}
    app = _page_app(chain, sender, _approving(browser, seen))
    accepting = answering("accept")
    async for mcp in open_client(app.config, app, elicitation_callback=accepting):
        answer = await _decided(mcp, await mcp.call(TOOL, {"message_id": await _draft_id(mcp)}))
    assert accepting.asked == []  # the question could not show it as it is drawn: the page asked
    assert answer["success"] and answer["data"]["outcome"] == "sent", answer
    assert "its text holds characters that reorder it as it is drawn (U+202E in Subject)" in seen["why"]
    assert len(await _delivered(chain, bob, 1)) == 1


async def test_a_table_in_its_drawing_order_is_asked_in_the_question_and_sent(
    chain: SubmissionDovecot,
) -> None:
    sender, bob = _drafted(chain, IN_ORDER)
    question = await asked_and_sent(chain, sender)
    html = question[question.index("HTML part as a mail program shows it") :]
    assert html.index("Lunch") < html.index(LUNCH) < html.index(TOTAL)
    assert len(await _delivered(chain, bob, 1)) == 1
