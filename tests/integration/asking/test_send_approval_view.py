"""What the user approves is what a recipient's mail program shows (issue 78 item 1): imap_send_draft through
the SDK's MCP client against the real submission chain (tests/support/servers/submission.py), each draft of
tests/support/mail/approval_shapes.py (text a style adds, an embedded image without alt text, a hidden element,
a comment, a title, a script, a remote image, an ``X-Note:`` header, a MIME preamble or epilogue).

- With a client that can ask (elicitation) and an approval page, the question is never asked: the page is,
  in headless Chromium. It renders the HTML in a sandboxed frame of its own under the view's policy (the
  style's text drawn, the embedded image loaded, the script never run, the hidden element hidden), lists
  the rest in its source (the headers, the preamble, the remote address), a canary HTTP server on loopback
  sees no request while the user reviews, and "Send" sends it as shown.
- Where no page can open, the send is refused with the reason, nothing sent and nobody asked.
- A hostile inbound message forwarded as an attachment brings its HTML along: refused the same way.
- References and In-Reply-To, which every reply carries, are shown in the question, which asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from mail_imap_mcp.app import AppContext
from tests.support.clients import chromium
from tests.support.clients.chromium import open_approval_page, press_send
from tests.support.clients.elicitation import answering
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.approval_shapes import HARMLESS, PIXEL, SECRET, SHAPES, Shape, shaped
from tests.support.servers.loopback_http import RecordingSite, recording_site
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.send import (
    TOOL,
    _append,
    _decided,
    _delivered,
    _draft_id,
    _everywhere,
    _settings,
    _setup,
)
from tests.support.shared.send_approval_content import _page_app, asked_and_sent, refused_without_a_page

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def canary() -> Iterator[RecordingSite]:
    """A web server on loopback that records every request: none may come while the user reviews."""
    with recording_site() as site:
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """The process's approval browser (started once a process, about a CPU-second and a half)."""
    with chromium.pooled() as driver:
        yield driver


def _head(chain: SubmissionDovecot, sender: str, to: str, subject: str = "Lunch") -> str:
    return (
        f"From: Alice <{chain.address(sender)}>\r\nTo: {chain.address(to)}\r\nSubject: {subject}\r\n"
        "Date: Mon, 02 Jan 2023 10:00:00 +0000\r\n"
    )


def _text(browser: WebDriver, selector: str) -> str:
    """All the text of the elements ``selector`` finds, shown or folded away (a closed <details>)."""
    return "\n".join(
        str(element.get_property("textContent"))
        for element in browser.find_elements(By.CSS_SELECTOR, selector)
    )


def _reviewing(browser: WebDriver, canary: RecordingSite, seen: dict[str, Any]) -> Callable[[str], bool]:
    """The user's browser: the page opened in Chromium, what it shows kept in ``seen`` (the canary's
    requests among it, before the user decides), and "Send" pressed."""

    def user(url: str) -> bool:
        wait = open_approval_page(browser, url)
        frame = browser.find_element(By.ID, "html")
        seen["sandbox"] = frame.get_attribute("sandbox")
        seen["src"] = frame.get_attribute("src")
        seen["why"] = browser.find_element(By.ID, "page-only").text
        seen["headers"] = _text(browser, "#headers")
        seen["framing"] = _text(browser, ".framing")
        seen["resources"] = _text(browser, "#resources li")
        seen["source"] = _text(browser, "#html-source")
        browser.switch_to.frame(frame)
        wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
        seen["document"] = browser.execute_script("return document.documentElement.outerHTML")
        seen["view"] = browser.find_element(By.TAG_NAME, "body").text
        seen["before"] = browser.execute_script(
            "return getComputedStyle(document.querySelector('p'), '::before').content"
        )
        pixel = browser.find_elements(By.ID, "pixel")
        seen["pixel"] = pixel[0].get_property("naturalWidth") if pixel else None
        hidden = browser.find_elements(By.ID, "hidden")
        seen["hidden shown"] = hidden[0].is_displayed() if hidden else None
        browser.switch_to.default_content()
        seen["hits"] = list(canary.hits)
        press_send(browser, wait)
        return True

    return user


