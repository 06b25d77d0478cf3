"""imap_manage_mailbox's delete through a name aside and its rename undone (``services/mailbox_changes.py``)
on the in-memory backend: the service speaks ``mail/`` (``MailMailboxes``), so its logic is proved here
without a server; the race with a real delivery is ``tests/integration/writes/test_write_mailbox_delete_race.py``."""

from __future__ import annotations

import pytest

from mail_imap_mcp.mail.name_errors import RenamedIntoSpecialUse
from mail_imap_mcp.mail.roles import INBOX, JUNK
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.services.mailbox_changes import (
    aside_name,
    delete_if_empty,
    rename_undoing_special_use,
    where_now,
)
from mail_imap_mcp.state import Caller
from tests.support.mail.memory_mail import MemoryMail

MESSAGE = b"From: <ann@example.org>\r\nSubject: Late\r\n\r\nDelivered.\r\n"


class Delivering(MemoryMail):
    """A mailbox another client delivers into just before it is renamed aside (after it was counted)."""

    def rename_mailbox(self, mailbox: str, new_name: str) -> None:
        if "-deleting-" in new_name:
            self.append(mailbox, MESSAGE)
        super().rename_mailbox(mailbox, new_name)


def back() -> AuditLine:
    return AuditLine(Caller(), "imap_manage_mailbox", "default", "rename_back", 0)


def test_an_empty_mailbox_is_deleted_through_a_name_aside() -> None:
    mail = MemoryMail({"Projects": None})
    assert (
        mail.changing_mailboxes(
            lambda changes: delete_if_empty(changes, "Projects", aside_name("Projects"), selectable=True)
        )
        == 0
    )
    assert mail.names() == [INBOX]


def test_a_delivery_before_the_rename_aside_keeps_the_mailbox_under_its_name_with_it() -> None:
    mail = Delivering({"Projects": None})
    aside = aside_name("Projects")
    assert delete_if_empty(mail, "Projects", aside, selectable=True) == 1
    assert mail.names() == [INBOX, "Projects"] and mail.messages("Projects") == 1


def test_a_rename_that_hides_the_folder_from_every_search_is_undone_and_said() -> None:
    mail = MemoryMail({"Projects": None})
    with pytest.raises(RenamedIntoSpecialUse) as renamed:
        rename_undoing_special_use(mail, back(), "Projects", "Junk")  # taken for Junk by its name
    assert (renamed.value.role, renamed.value.now, renamed.value.marked) == (JUNK, "Projects", False)
    assert where_now(mail, ("Junk", None, "Projects")) == "Projects"
    rename_undoing_special_use(mail, back(), "Projects", "Plans")
    assert where_now(mail, ("Projects", "Plans")) == "Plans"
