"""A saved draft as it goes out (smtp/outgoing.py): the bytes with only Date replaced, a Message-ID added and
Bcc left out; what the user is shown, with control characters escaped; the hostile drafts refused; and the
approval bound to what was shown (a changed draft is asked about again). Pure: no server."""

from __future__ import annotations

import base64
import hashlib
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from mail_imap_mcp.asking.answers import Answer
from mail_imap_mcp.asking.choose import Way
from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.content.invitations import answer_invitation
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.envelope.user_call import ASK_USER, UserCall, approval_digest, question
from mail_imap_mcp.services.send_page import MessageRenderer, message_page
from mail_imap_mcp.services.send_parts import displayed
from mail_imap_mcp.services.send_review import review
from mail_imap_mcp.smtp.client import dot_stuffed, dot_stuffed_chunks
from mail_imap_mcp.smtp.outgoing import MAX_SEND_RECIPIENTS, outgoing, rewritten, rewritten_head
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable
from tests.support.mail.approval_shapes import SHAPES, Shape, shaped
from tests.support.mail.invitations import google

OWN = frozenset({"me@example.org"})
NOW = datetime(2025, 11, 21, 8, 30, tzinfo=UTC)
DRAFT = (
    b"From: Me <me@example.org>\r\nTo: Bob <bob@example.com>\r\nBcc: hidden@example.com\r\n"
    b"Subject: Plans\r\nDate: Mon, 02 Jan 2023 10:00:00 +0000\r\nX-Folded: one\r\n two\r\n"
    b"Message-ID: <d1@example.org>\r\n\r\n.dot\r\nBody\r\n"
)

#: DRAFT without its X-Folded header: everything it sends, the question shows.
PLAIN = DRAFT.replace(b"X-Folded: one\r\n two\r\n", b"")


def _review(raw: bytes) -> Review:
    """What the user is asked to approve ``raw`` by."""
    return review(outgoing(raw, OWN, "example.org"), raw, "default")


def _shown(raw: bytes) -> str:
    """The question the user approves ``raw`` by."""
    return _review(raw).question()


def test_only_date_and_bcc_change_in_the_transmitted_copy_and_the_sent_copy_keeps_bcc() -> None:
    sent = rewritten(DRAFT, date="Tue, 01 Dec 2026 00:00:00 GMT", header_id=None, keep_bcc=False)
    assert sent == (
        b"Date: Tue, 01 Dec 2026 00:00:00 GMT\r\nFrom: Me <me@example.org>\r\nTo: Bob <bob@example.com>\r\n"
        b"Subject: Plans\r\nX-Folded: one\r\n two\r\nMessage-ID: <d1@example.org>\r\n\r\n.dot\r\nBody\r\n"
    )
    kept = rewritten(DRAFT, date="D", header_id=None, keep_bcc=True)
    assert b"Bcc: hidden@example.com\r\n" in kept and kept.endswith(b"\r\n\r\n.dot\r\nBody\r\n")
    assert dot_stuffed(b"a\n.b\r\n") == b"a\r\n..b\r\n.\r\n"


def test_the_user_is_shown_every_recipient_and_the_fingerprint() -> None:
    message = outgoing(DRAFT, OWN, "example.org")
    shown = _shown(DRAFT)
    for line in ("From: Me <me@example.org>", "To: Bob <bob@example.com>", "Bcc: hidden@example.com",
                 "Subject: Plans", "Attachments: none", "Message-ID: <d1@example.org>"):  # fmt: skip
        assert line in shown.splitlines()
    assert "\n```\n.dot\nBody\n```\n" in shown
    assert message.recipients == ("bob@example.com", "hidden@example.com")
    assert outgoing(DRAFT.replace(b"Body", b"B0dy"), OWN, "example.org").fingerprint != message.fingerprint