@pytest.mark.parametrize("name", sorted(SHAPES))
async def test_each_shape_is_approved_on_the_page_rendered_safely_never_in_the_question(
    chain: SubmissionDovecot, browser: WebDriver, canary: RecordingSite, name: str
) -> None:
    shape = SHAPES[name]
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", shaped(_head(chain, sender, bob), shape, canary.url))
    seen: dict[str, Any] = {}
    app = _page_app(chain, sender, _reviewing(browser, canary, seen))
    accepting = answering("accept")
    canary.hits.clear()
    async for mcp in open_client(app.config, app, elicitation_callback=accepting):
        answer = await _decided(mcp, await mcp.call(TOOL, {"message_id": await _draft_id(mcp)}))
    assert accepting.asked == []  # the question could not hold it: the page asked
    assert answer["success"] and answer["data"]["outcome"] == "sent", answer
    assert shape.reason in seen["why"]
    # Rendered in a sandbox of its own origin, as its own response under the view's policy (no script runs,
    # though scripting is on as in a browser), and nothing fetched meanwhile.
    assert seen["sandbox"] == "allow-scripts" and seen["src"].endswith("?view=1")
    assert seen["hits"] == [] and canary.hits == []
    assert HARMLESS in seen["view"] and SECRET not in seen["view"]  # no script ran, nothing hidden shown
    where = {"X-Note header": "headers", "preamble": "framing", "epilogue": "framing"}.get(name, "source")
    assert shape.hidden in seen[where]
    if name == "css-added text":
        assert SECRET in seen["before"]  # drawn before the paragraph, as a recipient's program draws it
    if name == "data image without alt":
        assert seen["pixel"] == 1  # the embedded image loaded (img-src data:)
        assert PIXEL in seen["document"]
    if name == "display:none":
        assert seen["hidden shown"] is False
    if name == "remote image":
        assert seen["resources"] == f"{canary.url}/pixel.png?wire"
    (delivered,) = await _delivered(chain, bob, 1)
    assert shape.hidden.encode() in delivered  # what was shown is what went out


async def test_a_shape_the_question_cannot_show_is_refused_with_the_reason_where_no_page_can_open(
    chain: SubmissionDovecot, canary: RecordingSite
) -> None:
    """One shape through the chain: that each shape is for the page alone, with its reason, is the review's
    (tests/pure/test_send_outgoing.py::test_what_the_questions_text_cannot_show_goes_to_the_page_which_shows_it,
    every shape), and that a review for the page alone is refused where no page can open is the way's
    choice (tests/pure/test_asking_choose.py, the row of a client that asks, a page-only send, no page)."""
    name = "script"
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", shaped(_head(chain, sender, bob), SHAPES[name], canary.url))
    assert SHAPES[name].reason in await refused_without_a_page(chain, sender, bob)


async def test_a_hostile_message_forwarded_as_an_attachment_is_refused_where_no_page_can_open(
    chain: SubmissionDovecot, canary: RecordingSite
) -> None:
    """An inbound newsletter whose style adds a sentence, forwarded as an attachment by the agent: its HTML
    is shown to recipients inside the forward, so the question cannot hold it."""
    sender, bob, carol = _setup(chain)
    inbound = shaped(_head(chain, bob, sender, "News"), SHAPES["css-added text"], canary.url)
    chain.seed(
        sender,
        "INBOX",
        [inbound.replace(b"MIME-Version", b"Message-ID: <news-1@example.net>\r\nMIME-Version")],
    )
    accepting = answering("accept")
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    app = AppContext.from_config(make_config({"default": settings}))  # an HTTP server's: no page
    async for mcp in open_client(app.config, app, elicitation_callback=accepting):
        (found,) = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"]
        saved = await mcp.ok(
            "imap_save_draft",
            {"forward_of": found["message_id"], "forward_as": "attachment", "to": [chain.address(carol)],
             "body_text": "FYI"},
        )  # fmt: skip
        before = _everywhere(chain, sender, [carol])
        refused = await mcp.fail(TOOL, {"message_id": saved["message_id"]}, "permission_denied")
    assert accepting.asked == []
    assert "its HTML part in attachment 1 holds a <style> element" in refused["error"]["details"]["reason"]
    assert _everywhere(chain, sender, [carol]) == before


async def test_the_threads_headers_are_shown_in_the_question_which_asks(chain: SubmissionDovecot) -> None:
    """References and In-Reply-To leave with every reply: the question shows them whole, so it may ask."""
    sender, bob, _ = _setup(chain)
    references = "<q1@example.net>\r\n <wire-9800-EUR@example.net>"
    head = _head(chain, sender, bob) + f"In-Reply-To: <q2@example.net>\r\nReferences: {references}\r\n"
    _append(chain, sender, "Drafts", shaped(head, Shape()))
    lines = (await asked_and_sent(chain, sender)).splitlines()
    assert "References: <q1@example.net> <wire-9800-EUR@example.net>" in lines
    assert "In-Reply-To: <q2@example.net>" in lines
    assert len(await _delivered(chain, bob, 1)) == 1
