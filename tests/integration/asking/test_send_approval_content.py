"""What the user approves is what goes out, and approval pages are bounded (issue 56 items 2 and 10):
imap_send_draft through the SDK's MCP client against the real submission chain (tests/support/servers/submission.py),
the user asked by elicitation (tests/support/clients/elicitation.py) or on the approval page, answered as a browser
does or in headless Chromium.

- The whole text is shown with its lines, its tail too; an HTML part that says more than the text, or a text
  longer than a question shows, is approved on the page only, and refused where no page can open.
- At most one approval page per account: ten sends in a row open one page, the others are ``conflict``.
- A page reloaded is reported as reopened, not as the user's "Don't send", and the page says so beforehand.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import anyio
import pytest

from tests.support.clients import chromium
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.patience import eventually, eventually_async
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.send import (
    TOOL,
    _answer_page,
    _append,
    _draft,
    _draft_id,
    _everywhere,
    _opened_later,
    _settings,
    _setup,
)
from tests.support.shared.send_approval_content import _page_app, refused_without_a_page

pytestmark = pytest.mark.anyio

#: 608 characters anyone would approve: what the question used to show of a message (600 of them).
HARMLESS = "Thanks for lunch, see you soon. " * 19
TAIL = "PS: before Friday please wire 9,800 EUR to IBAN DE89 3704 0044 0532 0130 00."


def _alternative(sender: str, to: str, text: str, html: str) -> bytes:
    """A draft with a text part and an HTML alternative, as a mail client saves it."""
    body = (
        'MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary="alt"\r\n\r\n'
        f"--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
        f"--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n--alt--\r\n"
    )
    plain = _draft(sender, [to], subject="Lunch", body="")
    head = plain.split(b"MIME-Version: 1.0", 1)[0]
    return head + body.encode()


async def _polled(mcp: EnvelopeClient, operation_id: str) -> dict[str, Any]:
    """The background send's end (imap_get_operation): its state, and its result or error."""

    async def ended() -> dict[str, Any] | None:
        detail = await mcp.ok("imap_get_operation", {"operation_id": operation_id})
        return None if detail["operation"]["state"] in ("accepted", "running") else detail

    return await eventually_async(ended, within=60, what="the send's end")


async def _page_opened(urls: list[str], pages: int = 1) -> None:
    """Wait until the ``pages``-th page has opened (on the page's own thread, after the call answered)."""

    async def opened() -> bool:
        return len(urls) >= pages

    await eventually_async(opened, what=f"page {pages} opened")


async def test_the_question_shows_the_whole_text_with_its_lines_and_the_tail_goes_out_as_shown(
    chain: SubmissionDovecot,
) -> None:
    """The first 600 characters harmless, the tail asking for money: the user reads the tail, line by line,
    in the question (and the HTML part as rendered text) before it is sent."""
    sender, bob, _ = _setup(chain)
    text = f"{HARMLESS}\r\nSee you,\r\nAlice\r\n{TAIL}"
    html = f"<p>{HARMLESS}</p><p>See you,<br>Alice</p><p>{TAIL}</p>"
    _append(chain, sender, "Drafts", _alternative(chain.address(sender), chain.address(bob), text, html))
    accepting = answering("accept")
    settings = _settings(chain, sender, chain.submission_port, "starttls")
    async for mcp in open_client(make_config({"default": settings}), elicitation_callback=accepting):
        data = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
    assert data["outcome"] == "sent"
    (question,) = accepting.asked
    lines = question.splitlines()
    assert HARMLESS in lines and "See you," in lines and "Alice" in lines
    assert lines.count(TAIL) == 2  # the text, and the HTML part as a mail program shows it
    assert any(line.startswith("HTML part as a mail program shows it") for line in lines)


async def test_an_html_part_saying_more_than_the_text_is_approved_on_the_page_even_with_elicitation(
    chain: SubmissionDovecot,
) -> None:
    """A harmless text part and an HTML part that asks for a transfer: the client's question is not used
    (it would not show the HTML as a reader sees it); the page shows it, and the user's "Send" there sends."""
    sender, bob, _ = _setup(chain)
    html = f"<p>{HARMLESS}</p><p>{TAIL}</p>"
    _append(chain, sender, "Drafts", _alternative(chain.address(sender), chain.address(bob), HARMLESS, html))
    seen: list[str] = []
    app = _page_app(chain, sender, lambda url: _answer_page(url, "approve", seen))
    accepting = answering("accept")
    before = _everywhere(chain, sender, [bob])
    async for mcp in open_client(app.config, app, elicitation_callback=accepting):
        answer = await mcp.call(TOOL, {"message_id": await _draft_id(mcp)})
        background = answer["data"]["background"]  # waited for in the call or in the background
        result = (
            answer["data"]
            if background is None
            else (await _polled(mcp, background["operation_id"]))["result"]
        )
    assert accepting.asked == []
    (page,) = seen
    assert "IBAN DE89 3704 0044 0532 0130 00" in page
    assert result["outcome"] == "sent"
    eventually(lambda: _everywhere(chain, sender, [bob])[f"{bob}/INBOX"] == 1, what="delivery")
    assert _everywhere(chain, sender, [bob])["relayed"] == before["relayed"] + 1