def test_a_draft_without_message_id_gets_one_from_its_content_the_same_each_time() -> None:
    bare = DRAFT.replace(b"Message-ID: <d1@example.org>\r\n", b"")
    first, second = outgoing(bare, OWN, "example.org"), outgoing(bare, OWN, "example.org")
    assert (
        first.id_added and first.header_id == second.header_id and first.header_id.endswith("@example.org>")
    )
    assert "(added to the draft)" in _shown(bare)
    assert rewritten(bare, date="D", header_id=first.header_id, keep_bcc=False).startswith(
        f"Date: D\r\nMessage-ID: {first.header_id}\r\n".encode()
    )


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ((b"From: Me <me@example.org>", b"From: Mallory <m@evil.example>"), DraftUnsendable.SENDER_NOT_OWN),
        ((b"Subject: Plans\r\n", b"Subject: Plans\r\nTo: eve@evil.example\r\n"), DraftUnsendable.REPEATED_HEADER),
        ((b"To: Bob <bob@example.com>", b"To: =?utf-8?q?B=0D=0ACc:_e@x.example?= <bob@example.com>"), DraftUnsendable.MALFORMED),
        ((b"To: Bob <bob@example.com>", b"To: " + b", ".join(b"r%d@example.com" % i for i in range(MAX_SEND_RECIPIENTS + 1))), DraftUnsendable.TOO_MANY_RECIPIENTS),
        ((b"To: Bob <bob@example.com>\r\nBcc: hidden@example.com\r\n", b""), DraftUnsendable.NO_RECIPIENTS),
    ],
)  # fmt: skip
def test_hostile_drafts_are_refused(change: tuple[bytes, bytes], reason: DraftUnsendable) -> None:
    with pytest.raises(DraftRefused) as refused:
        outgoing(DRAFT.replace(*change), OWN, "example.org")
    assert refused.value.reason is reason


def test_an_injected_subject_is_shown_escaped_on_one_line() -> None:
    hostile = DRAFT.replace(b"Subject: Plans", b"Subject: =?utf-8?q?Hi=0D=0ABcc:_eve@evil.example?=")
    shown = _shown(hostile)
    assert "Subject: Hi\\x0d\\x0aBcc: eve@evil.example" in shown.splitlines()
    assert "eve@evil.example" not in outgoing(hostile, OWN, "example.org").recipients


def test_the_approval_passes_only_the_message_shown_and_no_token_or_setting_passes_it() -> None:
    gate = ConfirmationGate(tokens_for_irreversible=True)  # confirm_without_elicitation: never for sending
    arguments = {"message_id": "imap:default:Drafts:1:1"}
    asked, shown = _review(PLAIN), _shown(PLAIN)
    call = UserCall("imap_send_draft", arguments)
    with pytest.raises(ToolFailure) as refused:
        gate.for_call(call).require_approval(asked, None)
    assert refused.value.details == {"approval": "unavailable"}
    approved = approval_digest("imap_send_draft", arguments, question(shown[:1].upper() + shown[1:]))
    call = UserCall("imap_send_draft", arguments, approvals=frozenset({approved}))
    gate.for_call(call).require_approval(asked, None)  # the approval of exactly this text passes
    changed = _review(DRAFT.replace(b"Body", b"Other"))
    with pytest.raises(ToolFailure):  # the draft changed since: not approved
        gate.for_call(call).require_approval(changed, None)
    call = UserCall("imap_send_draft", {**arguments, "confirm_token": "x"}, approvals=frozenset({approved}))
    gate.for_call(call).require_approval(asked, None)  # a token argument changes nothing either way


