"""A saved draft as it goes out (smtp/outgoing.py): the bytes with only Date replaced, a Message-ID added and
Bcc left out; what the user is shown, with control characters escaped; the hostile drafts refused; and the
approval bound to what was shown (a changed draft is asked about again). Pure: no server."""

from __future__ import annotations

import pytest

from mail_imap_mcp.confirmation import ConfirmationGate, Decision
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.envelope.mcp import approval_digest, current_call, question, user_approvals
from mail_imap_mcp.smtp.client import dot_stuffed
from mail_imap_mcp.smtp.outgoing import MAX_SEND_RECIPIENTS, outgoing, rewritten
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable

OWN = frozenset({"me@example.org"})
DRAFT = (
    b"From: Me <me@example.org>\r\nTo: Bob <bob@example.com>\r\nBcc: hidden@example.com\r\n"
    b"Subject: Plans\r\nDate: Mon, 02 Jan 2023 10:00:00 +0000\r\nX-Folded: one\r\n two\r\n"
    b"Message-ID: <d1@example.org>\r\n\r\n.dot\r\nBody\r\n"
)


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
    shown = message.shown("default")
    for line in ("From: Me <me@example.org>", "To: Bob <bob@example.com>", "Bcc: hidden@example.com",
                 "Subject: Plans", "Attachments: none", "Text: .dot Body", "Message-ID: <d1@example.org>"):  # fmt: skip
        assert line in shown.splitlines()
    assert message.recipients == ("bob@example.com", "hidden@example.com")
    assert outgoing(DRAFT.replace(b"Body", b"B0dy"), OWN, "example.org").fingerprint != message.fingerprint


def test_a_draft_without_message_id_gets_one_from_its_content_the_same_each_time() -> None:
    bare = DRAFT.replace(b"Message-ID: <d1@example.org>\r\n", b"")
    first, second = outgoing(bare, OWN, "example.org"), outgoing(bare, OWN, "example.org")
    assert (
        first.id_added and first.header_id == second.header_id and first.header_id.endswith("@example.org>")
    )
    assert "(added to the draft)" in first.shown("default")
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
    shown = outgoing(hostile, OWN, "example.org").shown("default")
    assert "Subject: Hi\\x0d\\x0aBcc: eve@evil.example" in shown.splitlines()
    assert "eve@evil.example" not in outgoing(hostile, OWN, "example.org").recipients


def test_the_approval_passes_only_the_message_shown_and_no_token_or_setting_passes_it() -> None:
    gate = ConfirmationGate(tokens_for_irreversible=True)  # confirm_without_elicitation: never for sending
    arguments = {"message_id": "imap:default:Drafts:1:1"}
    message = outgoing(DRAFT, OWN, "example.org")
    shown = message.shown("default")
    current_call.set(("imap_send_draft", arguments))
    with pytest.raises(ToolFailure) as refused:
        gate.require_send_approval(shown, None)
    assert refused.value.details == {"approval": "unavailable"}
    approved = approval_digest("imap_send_draft", arguments, question(shown[:1].upper() + shown[1:]))
    given = user_approvals.set(frozenset({approved}))
    try:
        gate.require_send_approval(shown, None)  # the approval of exactly this text passes
        changed = outgoing(DRAFT.replace(b"Body", b"Other"), OWN, "example.org").shown("default")
        with pytest.raises(ToolFailure):  # the draft changed since: not approved
            gate.require_send_approval(changed, None)
        current_call.set(("imap_send_draft", {**arguments, "confirm_token": "x"}))
        gate.require_send_approval(shown, None)  # a token argument changes nothing either way
    finally:
        user_approvals.reset(given)


def test_an_approval_page_decides_where_the_client_cannot_ask() -> None:
    current_call.set(("imap_send_draft", {"message_id": "imap:default:Drafts:1:1"}))
    shown_to_page: list[str] = []

    def page(text: str, message: bytes) -> Decision:
        shown_to_page.append(text)
        assert message == DRAFT
        return "dont_send"

    with pytest.raises(ToolFailure) as refused:
        ConfirmationGate.require_send_approval("send this", page, DRAFT)
    assert refused.value.code.value == "confirmation_required" and shown_to_page == ["Send this?"]
    ConfirmationGate.require_send_approval("send this", lambda text, message: "send", DRAFT)


def test_text_that_reorders_or_hides_itself_is_shown_escaped() -> None:
    # A right-to-left override in a name would show "evil.example" reversed where the user reads it.
    hostile = DRAFT.replace(b"Subject: Plans", "Subject: Pay \u202eelpmaxe.live\u202c now".encode())
    shown = outgoing(hostile, OWN, "example.org").shown("default")
    assert "Subject: Pay \\u202eelpmaxe.live\\u202c now" in shown.splitlines()
