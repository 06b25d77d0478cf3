"""The approval page's rules without a socket: its tokens, expiry (a moved clock), who may answer, and
what the page shows (issue 49). The same rules in a real browser: tests/integration/asking/test_approval_browser.py."""

from __future__ import annotations

import re
from html import escape

import pytest
from pydantic import ValidationError

from mail_imap_mcp.asking.page_server import Outcome
from mail_imap_mcp.asking.page_server.page import (
    PAGE_HEADERS,
    VIEW_HEADERS,
    VIEW_POLICY,
    answer_page,
    approval_page,
    review_page,
)
from mail_imap_mcp.asking.page_server.slot import Answer, ApprovalSlot, Opening, host_allowed, origin_allowed
from mail_imap_mcp.asking.review import Review, ReviewContent, ReviewField
from mail_imap_mcp.mail.bulk import BulkSearch
from mail_imap_mcp.presentation.bulk import SampleMessage, checked_search, review_of
from mail_imap_mcp.services import send_page
from mail_imap_mcp.services.send_page import MessagePage
from tests.support.mail.approval_shapes import PIXEL

DIGEST = "sha256:" + "ab" * 32
OTHER_DIGEST = "sha256:" + "cd" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def slot(clock: Clock) -> ApprovalSlot:
    return ApprovalSlot(DIGEST, 300.0, clock)


def test_the_slot_repr_holds_no_secret(slot: ApprovalSlot) -> None:
    assert slot.path_token not in repr(slot) and slot.csrf_token not in repr(slot)


def test_tokens_are_random_long_and_distinct(clock: Clock) -> None:
    slots = [ApprovalSlot(DIGEST, 300.0, clock) for _ in range(50)]
    tokens = [token for slot in slots for token in (slot.path_token, slot.csrf_token)]
    assert len(set(tokens)) == 100
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", token) for token in tokens)  # 256 bits
    assert all(slot.csrf_token not in slot.path for slot in slots)


def test_approve_after_the_page_was_shown_approves_with_the_digest(slot: ApprovalSlot) -> None:
    assert slot.open(slot.path) is Opening.SHOW
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "approve") is Answer.APPROVED
    decision = slot.decision
    assert decision is not None and decision.approved and decision.digest == DIGEST
    assert decision.approves(DIGEST) and not decision.approves(OTHER_DIGEST)


def test_decline_decides_without_a_digest(slot: ApprovalSlot) -> None:
    slot.open(slot.path)
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "decline") is Answer.DECLINED
    assert slot.decision is not None and slot.decision.outcome is Outcome.DECLINED
    assert slot.decision.digest is None and not slot.decision.approved and not slot.decision.approves(DIGEST)


def test_the_first_decision_stands(slot: ApprovalSlot) -> None:
    slot.open(slot.path)
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "decline") is Answer.DECLINED
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "approve") is Answer.DECIDED
    assert slot.open(slot.path) is Opening.DECIDED
    slot.end(Outcome.APPROVED)
    assert slot.decision is not None and slot.decision.outcome is Outcome.DECLINED


@pytest.mark.parametrize(
    ("csrf", "digest", "choice"),
    [
        ("wrong", DIGEST, "approve"),  # a token of another page
        (None, DIGEST, "approve"),
        ("", DIGEST, "approve"),
        ("<csrf>", OTHER_DIGEST, "approve"),  # the right page, another message's digest
        ("<csrf>", None, "approve"),
    ],
)
def test_a_wrong_token_or_digest_decides_nothing(
    slot: ApprovalSlot, csrf: str | None, digest: str | None, choice: str
) -> None:
    slot.open(slot.path)
    given = slot.csrf_token if csrf == "<csrf>" else csrf
    assert slot.answer(slot.path, given, digest, choice) is Answer.FORBIDDEN
    assert slot.outcome is None
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "approve") is Answer.APPROVED


def test_another_messages_tokens_decide_nothing(clock: Clock) -> None:
    first, second = ApprovalSlot(DIGEST, 300.0, clock), ApprovalSlot(OTHER_DIGEST, 300.0, clock)
    first.open(first.path)
    second.open(second.path)
    assert second.answer(second.path, first.csrf_token, OTHER_DIGEST, "approve") is Answer.FORBIDDEN
    assert second.answer(second.path, second.csrf_token, DIGEST, "approve") is Answer.FORBIDDEN
    assert second.answer(first.path, second.csrf_token, OTHER_DIGEST, "approve") is Answer.NOT_FOUND
    assert first.outcome is None and second.outcome is None