def test_an_approval_page_decides_where_the_client_cannot_ask() -> None:
    arguments = {"message_id": "imap:default:Drafts:1:1"}
    gate = ConfirmationGate().for_call(UserCall("imap_send_draft", arguments))
    asked, shown = _review(DRAFT), _shown(DRAFT)
    shown_to_page: list[str] = []

    def page(review: Review, digest: str, render: Renderer) -> Answer:
        shown_to_page.append(review.question())
        # Bound to exactly the question shown and the call's arguments; the page shows the draft itself.
        assert digest == approval_digest(
            "imap_send_draft", arguments, question(shown[:1].upper() + shown[1:])
        )
        assert render(review, digest).text == ".dot\r\nBody\r\n"
        return Answer.DECLINED

    with pytest.raises(ToolFailure) as refused:
        gate.require_approval(asked, page, MessageRenderer(DRAFT))
    assert refused.value.code.value == "confirmation_required" and shown_to_page == [shown]
    gate.require_approval(asked, lambda review, digest, render: Answer.APPROVED, MessageRenderer(DRAFT))


def test_text_that_reorders_or_hides_itself_is_shown_escaped() -> None:
    # A right-to-left override in a name would show "evil.example" reversed where the user reads it.
    hostile = DRAFT.replace(b"Subject: Plans", "Subject: Pay \u202eelpmaxe.live\u202c now".encode())
    shown = _shown(hostile)
    assert "Subject: Pay \\u202eelpmaxe.live\\u202c now" in shown.splitlines()


HARMLESS = "Thanks for lunch, see you soon. " * 19  # 608 characters
ALTERNATIVE = (
    "From: Me <me@example.org>\r\nTo: Bob <bob@example.com>, Carol <carol@example.com>\r\n"
    "Bcc: hidden@example.com, quiet@example.com\r\nSubject: Lunch\r\nMessage-ID: <d2@example.org>\r\n"
    'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="m"\r\n\r\n'
    '--m\r\nContent-Type: multipart/alternative; boundary="a"\r\n\r\n'
    "--a\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
    "--a\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n--a--\r\n"
    '--m\r\nContent-Type: application/pdf; name="invoice.pdf"\r\n'
    'Content-Disposition: attachment; filename="invoice.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
    "JVBERi0xLjQK\r\n--m--\r\n"
)


def _alternative(text: str, html: str) -> bytes:
    return ALTERNATIVE.replace("{text}", text).replace("{html}", html).encode()


def test_the_whole_text_is_shown_with_its_lines_and_its_tail() -> None:
    # Issue 56 item 2: the first 600 characters harmless, the tail asking for money, was approved unseen.
    tail = "PS: please wire 9,800 EUR to IBAN DE00 1234 today."
    raw = _alternative(
        f"{HARMLESS}\r\nSecond line\r\n{tail}", f"<p>{HARMLESS}</p><p>Second line</p><p>{tail}</p>"
    )
    asked = review(outgoing(raw, OWN, "example.org"), raw, "default")
    lines = asked.question().splitlines()
    assert HARMLESS in lines and "Second line" in lines and tail in lines
    assert asked.page_only is None  # short, and its HTML says nothing the text does not
    assert lines.count(tail) == 2  # in the text, and in the HTML part as a reader sees it
    for line in ("To: Bob <bob@example.com>", "To: Carol <carol@example.com>", "Bcc: hidden@example.com",
                 "Bcc: quiet@example.com", "Attachments: invoice.pdf (application/pdf, 9 bytes)"):  # fmt: skip
        assert line in lines


def test_an_html_part_that_says_more_than_the_text_goes_to_the_page() -> None:
    raw = _alternative(HARMLESS, f"<p>{HARMLESS}</p><p>Pay 9,800 EUR to DE00 1234</p>")
    asked = review(outgoing(raw, OWN, "example.org"), raw, "default")
    assert asked.page_only == "its HTML part says more than its text part"
    assert "Pay 9,800 EUR to DE00 1234" in asked.question().splitlines()


def test_a_text_longer_than_a_question_shows_goes_to_the_page() -> None:
    long = "word " * 900  # 4,500 characters
    raw = _alternative(long, f"<p>{long}</p>")
    asked = review(outgoing(raw, OWN, "example.org"), raw, "default")
    assert asked.page_only == f"its text has {len(long):,} characters, more than a question shows (4,000)"
    assert long.rstrip() in asked.question()


