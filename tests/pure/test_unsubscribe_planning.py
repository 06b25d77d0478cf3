"""Which way each list of given messages is left (services/unsubscribe.py), read from mail kept in memory
(tests/support/mail/memory_mail.py): a mailto draft, a link handed to the user, nothing offered; messages of one
list are one; what the user approves; what leaving does without writes; the mailto draft saved in Drafts
(to that address alone, said where, or where to look for it). One-click POSTs, the drafts saved and the
messages moved on real servers through the MCP client: tests/integration/writes/test_unsubscribe.py and
test_unsubscribe_search.py."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import DRAFTS, INBOX
from mail_imap_mcp.mail.write_errors import RoleMailboxMissing
from mail_imap_mcp.query import AllOf
from mail_imap_mcp.services.unsubscribe import ListToLeave, leave, lists_of, review
from tests.support.mail.memory_mail import MemoryCall, MemoryMail
from tests.support.mail.memory_write_call import MemoryWriteCall

MAILTO = "List-Id: Weekly News <weekly.example.org>\r\nList-Unsubscribe: <mailto:leave@example.org?subject=stop>\r\n"
LINK = "List-Id: Deals <deals.example.org>\r\nList-Unsubscribe: <https://deals.example.org/leave?u=1>\r\n"


def _message(subject: str, extra: str) -> bytes:
    head = f"From: <news@example.org>\r\nTo: <me@example.org>\r\nSubject: {subject}\r\n{extra}"
    return f"{head}Message-ID: <{subject}@example.org>\r\n\r\nHello.\r\n".encode()


def _call(*extras: str, **account: Any) -> tuple[MemoryCall, list[str]]:
    mail = MemoryMail()
    made = [mail.append(INBOX, _message(f"m{n}", extra)) for n, extra in enumerate(extras)]
    call = MemoryCall({"default": mail}, {"default": account})
    return call, [MessageRef("default", INBOX, m.uidvalidity, m.uid).message_id for m in made]


def _lists(call: MemoryCall, ids: list[str]) -> list[ListToLeave]:
    return lists_of(cast(Call, call), ids)


#: An account that sends, to the lists' addresses among others.
SENDS = {"send_enabled": True, "allowed_recipients": ["@example.org"]}


def test_a_mailto_offer_is_left_by_a_draft_the_user_approves_again() -> None:
    call, ids = _call(MAILTO, **SENDS)
    (item,) = _lists(call, ids)
    assert (item.way, item.name, item.message_id, item.unsendable) == ("mailto", "Weekly News", ids[0], "")
    assert item.offer is not None and item.offer.mailto is not None
    assert (item.offer.mailto.address, item.offer.mailto.subject) == ("leave@example.org", "stop")
    (field,) = review([item]).fields
    assert field.values == ["Weekly News", "a draft to leave@example.org, sent only if you approve it again"]


def test_a_mailto_address_outside_allowed_recipients_is_said_unsendable() -> None:
    call, ids = _call(MAILTO, send_enabled=True, allowed_recipients=["@example.com"])
    (item,) = _lists(call, ids)
    assert "leave@example.org is outside" in item.unsendable and "allowed_recipients" in item.unsendable
    assert review([item]).fields[0].values[1].startswith("a draft to leave@example.org, never sent from here")


def test_regression_with_sending_off_a_mailto_draft_is_said_to_be_sent_by_the_user() -> None:
    """It was said to be "sent only if you approve it again", and the answer named imap_send_draft, which
    refuses every send of an account that does not send."""
    call, ids = _call(MAILTO)
    (item,) = _lists(call, ids)
    assert item.unsendable.startswith("sending is off for this account (send_enabled in [accounts.default])")
    assert review([item]).fields[0].values[1].startswith("a draft to leave@example.org, never sent from here")


def test_an_https_offer_without_one_click_is_handed_to_the_user_unreviewed() -> None:
    call, ids = _call(LINK)
    (item,) = _lists(call, ids)
    assert (item.way, item.name, item.target) == ("link", "Deals", None) and item.why_not
    assert review([item]).fields == []
    (left,) = leave(cast(Call, call), [item])
    assert (left.outcome, left.detail) == ("open_yourself", item.why_not)


def test_messages_of_one_list_are_one_and_those_without_an_offer_each_their_own() -> None:
    call, ids = _call(MAILTO, MAILTO, LINK, "", "")
    lists = _lists(call, ids)
    assert [(item.way, item.message_id) for item in lists] == [
        ("mailto", ids[0]),
        ("link", ids[2]),
        ("none", ids[3]),
        ("none", ids[4]),
    ]
    assert [left.outcome for left in leave(cast(Call, call), lists[2:])] == ["nothing_offered"] * 2


def test_a_mailto_draft_is_not_saved_where_writes_are_off() -> None:
    call, ids = _call(MAILTO, write_enabled=False)
    (left,) = leave(cast(Call, call), _lists(call, ids))
    assert (left.outcome, left.draft_id) == ("open_yourself", None) and "writes are off" in left.detail


def test_a_message_gone_is_said_gone() -> None:
    call, ids = _call(MAILTO)
    call.accounts["default"].expunge(INBOX, [1])
    with pytest.raises(MessageGone) as gone:
        _lists(call, ids)
    assert gone.value.ref is not None and gone.value.ref.message_id == ids[0]


def _writing(*extras: str, **options: Any) -> tuple[MemoryWriteCall, MemoryMail, list[str]]:
    mail = MemoryMail({"Drafts": DRAFTS}, **options)
    made = [mail.append(INBOX, _message(f"m{n}", extra)) for n, extra in enumerate(extras)]
    call = MemoryWriteCall({"default": mail}, {"default": {"write_enabled": True, **SENDS}})
    return call, mail, [MessageRef("default", INBOX, m.uidvalidity, m.uid).message_id for m in made]


def test_a_mailto_list_is_left_by_one_draft_in_drafts_to_that_address_alone() -> None:
    call, mail, ids = _writing(MAILTO, MAILTO)
    (left,) = leave(cast(Call, call), _lists(call, ids))
    (uid,) = mail.search("Drafts", AllOf())
    assert (left.outcome, call.gated) == ("draft_saved", ["default"])
    assert left.draft_id == MessageRef("default", "Drafts", mail.status("Drafts").uidvalidity, uid).message_id
    assert mail.flags("Drafts", [uid])[uid].flags == {"\\Draft", "\\Seen"}
    headers = mail.headers("Drafts", mail.status("Drafts").uidvalidity, [uid], 1)[uid]
    assert (headers["to"], headers["subject"]) == (["leave@example.org"], ["stop"]) and "cc" not in headers
    assert [mail.search(name, AllOf()) for name in (INBOX, "Drafts")] == [[1, 2], [uid]]


def test_where_the_backend_says_not_where_the_draft_landed_the_user_is_told_where_to_look() -> None:
    call, mail, ids = _writing(MAILTO, exact_expunge=False)
    (left,) = leave(cast(Call, call), _lists(call, ids))
    assert (left.outcome, left.draft_id, left.detail) == (
        "draft_saved",
        None,
        "saved in Drafts; find it there to send it",
    )
    assert len(mail.search("Drafts", AllOf())) == 1


def test_without_a_drafts_folder_no_draft_is_saved() -> None:
    mail = MemoryMail()
    made = mail.append(INBOX, _message("m0", MAILTO))
    call = MemoryWriteCall({"default": mail}, {"default": {"write_enabled": True}})
    lists = _lists(call, [MessageRef("default", INBOX, made.uidvalidity, made.uid).message_id])
    with pytest.raises(RoleMailboxMissing):
        leave(cast(Call, call), lists)
    assert [box.name for box in mail.mailboxes()] == [INBOX] and mail.search(INBOX, AllOf()) == [made.uid]