def test_an_unknown_choice_decides_nothing(slot: ApprovalSlot) -> None:
    slot.open(slot.path)
    for choice in (None, "", "APPROVE", "yes", "send"):  # issue 79: "send" is no word of a generic page
        assert slot.answer(slot.path, slot.csrf_token, DIGEST, choice) is Answer.BAD_REQUEST
    assert slot.outcome is None


def test_an_answer_to_a_page_never_shown_decides_nothing(slot: ApprovalSlot) -> None:
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "approve") is Answer.FORBIDDEN
    assert slot.outcome is None


def test_another_address_is_not_found_and_changes_nothing(slot: ApprovalSlot) -> None:
    for path in ("/", "/favicon.ico", "/approve/", slot.path + "x", slot.path[:-1], slot.path.upper()):
        assert slot.open(path) is Opening.NOT_FOUND
    assert not slot.shown and slot.outcome is None
    assert slot.open(slot.path) is Opening.SHOW


def test_a_second_opening_voids_the_approval(slot: ApprovalSlot) -> None:
    assert slot.open(slot.path) is Opening.SHOW
    assert slot.open(slot.path) is Opening.OPENED_TWICE
    assert slot.decision is not None and slot.decision.outcome is Outcome.OPENED_TWICE
    # The page opened first can no longer answer.
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "approve") is Answer.DECIDED
    assert slot.decision.digest is None


def test_the_page_expires_on_the_clock(slot: ApprovalSlot, clock: Clock) -> None:
    slot.open(slot.path)
    clock.now += 299.9
    assert not slot.expire_if_due()
    clock.now += 0.2  # past the lifetime: never moved by exactly a limit
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "approve") is Answer.EXPIRED
    assert slot.decision is not None and slot.decision.outcome is Outcome.EXPIRED
    clock.now -= 1000  # a clock that went back does not revive it
    assert slot.answer(slot.path, slot.csrf_token, DIGEST, "approve") is Answer.EXPIRED
    assert slot.decision.outcome is Outcome.EXPIRED


def test_an_expired_address_is_not_shown(slot: ApprovalSlot, clock: Clock) -> None:
    clock.now += 300 + 1
    assert slot.open(slot.path) is Opening.EXPIRED
    assert not slot.shown


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:4711", True),
        ("localhost:4711", True),
        ("LOCALHOST:4711", True),
        ("127.0.0.1", False),
        ("localhost", False),
        ("127.0.0.1:4712", False),
        ("rebound.example:4711", False),
        ("127.0.0.1.nip.io:4711", False),
        ("[::1]:4711", False),
        ("127.0.0.1:4711@evil.example", False),
        (None, False),
        ("", False),
    ],
)
def test_only_the_listener_itself_is_an_allowed_host(host: str | None, allowed: bool) -> None:
    assert host_allowed(host, 4711) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1:4711", True),
        ("http://localhost:4711", True),
        ("null", False),
        (None, False),
        ("https://127.0.0.1:4711", False),
        ("http://127.0.0.1:4712", False),
        ("http://rebound.example:4711", False),
        ("http://127.0.0.1:4711.evil.example", False),
    ],
)
def test_only_the_page_itself_is_an_allowed_origin(origin: str | None, allowed: bool) -> None:
    assert origin_allowed(origin, 4711) is allowed


def _request(**fields: object) -> MessagePage:
    return MessagePage.model_validate({"digest": DIGEST, "from": "Ann <ann@example.org>", **fields})


def test_the_page_shows_every_field_escaped() -> None:
    request = _request(
        to=["Bob <bob@example.org>", '"<b>x</b>" <x@example.org>'],
        cc=["cc@example.org"],
        bcc=["hidden@example.org"],
        reply_to=["other@example.net"],
        subject="Q3 & <figures>",
        text="Line one\n<script>alert(1)</script>",
        attachments=[{"name": "report.pdf", "size": 123456, "content_type": "application/pdf"}],
    )
    page = approval_page(request, "CSRFTOKEN", 300)
    for shown in ("bob@example.org", "&lt;b&gt;x&lt;/b&gt;", "cc@example.org", "hidden@example.org"):
        assert shown in page
    assert "other@example.net" in page and "Q3 &amp; &lt;figures&gt;" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page
    assert "report.pdf" in page and "120.6 KB (123,456 bytes)" in page
    assert 'name="csrf" value="CSRFTOKEN"' in page and f'name="digest" value="{DIGEST}"' in page
    assert '<form method="post">' in page  # posted to its own address, the token in the body


