"""What imap_send_draft checks of a draft before the user is asked (services/send_prepare.py), on mail kept in
memory (tests/support/mail/memory_drafts.py): only a draft of Drafts, its bytes read whole into its own file,
its recipients within allowed_recipients, a claim it carries, where the message it answers is looked for
and how the message it forwards is shown; nothing changes. The send itself on a real server:
tests/integration/drafts_and_sending/test_send.py."""

from __future__ import annotations

from typing import cast

import pytest

from mail_imap_mcp import query
from mail_imap_mcp.call import Call
from mail_imap_mcp.content.forwards import FORWARDED_HEADER
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import DRAFTS, INBOX, SENT, TRASH
from mail_imap_mcp.services.send_claim import CLAIM_KEYWORD
from mail_imap_mcp.services.send_prepare import prepare, still_as_approved
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable, RecipientsNotAllowed
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

ORIGINAL = (
    b"From: Acme Billing <billing@acme.example>\r\nTo: <me@example.org>\r\nSubject: Invoice\r\n 2026-11\r\n"
    b"Message-ID: <invoice@acme.example>\r\n\r\nPay.\r\n"
)


def _draft(to: str = "ann@example.org", extra: str = "") -> bytes:
    head = f"From: <me@example.org>\r\nTo: <{to}>\r\nSubject: Draft\r\n{extra}"
    return f"{head}Message-ID: <draft@example.org>\r\n\r\nText.\r\n".encode()


def _mail() -> MemoryMail:
    return MemoryMail({"Drafts": DRAFTS, "Sent": SENT, "Trash": TRASH, "Archive": None})


def _call(mail: MemoryMail) -> MemoryCall:
    settings = {"addresses": ["me@example.org"], "send_enabled": True, "allowed_recipients": ["@example.org"]}
    return MemoryCall({"default": mail}, {"default": settings})


def _ref(mail: MemoryMail, mailbox: str, raw: bytes, flags: tuple[str, ...] = ("\\Draft",)) -> MessageRef:
    made = mail.append(mailbox, raw, flags)
    return MessageRef("default", mailbox, made.uidvalidity, made.uid)


def _listing(mail: MemoryMail) -> dict[str, list[int]]:
    return {box.name: mail.search(box.name, query.AllOf()) for box in mail.mailboxes()}


def test_a_draft_is_read_whole_with_where_its_copies_go_and_nothing_changes() -> None:
    mail = _mail()
    ref = _ref(mail, "Drafts", _draft())
    before = _listing(mail)
    prepared = prepare(cast(Call, _call(mail)), "default", ref)
    try:
        assert prepared.draft.read_at(0, prepared.draft.size) == _draft()
        assert prepared.body_start == _draft().index(b"\r\n\r\n") + 4
        assert (prepared.sent_mailbox, prepared.trash_mailbox) == ("Sent", "Trash")
        assert (prepared.outgoing.recipients, prepared.claimed) == (("ann@example.org",), False)
        assert (prepared.reply_mailboxes, prepared.forwarded_shown) == ((), None)
        still_as_approved(cast(Call, _call(mail)), prepared)
    finally:
        prepared.close()
    assert _listing(mail) == before


def test_only_a_draft_of_drafts_still_there_with_allowed_recipients_is_prepared() -> None:
    mail = _mail()
    call = cast(Call, _call(mail))
    elsewhere = _ref(mail, "Archive", _draft())
    outside = _ref(mail, "Drafts", _draft(to="eve@elsewhere.example"))
    gone = MessageRef("default", "Drafts", outside.uidvalidity, outside.uid + 1)
    before = _listing(mail)
    with pytest.raises(DraftRefused) as refused:
        prepare(call, "default", elsewhere)
    assert refused.value.reason is DraftUnsendable.NOT_IN_DRAFTS
    with pytest.raises(RecipientsNotAllowed) as not_allowed:
        prepare(call, "default", outside)
    assert not_allowed.value.addresses == ["eve@elsewhere.example"]
    with pytest.raises(MessageGone):
        prepare(call, "default", gone)
    assert _listing(mail) == before


def test_a_draft_changed_after_it_was_read_is_no_longer_the_one_approved() -> None:
    mail = _mail()
    ref = _ref(mail, "Drafts", _draft())
    prepared = prepare(cast(Call, _call(mail)), "default", ref)
    try:
        mail.expunge("Drafts", [ref.uid])
        mail.append("Drafts", _draft(extra="X-Changed: yes\r\n"), ["\\Draft"])
        with pytest.raises(MessageGone):
            still_as_approved(cast(Call, _call(mail)), prepared)
    finally:
        prepared.close()


def test_a_claimed_forward_is_shown_with_the_original_and_answers_are_looked_for_outside_drafts() -> None:
    mail = _mail()
    mail.append("Archive", ORIGINAL)
    forward = _draft(extra=f"{FORWARDED_HEADER}: <invoice@acme.example>\r\n")
    ref = _ref(mail, "Drafts", forward, ("\\Draft", CLAIM_KEYWORD))
    prepared = prepare(cast(Call, _call(mail)), "default", ref)
    try:
        assert prepared.claimed and prepared.outgoing.forwarded == "<invoice@acme.example>"
        assert prepared.forwarded_shown == "'Invoice 2026-11' of Acme Billing <billing@acme.example>"
        assert prepared.reply_mailboxes[0] == INBOX and "Drafts" not in prepared.reply_mailboxes
        assert set(prepared.reply_mailboxes) == {INBOX, "Sent", "Archive"}
    finally:
        prepared.close()