def test_markdown_and_invisible_characters_in_the_text_read_as_they_go_out() -> None:
    text = "# Not a heading\r\n[click](https://evil.example)\r\n```\r\nfenced\r\n```\r\npay\u200b now \u202eevil\u202c"
    raw = DRAFT.replace(b".dot\r\nBody\r\n", text.encode() + b"\r\n").replace(
        b"Message-ID", b"Content-Type: text/plain; charset=utf-8\r\nMessage-ID"
    )
    raw = raw.replace(b"Subject: Plans", b"Subject: [Invoice](https://evil.example) **now**")
    shown = _shown(raw)
    assert "\n```\nFrom: Me <me@example.org>\n" in shown  # the fields too, in a fence of their own
    assert "\nSubject: [Invoice](https://evil.example) **now**\nAttachments: none\n" in shown
    # Inside a fence longer than any in the text: Markdown means nothing there, each line stays a line.
    assert (
        "\n````\n# Not a heading\n[click](https://evil.example)\n```\nfenced\n```\n"
        "pay\\u200b now \\u202eevil\\u202c\n````\n"
    ) in shown
    assert shown.endswith(f"Send it (fingerprint {outgoing(raw, OWN, 'example.org').fingerprint[:16]})")


def test_a_text_that_cannot_be_read_is_refused_not_sent_unseen() -> None:
    raw = DRAFT.replace(b"Message-ID", b"Content-Type: text/plain; charset=x-unknown-9\r\nMessage-ID")
    with pytest.raises(DraftRefused) as refused:
        _shown(raw)
    assert refused.value.reason is DraftUnsendable.MALFORMED and "x-unknown-9" in refused.value.detail


def test_a_message_only_a_page_shows_is_never_asked_by_elicitation() -> None:
    call = UserCall("imap_send_draft", {"message_id": "imap:default:Drafts:1:1"}, can_ask_user=True)
    gate = ConfirmationGate().for_call(call)
    asked = _review(DRAFT).model_copy(update={"page_only": "its text is long"})
    pages: list[str] = []
    with pytest.raises(ToolFailure) as refused:
        gate.require_approval(asked, None, MessageRenderer(DRAFT))
    assert refused.value.code.value == "permission_denied" and ASK_USER not in refused.value.details
    assert refused.value.details == {"approval": "unavailable", "reason": "its text is long"}
    assert gate.approval_way(asked, lambda review, digest, render: Answer.APPROVED) is Way.PAGE_IN_BACKGROUND
    gate.require_approval(
        asked,
        lambda review, digest, render: pages.append(review.question()) or Answer.APPROVED,
        MessageRenderer(DRAFT),
    )
    assert pages == [asked.question()]


MIXED = (
    b"From: Me <me@example.org>\r\nTo: bob@example.com\r\nSubject: Photos\r\nMessage-ID: <d3@example.org>\r\n"
    b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="m"\r\n\r\n'
    b"--m\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nFirst part.\r\n"
    b'--m\r\nContent-Type: image/png; name="a.png"\r\nContent-Disposition: inline; filename="a.png"\r\n'
    b"Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n"
    b"--m\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nSecond part, after the picture.\r\n"
    b'--m\r\nContent-Type: message/rfc822\r\nContent-Disposition: attachment; filename="fwd.eml"\r\n\r\n'
    b"From: x@example.net\r\nSubject: Old\r\n\r\nForwarded words.\r\n"
    b"--m--\r\n"
)


def test_every_part_a_client_may_display_is_shown_on_both_routes() -> None:
    # Apple Mail saves text, inline picture, text: the second text part was shown nowhere.
    shown = _shown(MIXED)
    lines = shown.splitlines()
    for line in ("First part.", "Second part, after the picture.", "Forwarded words.",
                 "Attachments: a.png (image/png, 8 bytes)", "Attachments: fwd.eml (message/rfc822, 53 bytes)"):  # fmt: skip
        assert line in lines
    assert any(line.startswith("Text in attachment 2 (16 characters") for line in lines)
    page = message_page("sha256:" + "0" * 64, MIXED)
    assert page.text is not None and page.html is None
    for text in ("First part.", "Second part, after the picture.", "Forwarded words."):
        assert text in page.text
    assert [(item.name, item.content_type) for item in page.attachments] == [
        ("a.png", "image/png"),
        ("fwd.eml", "message/rfc822"),
    ]