def test_the_html_body_is_rendered_only_in_a_sandboxed_frame_of_its_own_as_it_is_sent() -> None:
    html = (
        '<p onclick="x()">Hello <b>there</b></p><script>steal()</script><img src="http://tracker.example/p.png">'
        '<style>p{}</style><iframe src="http://evil.example/"></iframe><a href="javascript:x()">link</a>'
        '<form action="http://evil.example/"><button>Send</button></form>"></iframe><script>x()</script>'
    )
    request = _request(html=html, views=[html])
    page = approval_page(request, "T", 300)
    (frame,) = re.findall(r"<iframe [^>]*>", page)
    # Its own opaque origin (no allow-same-origin), nothing but scripting on (which the view's policy stops).
    assert frame.startswith('<iframe id="html" class="view" sandbox="allow-scripts" title=')
    assert frame.endswith('src="?view=1">') and "srcdoc" not in page
    assert request.view(1) == html and request.view(0) is None and request.view(2) is None
    # Outside its own response, the HTML is text: no element of it reaches the page.
    outside = page.replace(frame, "")
    for gone in ("<script", "<img", "<style>p", "<form action", "<button>Send", 'onclick="', "<iframe"):
        assert gone not in outside
    # All of it, as text, in the source section: nothing the HTML sends is kept from the user.
    source = page.split('id="html-source">', 1)[1].split("</pre>", 1)[0]
    assert source == escape(html, quote=True)


def test_invisible_characters_are_shown_as_code_points() -> None:
    page = approval_page(
        _request(to=["ann@example.org\u202egro.live@"], subject="a\r\nBcc: x", text="a\tb\nc\u200fd"),
        "T",
        300,
    )
    assert "\u202e" not in page and "U+202E" in page
    assert "U+000D" in page and "U+000A" in page  # a line break in a header is shown, not followed
    assert "a\tb\nc" in page and "U+200F" in page  # the text keeps its tabs and lines


def test_a_domain_in_other_letters_is_shown_as_it_is_looked_up() -> None:
    page = approval_page(
        _request(
            **{
                "from": "Ann <ann@example.org>",
                "to": ["Bob <bob@ex\u0430mple.net>", "zoe@b\u00fccher.example"],
            }
        ),
        "T",
        300,
    )
    assert "domain xn--exmple-4nf.net" in page and "domain xn--bcher-kva.example" in page
    assert page.count('class="mark idna"') == 2  # none for the ASCII domain
    broken = approval_page(_request(to=["x@\u00e4" + "a" * 70 + ".example"]), "T", 300)
    assert "not a valid domain name" in broken


def test_every_response_forbids_other_origins_and_remote_loads() -> None:
    headers = dict(PAGE_HEADERS)
    policy = headers["Content-Security-Policy"]
    assert (
        "default-src 'none'" in policy
        and "form-action 'self'" in policy
        and "frame-ancestors 'none'" in policy
    )
    assert not re.search(r"https?:|\*", policy)
    assert headers["Referrer-Policy"] == "same-origin" and headers["Cache-Control"] == "no-store"
    assert not any(name.lower().startswith("access-control-") for name in headers)
    assert "<script" not in answer_page("<b>", "<i>")


def test_the_views_policy_lets_it_show_styles_and_data_images_and_nothing_else() -> None:
    policy = dict(VIEW_HEADERS)["Content-Security-Policy"]
    assert policy == VIEW_POLICY and policy.startswith(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:;"
    )
    assert "script-src" not in policy and "unsafe-eval" not in policy and not re.search(r"https?:|\*", policy)
    assert "frame-ancestors 'self'" in policy and policy.endswith("sandbox allow-scripts")
    assert "frame-src 'self'" in dict(PAGE_HEADERS)["Content-Security-Policy"]  # the page frames its views


@pytest.mark.parametrize(
    "fields",
    [
        {"digest": "short"},
        {"digest": "has space in it 0123456789"},
        {"to": ["x@example.org"] * 10_001},
        {"text": "x" * 1_000_001},
        {"attachments": [{"name": "a", "size": -1}]},
        {"unknown": 1},
    ],
)
def test_a_request_beyond_the_bounds_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MessagePage.model_validate({"digest": DIGEST, "from": "a@example.org", **fields})


def test_any_review_is_shown_whole_and_escaped_on_the_generic_page() -> None:
    """Issue 58 item 2: the page is not send-shaped; a review without a renderer of its own (a bulk
    delete, say) is shown with the generic words, every field and each content whole."""
    review = Review(
        title="delete 3 messages <for good>:",
        fields=[
            ReviewField(label="Mailbox", values=["Old\u202e", "<b>x</b>"]),
            ReviewField(label="Flags", empty="none"),
        ],
        contents=[ReviewContent(label="Subjects", text="line one\nline <two>")],
        closing="Delete them",
    )
    page = approval_page(review_page(review, DIGEST), "T", 300)
    assert "<h1>Approve this?</h1>" in page and "delete 3 messages &lt;for good&gt;:" in page
    assert '<div>Old<span class="mark">U+202E</span></div><div>&lt;b&gt;x&lt;/b&gt;</div>' in page
    assert "<th>Flags</th><td>none</td>" in page
    assert "<pre>line one\nline &lt;two&gt;</pre>" in page
    assert ">Approve</button>" in page and ">Don't approve</button>" in page and "nothing is done" in page
    assert "sent" not in page.lower()  # no word of a message to send
    assert f'name="digest" value="{DIGEST}"' in page
    with pytest.raises(ValueError):
        review_page(review, "not a digest")


