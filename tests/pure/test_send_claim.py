"""The claim of a draft before it is sent (services/send_claim.py), on mail kept in memory
(tests/support/mail/memory_mail.py): the claim is set once, a second claim stands back, a release takes it
back so the draft can be claimed again, a backend that cannot set a keyword once leaves the guard to the
machine's record, and the claim is made only on the view the draft was read in. Two servers claiming from
one MODSEQ at once (the ``[MODIFIED]`` answer) is a real server's: tests/integration/drafts_and_sending/test_send_claim.py."""

from __future__ import annotations

import logging

import pytest

from mail_imap_mcp.mail.errors import MessageGone, UidValidityChanged
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import DRAFTS
from mail_imap_mcp.services.send_claim import CLAIM_KEYWORD, Claim, carries_claim, claim_draft, release_draft
from tests.support.mail.memory_mail import MemoryMail

DRAFT = b"From: <a@example.org>\r\nTo: <b@example.org>\r\nSubject: Claimed\r\n\r\nOnce.\r\n"


def _draft(mail: MemoryMail) -> MessageRef:
    made = mail.append("Drafts", DRAFT, ["\\Draft"])
    return MessageRef("default", "Drafts", made.uidvalidity, made.uid)


def _flags(mail: MemoryMail, ref: MessageRef) -> frozenset[str]:
    return mail.flags(ref.mailbox, [ref.uid])[ref.uid].flags


@pytest.fixture
def mail() -> MemoryMail:
    return MemoryMail({"Drafts": DRAFTS})


def test_the_first_claim_wins_and_a_second_stands_back(mail: MemoryMail) -> None:
    ref = _draft(mail)
    assert claim_draft(mail, ref) is Claim.CLAIMED
    assert carries_claim(_flags(mail, ref))
    assert claim_draft(mail, ref) is Claim.TAKEN
    assert _flags(mail, ref) == {"\\Draft", CLAIM_KEYWORD}


def test_a_released_claim_can_be_claimed_again(mail: MemoryMail) -> None:
    ref = _draft(mail)
    claim_draft(mail, ref)
    release_draft(mail, ref)
    assert _flags(mail, ref) == {"\\Draft"}
    assert claim_draft(mail, ref) is Claim.CLAIMED


def test_a_claim_left_by_another_spelling_of_the_keyword_is_taken(mail: MemoryMail) -> None:
    ref = _draft(mail)
    mail.store("Drafts", [ref.uid], "add", [CLAIM_KEYWORD.upper()])
    assert carries_claim(_flags(mail, ref))
    assert claim_draft(mail, ref) is Claim.TAKEN


def test_a_backend_that_cannot_claim_once_leaves_the_draft_alone() -> None:
    mail = MemoryMail({"Drafts": DRAFTS}, exclusive=False)
    ref = _draft(mail)
    assert claim_draft(mail, ref) is Claim.UNSUPPORTED
    assert _flags(mail, ref) == {"\\Draft"}


def test_a_draft_no_longer_there_is_gone(mail: MemoryMail) -> None:
    ref = _draft(mail)
    mail.expunge("Drafts", [ref.uid])
    with pytest.raises(MessageGone):
        claim_draft(mail, ref)


def test_a_draft_read_in_a_mailbox_made_again_is_not_claimed(mail: MemoryMail) -> None:
    ref = _draft(mail)
    mail.delete("Drafts")
    mail.create("Drafts", DRAFTS)
    again = mail.append("Drafts", DRAFT, ["\\Draft"])
    assert again.uid == ref.uid  # the same UID names another message now
    with pytest.raises(UidValidityChanged):
        claim_draft(mail, ref)
    assert _flags(mail, MessageRef("default", "Drafts", again.uidvalidity, again.uid)) == {"\\Draft"}


def test_a_release_that_fails_is_logged_and_the_claim_stays(
    mail: MemoryMail, caplog: pytest.LogCaptureFixture
) -> None:
    ref = _draft(mail)
    claim_draft(mail, ref)
    stale = MessageRef("default", "Drafts", ref.uidvalidity + 1, ref.uid)
    with caplog.at_level(logging.WARNING, logger="mail_imap_mcp.send"):
        release_draft(mail, stale)
    assert f"the draft keeps its claim {CLAIM_KEYWORD}" in caplog.text
    assert carries_claim(_flags(mail, ref))