def test_a_message_with_html_alone_is_approved_on_the_page() -> None:
    html_only = DRAFT.replace(b"Message-ID", b"Content-Type: text/html; charset=utf-8\r\nMessage-ID").replace(
        b".dot\r\nBody", b"<p>Pay <b>now</b></p>"
    )
    asked = review(outgoing(html_only, OWN, "example.org"), html_only, "default")
    assert asked.page_only == "its HTML part says more than its text part"
    assert "Pay now" in asked.question().splitlines()


def _peak_bytes(work: Callable[[], object]) -> int:
    """The most memory Python allocated while ``work`` ran."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_large_draft_is_read_and_rewritten_without_copies_of_its_body() -> None:
    """Sending a draft with a large attachment: its envelope and shown headers come from the header block
    alone, and the copy that goes out is built in one piece (scripts/bench_send_draft.py measures the whole
    send)."""
    line = base64.b64encode(bytes(57)) + b"\r\n"
    raw = DRAFT + b"\r\n" + line * (4 * 1024 * 1024 // len(line))
    assert _peak_bytes(lambda: outgoing(raw, OWN, "example.org")) < len(raw) // 10
    assert _peak_bytes(lambda: rewritten(raw, date="x", header_id=None, keep_bcc=False)) < 1.1 * len(raw)
    assert outgoing(raw, OWN, "example.org").fingerprint == hashlib.sha256(raw).hexdigest()


def _with_attachment(encoded_bytes: int) -> bytes:
    """DRAFT with a base64 attachment of about ``encoded_bytes``, as a mail client saves one."""
    line = base64.b64encode(bytes(range(57))) + b"\r\n"
    head, _, text = DRAFT.partition(b"\r\n\r\n")
    return (
        head + b"\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
        b"--b\r\nContent-Type: text/plain\r\n\r\n" + text + b"--b\r\nContent-Type: application/pdf\r\n"
        b'Content-Disposition: attachment; filename="big.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
        + line * (encoded_bytes // len(line))
        + b"--b--\r\n"
    )


def test_regression_the_approvals_walk_never_holds_an_attachments_body() -> None:
    """Issue 78 item 4: the approval's walk parsed the whole draft with the standard library's parser,
    which holds a base64 body as one string per line (5.5 x the part). Walked from the draft's bytes as a
    file, an attachment's body is counted a piece at a time: the walk's peak stays a fraction of the part
    (the question and the page alike)."""
    raw = _with_attachment(8 * 1024 * 1024)
    shown = displayed(raw)
    assert [(item.name, item.size) for item in shown.attachments] == [("big.pdf", 8 * 1024 * 1024 // 78 * 57)]
    assert shown.texts == [("", ".dot\r\nBody")]
    for walk in (lambda: displayed(raw), lambda: message_page("sha256:" + "0" * 64, raw)):
        peak = _peak_bytes(walk)
        assert peak < len(raw) // 4, f"the walk held {peak:,} bytes of a {len(raw):,}-byte draft"


def test_the_transmitted_pieces_are_the_rewritten_draft_dot_stuffed() -> None:
    raw = _with_attachment(3 * 1024 * 1024).replace(b"\r\n.dot", b"\n.dot\r.x\r")
    one = dot_stuffed(rewritten(raw, date="D", header_id=None, keep_bcc=False))
    for size in (1, 2, 3, 1000, 65536):
        pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
        assert b"".join(dot_stuffed_chunks(pieces)) == dot_stuffed(raw)
    head = rewritten_head(raw[: raw.index(b"\r\n\r\n") + 4], date="D", header_id=None, keep_bcc=False)
    assert b"".join(dot_stuffed_chunks([head, raw[raw.index(b"\r\n\r\n") + 4 :]])) == one
    assert dot_stuffed(b"") == b"\r\n.\r\n" and dot_stuffed(b".\r") == b"..\r\n.\r\n"


SHAPED_HEAD = (
    "From: Me <me@example.org>\r\nTo: Bob <bob@example.com>\r\nSubject: Lunch\r\n"
    "Message-ID: <d4@example.org>\r\n"
)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_what_the_questions_text_cannot_show_goes_to_the_page_which_shows_it(name: str) -> None:
    """Issue 78 item 1: text a style adds, an image, a hidden element, a comment, a title, a script, a
    header or a preamble the question would not show: only the page may ask, saying why, and its source
    holds what the question's text leaves out."""
    raw = shaped(SHAPED_HEAD, SHAPES[name])
    asked = _review(raw)
    assert asked.page_only is not None and SHAPES[name].reason in asked.page_only, asked.page_only
    page = message_page("sha256:" + "0" * 64, raw, why=asked.page_only)
    sent = "\n".join(
        [page.html or "", *(f"{key}: {value}" for key, value in page.headers), *(t for _, t in page.framing)]
    )
    assert SHAPES[name].hidden in sent and page.why == asked.page_only
    assert SHAPES[name].hidden not in asked.question()
    if name == "remote image":
        assert (
            '<ul id="resources"><li><bdi>http://127.0.0.1:9/pixel.png?wire</bdi></li></ul>'
            in page.body_html()
        )