def test_a_bulk_runs_question_names_its_newest_matches_once_above_them() -> None:
    """Issue 78 (low list): "Among them (newest 10):" began each of the ten lines, as a recipient's "To:"
    does; it is said once now, the matches indented below it."""
    mailbox, tree = checked_search("from:news", "INBOX")
    sample = [
        SampleMessage.model_validate(
            {
                "message_id": f"imap:default:INBOX:1:{n}",
                "date": f"2026-11-0{n}",
                "from": "news@example.com",
                "subject": f"Issue {n}",
            }
        )
        for n in (2, 1)
    ]
    asked = review_of("Delete", 2, BulkSearch("default", mailbox, "from:news", tree), sample)
    lines = asked.question().splitlines()
    start = lines.index("Among them (newest 2):")
    assert lines[start + 1 : start + 3] == [
        "  2026-11-02  news@example.com  Issue 2",
        "  2026-11-01  news@example.com  Issue 1",
    ]
    assert sum("Among them" in line for line in lines) == 1


def _with_images(inline: str, attached: str) -> bytes:
    return (
        "From: ann@example.org\r\nTo: bob@example.net\r\nSubject: Pictures\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Logo:</p><img src=cid:logo@x>\r\n"
        f"--b\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n{inline}\r\n"
        "--b\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=photo.png\r\n"
        f"Content-Transfer-Encoding: base64\r\n\r\n{attached}\r\n--b--\r\n"
    ).encode()


def test_images_are_drawn_inline_first_and_an_attached_one_beyond_the_bound_only_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = send_page.message_page(DIGEST, _with_images(PIXEL, PIXEL))
    logo = f"data:image/png;base64,{PIXEL}"
    assert page.pictures == {0: logo, 1: logo} and page.views == [f'<p>Logo:</p><img src="{logo}">']
    monkeypatch.setattr(send_page, "MAX_PICTURE_BYTES", 100)  # the pixel is 70 bytes: one fits
    assert send_page.message_page(DIGEST, _with_images(PIXEL, PIXEL)).pictures == {0: logo}
    monkeypatch.setattr(send_page, "MAX_PICTURE_BYTES", 50)  # the inline one cannot be shown whole
    with pytest.raises(ValueError, match="more than the page shows"):
        send_page.message_page(DIGEST, _with_images(PIXEL, PIXEL))


def test_an_attached_image_with_a_content_id_beyond_the_bound_is_only_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An attached image that does not fit is shown by name, as any file, even where it has a Content-ID
    (as Apple Mail and Outlook give attachments): its missing picture kept the page from being built
    (a KeyError), so the draft could not be approved at all."""
    message = _with_images(PIXEL, PIXEL).replace(
        b"Content-Disposition: attachment; filename=photo.png\r\n",
        b"Content-Disposition: attachment; filename=photo.png\r\nContent-ID: <photo@x>\r\n",
    )
    monkeypatch.setattr(send_page, "MAX_PICTURE_BYTES", 100)  # the pixel is 70 bytes: the inline one fits
    page = send_page.message_page(DIGEST, message)
    assert page.pictures == {0: f"data:image/png;base64,{PIXEL}"}
    assert [item.name for item in page.attachments][1] == "photo.png"


def test_an_image_drawn_many_times_cannot_make_the_view_unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``cid:`` reference of an image is its whole ``data:`` address in the view: a few thousand
    references of a large image made a view of gigabytes. A view beyond :data:`send_page.MAX_VIEW_CHARS`
    cannot be shown whole, so the message is not approvable on the page."""
    many = _with_images(PIXEL, PIXEL).replace(b"<img src=cid:logo@x>", b"<img src=cid:logo@x>" * 20)
    assert len(send_page.message_page(DIGEST, many).views[0]) > 20 * len(PIXEL)
    monkeypatch.setattr(send_page, "MAX_VIEW_CHARS", 10 * len(PIXEL))
    with pytest.raises(ValueError, match="more than the page shows"):
        send_page.message_page(DIGEST, many)
