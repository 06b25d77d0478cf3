"""What imap_save_draft decides besides the message (services/drafts.py), on mail kept in memory
(tests/support/mail/memory_drafts.py): where the saved draft is said to be (the backend's word, else a search
by its Message-ID), which message may be replaced and when the user is asked, the replaced draft moved
alone to Trash and the undo that brings it back, and what the answer says when a step fails. Every case
counts each mailbox's messages before and after. The same steps on real servers through the MCP client:
tests/integration/drafts_and_sending/test_write_drafts.py and test_write_draft_revisions.py."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mail_imap_mcp import query
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import Issue, ToolFailure
from mail_imap_mcp.mail.draft_errors import DraftNotReplaceable, ForeignMessage, NotReplaceable
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import DRAFTS, INBOX, TRASH
from mail_imap_mcp.mail.step_failure import StepFailed
from mail_imap_mcp.mail.write_errors import ExtensionMissing
from mail_imap_mcp.services.drafts import (
    Replaced,
    Saving,
    audit_ids,
    build_draft,
    check_replaceable,
    mailbox_directory,
    save_and_retire,
    undo_replacement,
)
from mail_imap_mcp.tools.save_draft.models import SaveDraftInput
from tests.support.mail.memory_mail import MemoryMail
from tests.support.mail.memory_write_call import MemoryWriteCall

ATTACHED = (
    b"From: <me@example.org>\r\nTo: <ann@example.org>\r\nSubject: With a file\r\n"
    b"Message-ID: <attached@example.org>\r\nMIME-Version: 1.0\r\n"
    b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee it.\r\n'
    b'--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename="a.pdf"\r\n'
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n--b--\r\n"
)


def _mail(**options: Any) -> MemoryMail:
    return MemoryMail({"Drafts": DRAFTS, "Trash": TRASH}, **options)


def _call(mail: MemoryMail, answers: list[bool] | None = None) -> MemoryWriteCall:
    return MemoryWriteCall({"default": mail}, {"default": {"addresses": ["me@example.org"]}}, answers=answers)


def _listing(mail: MemoryMail) -> dict[str, list[int]]:
    """Each mailbox's UIDs."""
    return {box.name: mail.search(box.name, query.AllOf()) for box in mail.mailboxes()}


def _args(subject: str, **more: Any) -> SaveDraftInput:
    return SaveDraftInput(to=["ann@example.org"], subject=subject, body_text="Text.", **more)


def _save(
    call: MemoryWriteCall, subject: str, replaced: Replaced | None = None, dry_run: bool = False
) -> Saving:
    message, _ = build_draft(call.config.accounts["default"], None, _args(subject))
    header_id = str(message["Message-ID"])
    return save_and_retire(
        cast(Call, call), "default", "Drafts", message.as_bytes(), header_id, replaced, dry_run=dry_run
    )


def _saved_ref(saving: Saving) -> MessageRef:
    assert saving.found is not None
    return MessageRef("default", "Drafts", *saving.found)


def test_the_saved_draft_is_said_where_the_backend_put_it() -> None:
    mail = _mail()
    call = _call(mail)
    saving = _save(call, "Hello")
    assert (saving.saved, saving.located_by, saving.issues) == (True, "appenduid", [])
    assert _listing(mail) == {INBOX: [], "Drafts": [1], "Trash": []}
    assert mail.flags("Drafts", [1])[1].flags == {"\\Draft", "\\Seen"}
    assert saving.found == (mail.status("Drafts").uidvalidity, 1)


def test_without_the_backends_word_the_draft_is_found_by_its_message_id() -> None:
    mail = _mail(exact_expunge=False)
    mail.append("Drafts", b"Subject: older\r\nMessage-ID: <older@example.org>\r\n\r\nx\r\n")
    saving = _save(_call(mail), "Found")
    assert (saving.saved, saving.located_by, saving.found) == (
        True,
        "search",
        (mail.status("Drafts").uidvalidity, 2),
    )
    assert _listing(mail)["Drafts"] == [1, 2]


def test_a_draft_whose_message_id_two_messages_carry_is_saved_but_not_located() -> None:
    mail = _mail(exact_expunge=False)
    call = _call(mail)
    message, _ = build_draft(call.config.accounts["default"], None, _args("Twice"))
    mail.append("Drafts", message.as_bytes())  # another client saved the same message
    saving = save_and_retire(
        cast(Call, call),
        "default",
        "Drafts",
        message.as_bytes(),
        str(message["Message-ID"]),
        None,
        dry_run=False,
    )
    (issue,) = saving.issues
    assert isinstance(issue, Issue) and issue.code == "draft_not_located" and "2 messages" in issue.message
    assert (saving.saved, saving.found, saving.located_by) == (True, None, None)
    assert _listing(mail)["Drafts"] == [1, 2]


def test_a_dry_run_saves_nothing() -> None:
    mail = _mail()
    saving = _save(_call(mail), "Preview", dry_run=True)
    assert (saving.saved, saving.found) == (False, None)
    assert _listing(mail) == {INBOX: [], "Drafts": [], "Trash": []}


def _replacing(call: MemoryWriteCall, ref: MessageRef, dry_run: bool = False) -> Replaced:
    args = _args("New", replace_message_id=ref.message_id, dry_run=dry_run)
    return check_replaceable(cast(Call, call), "default", args, "Drafts", "Trash")