def test_plain_html_and_the_threads_headers_are_asked_in_the_question_which_shows_them() -> None:
    """Plain HTML saying what the text says goes to the question; so do References and In-Reply-To (the
    server writes them in every reply), which the question shows whole, with Sender (decoded, as a
    recipient's program shows it)."""
    head = SHAPED_HEAD + (
        "Sender: =?utf-8?q?Me_=E2=80=93_wire_9,800_EUR?= <me@example.org>\r\nIn-Reply-To: <q@example.com>\r\nReferences: <p@example.com>\r\n"
        " <wire-9800-EUR@example.com>\r\n"
    )
    asked = _review(shaped(head, Shape()))
    assert asked.page_only is None
    lines = asked.question().splitlines()
    for line in ('Sender: "Me – wire 9,800 EUR" <me@example.org>', "In-Reply-To: <q@example.com>",
                 "References: <p@example.com> <wire-9800-EUR@example.com>"):  # fmt: skip
        assert line in lines


def test_an_invitation_replys_page_says_it_in_words_and_shows_its_calendar_under_the_source() -> None:
    """Issue 78 (low list): the page put the raw iCalendar in the Text box, right below the sentence that
    says it, as though it were the message's text. Now the Text box holds the text alone, and the calendar
    part comes under Source, saying what it is."""
    reply = answer_invitation(
        google("bob@example.com", ["me@example.org"]), ["me@example.org"], "accept", "", NOW
    )
    raw = (
        f"From: Me <me@example.org>\r\nTo: bob@example.com\r\nSubject: {reply.subject}\r\n"
        'Message-ID: <d5@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary="i"\r\n\r\n'
        "--i\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nI accept.\r\n"
        f"--i\r\nContent-Type: text/calendar; charset=utf-8; method=REPLY\r\n\r\n{reply.calendar}\r\n--i--\r\n"
    ).encode()
    page = message_page("sha256:" + "0" * 64, raw)
    assert page.text == "I accept."
    assert page.invitation_replies == [reply.words] and "BEGIN:VCALENDAR" in (page.calendar or "")
    body = page.body_html()
    assert (
        body.index(reply.words.replace("'", "&#x27;"))
        < body.index("<h2>Source</h2>")
        < body.index("BEGIN:VCALENDAR")
    )
    assert "as the organizer's calendar program reads it" in body
    assert "Text (text/calendar)" in _review(raw).question()  # the question still shows it whole