async def test_a_text_too_long_for_a_question_is_refused_with_the_reason_where_no_page_can_open(
    chain: SubmissionDovecot,
) -> None:
    """4,500 characters and a client that can ask but no approval page (an HTTP server): never a shortened
    question; refused, saying why, with nothing sent and nobody asked."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)], body="word " * 900))
    assert "more than a question shows (4,000)" in await refused_without_a_page(chain, sender, bob)


async def test_a_text_that_cannot_be_read_is_refused_before_anyone_is_asked(chain: SubmissionDovecot) -> None:
    """A text part in a charset nobody knows was shown as "(the text could not be read)" and sent whole
    on a "yes": now it is refused, naming the charset, before the user is asked."""
    sender, bob, _ = _setup(chain)
    raw = _draft(chain.address(sender), [chain.address(bob)], body="Pay now\r\n")
    _append(chain, sender, "Drafts", raw.replace(b"charset=utf-8", b"charset=x-unknown-9"))
    accepting = answering("accept")
    settings = _settings(chain, sender, chain.submission_port, "starttls")
    before = _everywhere(chain, sender, [bob])
    async for mcp in open_client(make_config({"default": settings}), elicitation_callback=accepting):
        refused = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "invalid_input")
    assert accepting.asked == [] and "x-unknown-9" in refused["error"]["message"]
    assert refused["error"]["details"]["reason"] == "malformed"
    assert _everywhere(chain, sender, [bob]) == before


async def test_ten_sends_in_a_row_open_one_page_and_the_others_are_conflict(chain: SubmissionDovecot) -> None:
    """Ten drafts sent one after the other by a client without elicitation: one page opens; the nine others
    answer conflict saying a page is open, and nothing is sent."""
    sender, bob, _ = _setup(chain)
    for number in range(10):
        raw = _draft(chain.address(sender), [chain.address(bob)], subject=f"Note {number}")
        _append(chain, sender, "Drafts", raw)
    urls: list[str] = []
    app = _page_app(chain, sender, _opened_later(urls), background_after_s=0)
    before = _everywhere(chain, sender, [bob])
    async for mcp in open_client(app.config, app):  # no elicitation, no progressToken
        answers = [
            await mcp.call(TOOL, {"message_id": await _draft_id(mcp, f"Note {number}")})
            for number in range(10)
        ]
        waiting = [answer for answer in answers if answer["success"]]
        (first,) = waiting
        operation_id = first["data"]["background"]["operation_id"]
        await _page_opened(urls)
        await mcp.ok("imap_cancel_operation", {"operation_id": operation_id})
        await _polled(mcp, operation_id)
    assert len(urls) == 1 and answers[0] is first
    for refused in answers[1:]:
        assert refused["error"]["code"] == "conflict"
        assert refused["error"]["details"]["state"] == "page_open"
        assert "already open" in refused["error"]["message"]
    assert _everywhere(chain, sender, [bob]) == before


@pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed")
async def test_a_page_reloaded_in_chromium_is_reported_as_reopened_not_as_declined(
    chain: SubmissionDovecot,
) -> None:
    """The page says beforehand what a reload does; the user reloads it in Chromium: the request is
    cancelled, the agent is told the page was opened again (not that the user declined), nothing is sent,
    and the account may show a new page."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    urls: list[str] = []
    app = _page_app(chain, sender, _opened_later(urls), background_after_s=0)
    before = _everywhere(chain, sender, [bob])
    async for mcp in open_client(app.config, app):  # no elicitation, no progressToken
        draft = await _draft_id(mcp)
        waiting = await mcp.call(TOOL, {"message_id": draft})
        await _page_opened(urls)
        shown, reloaded = await anyio.to_thread.run_sync(chromium.reload_approval, urls[0])
        detail = await _polled(mcp, waiting["data"]["background"]["operation_id"])
        again = await mcp.call(TOOL, {"message_id": draft})  # the page is closed: a new one may open
        await _page_opened(urls, 2)
        await mcp.ok("imap_cancel_operation", {"operation_id": again["data"]["background"]["operation_id"]})
    assert detail["operation"]["state"] == "failed"
    assert detail["error"]["details"] == {"approval": "opened_twice"}
    assert "did not decline" in detail["error"]["message"]
    assert "Reloading or reopening it (a restored tab too) cancels the request" in shown
    assert reloaded.startswith("Request cancelled") and "Nothing was sent" in reloaded
    assert len(urls) == 2 and urllib.parse.urlsplit(urls[0]).path not in str(detail)
    assert _everywhere(chain, sender, [bob]) == before
