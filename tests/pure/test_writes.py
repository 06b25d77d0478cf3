"""What a bulk write by ids checks of the account's mail before it runs (services/writes.py), on mail
kept in memory (tests/support/mail/memory_mail.py): a permanent delete asks the user only where the backend
removes exactly the messages given (else it is refused, nothing asked, nothing changed), and a move or copy
into a mailbox that is more than a mailbox (Gmail's Trash and Spam) is a delete or refused. The bulk
writes themselves run on the real servers: tests/integration/test_write_*.py and test_gmail_tools.py."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mail_imap_mcp.asking.records import Confirm
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import JUNK, TRASH
from mail_imap_mcp.mail.write_errors import ExtensionMissing
from mail_imap_mcp.operations.batch import Batch, group_message_ids
from mail_imap_mcp.services.writes import confirm_permanent_delete, deletes_by_landing
from mail_imap_mcp.state.caller import Caller
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

GMAIL = {TRASH: "delete", JUNK: "spam"}
MESSAGE = b"From: <ann@example.org>\r\nSubject: Old\r\n\r\nBye.\r\n"


class AskingCall(MemoryCall):
    """A call on mail in memory that records what it asks its user (who says yes)."""

    def __init__(self, mail: MemoryMail) -> None:
        super().__init__({"default": mail})
        self.asked: list[Any] = []

    def ask(self, question: Any) -> None:
        self.asked.append(question)


def _batch(mail: MemoryMail, mailbox: str, count: int) -> Batch:
    status = mail.status(mailbox)
    uids = [mail.append(mailbox, MESSAGE).uid for _ in range(count)]
    ids = [MessageRef("default", mailbox, status.uidvalidity, uid).message_id for uid in uids]
    return group_message_ids(ids, lambda account: account, Caller())


def test_a_permanent_delete_asks_the_user_naming_what_cannot_be_recovered() -> None:
    mail = MemoryMail({"Old": None})
    call = AskingCall(mail)
    batch = _batch(mail, "Old", 3)
    confirm_permanent_delete(cast(Call, call), batch)
    (asked,) = call.asked
    assert asked == Confirm(
        "permanently delete 3 message(s) from 'Old' (account 'default'); they cannot be recovered",
        irreversible=True,
    )
    assert mail.status("Old").messages == 3  # asking changes nothing


def test_a_permanent_delete_the_backend_cannot_make_exact_is_refused_before_asking() -> None:
    mail = MemoryMail({"Old": None}, exact_expunge=False)
    call = AskingCall(mail)
    with pytest.raises(ExtensionMissing):
        confirm_permanent_delete(cast(Call, call), _batch(mail, "Old", 1))
    assert call.asked == [] and mail.status("Old").messages == 1


@pytest.mark.parametrize(
    ("action", "destination", "deletes"),
    [
        ("move", "[Gmail]/Trash", True),
        ("copy", "[Gmail]/Trash", True),
        ("move", "Projects", False),
        ("delete", "[Gmail]/Trash", False),  # a delete is one already
        ("move", None, False),
        ("move", "Nowhere", False),  # said missing by the write itself
    ],
)
def test_a_move_into_the_mailbox_that_deletes_is_a_delete(
    action: Any, destination: str | None, deletes: bool
) -> None:
    mail = MemoryMail({"[Gmail]/Trash": TRASH, "[Gmail]/Spam": JUNK, "Projects": None}, lands_as=GMAIL)
    call = AskingCall(mail)
    assert deletes_by_landing(cast(Call, call), "default", action, destination) is deletes


@pytest.mark.parametrize("action", ["move", "copy"])
def test_a_move_into_the_mailbox_that_reports_spam_is_refused(action: Any) -> None:
    mail = MemoryMail({"[Gmail]/Spam": JUNK}, lands_as=GMAIL)
    with pytest.raises(ToolFailure) as refused:
        deletes_by_landing(cast(Call, AskingCall(mail)), "default", action, "[Gmail]/Spam")
    assert refused.value.code == "invalid_input"
    assert "'[Gmail]/Spam' reports the messages as spam" in refused.value.message


def test_a_server_where_no_mailbox_is_more_than_one_never_deletes_by_landing() -> None:
    mail = MemoryMail({"Trash": TRASH, "Junk": JUNK})
    call = AskingCall(mail)
    assert not any(
        deletes_by_landing(cast(Call, call), "default", "move", name) for name in ("Trash", "Junk")
    )