def test_a_revision_moves_the_old_draft_alone_to_trash_and_the_undo_brings_it_back() -> None:
    mail = _mail()
    call = _call(mail)
    old = _saved_ref(_save(call, "Old"))
    other = _saved_ref(_save(call, "Other"))
    raw = mail.raw("Drafts", old.uid)
    replaced = _replacing(call, old)
    assert (replaced.ref, replaced.trash, call.asked) == (old, "Trash", [])  # no attachments: nobody asked
    saving = _save(call, "New", replaced)
    new = _saved_ref(saving)
    assert _listing(mail) == {INBOX: [], "Drafts": [other.uid, new.uid], "Trash": [1]}
    assert mail.raw("Trash", 1) == raw and saving.removed and saving.issues == []
    in_trash = MessageRef("default", "Trash", mail.status("Trash").uidvalidity, 1).message_id
    assert saving.retired is not None and saving.retired.trash_id == in_trash
    assert audit_ids(replaced, saving.retired) == {"replaced": old.message_id, "moved_to_trash": in_trash}
    back, remove = undo_replacement(replaced, saving.retired, new, [])
    assert back.arguments == {"message_ids": [in_trash], "action": "move", "destination_mailbox": "Drafts"}
    assert remove.arguments == {"message_ids": [new.message_id], "action": "delete"}


def test_only_a_draft_of_this_accounts_drafts_folder_is_replaced_and_nothing_changes() -> None:
    mail = _mail()
    call = _call(mail)
    inbox = mail.append(INBOX, b"Subject: mail\r\n\r\nx\r\n")
    unflagged = mail.append("Drafts", b"Subject: moved here\r\n\r\nx\r\n")
    before = _listing(mail)
    with pytest.raises(DraftNotReplaceable) as elsewhere:
        _replacing(call, MessageRef("default", INBOX, inbox.uidvalidity, inbox.uid))
    with pytest.raises(DraftNotReplaceable) as not_a_draft:
        _replacing(call, MessageRef("default", "Drafts", unflagged.uidvalidity, unflagged.uid))
    with pytest.raises(ForeignMessage):
        _replacing(call, MessageRef("other", "Drafts", unflagged.uidvalidity, unflagged.uid))
    drafts_is_trash = _args("New", replace_message_id=MessageRef("default", "Drafts", 1, 1).message_id)
    with pytest.raises(DraftNotReplaceable) as same:
        check_replaceable(cast(Call, call), "default", drafts_is_trash, "Drafts", "Drafts")
    reasons = [error.value.reason for error in (elsewhere, not_a_draft, same)]
    assert reasons == [NotReplaceable.ELSEWHERE, NotReplaceable.NOT_A_DRAFT, NotReplaceable.DRAFTS_IS_TRASH]
    assert _listing(mail) == before


def test_where_no_message_moves_alone_no_draft_is_replaced() -> None:
    mail = _mail(exact_expunge=False)
    call = _call(mail)
    made = mail.append("Drafts", b"Subject: old\r\n\r\nx\r\n", ["\\Draft"])
    with pytest.raises(ExtensionMissing) as missing:
        _replacing(call, MessageRef("default", "Drafts", made.uidvalidity, made.uid))
    assert missing.value.capability == "MOVE or UIDPLUS"
    assert _listing(mail) == {INBOX: [], "Drafts": [made.uid], "Trash": []}


def test_a_draft_with_attachments_is_replaced_only_once_the_user_confirmed() -> None:
    mail = _mail()
    made = mail.append("Drafts", ATTACHED, ["\\Draft"])
    ref = MessageRef("default", "Drafts", made.uidvalidity, made.uid)
    assert _replacing(_call(mail), ref, dry_run=True).ref == ref  # a dry run asks nothing
    declined, unasked = _call(mail, answers=[False]), _call(mail)
    for call, code in ((declined, "confirmation_required"), (unasked, "permission_denied")):
        with pytest.raises(ToolFailure) as refused:
            _replacing(call, ref)
        assert refused.value.code == code
        (asked,) = call.asked
        assert "1 attachment(s)" in asked.what and asked.details["attachments"] == 1
    confirmed = _call(mail, answers=[True])
    assert _replacing(confirmed, ref).detail.attachments
    assert _listing(mail) == {INBOX: [], "Drafts": [made.uid], "Trash": []}


def test_a_replaced_draft_that_lost_its_flag_meanwhile_stays_and_the_answer_says_so() -> None:
    mail = _mail()
    call = _call(mail)
    old = _saved_ref(_save(call, "Old"))
    replaced = _replacing(call, old)
    mail.store("Drafts", [old.uid], "remove", ["\\Draft"])  # another client, between check and move
    saving = _save(call, "New", replaced)
    (kept,) = saving.issues
    assert isinstance(kept, StepFailed) and kept.code == "replaced_draft_kept"
    assert (saving.saved, saving.removed, saving.retired) == (True, False, None)
    assert _listing(mail) == {INBOX: [], "Drafts": [old.uid, old.uid + 1], "Trash": []}
    assert undo_replacement(replaced, saving.retired, _saved_ref(saving), []) == []


def test_a_replaced_draft_gone_meanwhile_is_no_issue() -> None:
    mail = _mail()
    call = _call(mail)
    old = _saved_ref(_save(call, "Old"))
    replaced = _replacing(call, old)
    mail.expunge("Drafts", [old.uid])
    saving = _save(call, "New", replaced)
    assert (saving.saved, saving.retired, saving.issues) == (True, None, [])
    assert _listing(mail) == {INBOX: [], "Drafts": [old.uid + 1], "Trash": []}


def test_the_drafts_folder_is_found_by_its_role() -> None:
    directory = mailbox_directory(cast(Call, _call(_mail())), "default")
    assert (directory.require(DRAFTS, "default"), directory.require(TRASH, "default")) == ("Drafts", "Trash")
