"""The names of imap_manage_mailbox (services/mailbox_names.py), planned against the directory a listing of
mail kept in memory gives (tests/support/mail/memory_mail.py): an existing mailbox as given or below the personal
prefix, a new one (prefix added, no empty level, not taken), the mailboxes never renamed or deleted, and a
rename that a search of every mailbox would then leave out."""

from __future__ import annotations

import pytest

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.directory import MailboxDirectory, directory_of
from mail_imap_mcp.mail.name_errors import MailboxNameRefused, MailboxNameUnknown, NameProblem
from mail_imap_mcp.mail.roles import ARCHIVE, DRAFTS, JUNK, SENT, TRASH
from mail_imap_mcp.services.mailbox_names import (
    existing_mailbox,
    hidden_by_rename,
    new_destination,
    new_mailbox,
    refuse_protected,
    refuse_special_use_name,
)
from tests.support.mail.memory_mail import MemoryMail

#: A Dovecot-like account: ``/`` separates levels, no personal prefix.
FLAT = {
    "Drafts": DRAFTS,
    "Sent": SENT,
    "Trash": TRASH,
    "Junk": JUNK,
    "Archive": ARCHIVE,
    "Work": None,
    "Work/Reports": None,
    "Hobby": None,
    "Hobby/Sent": SENT,
}
#: A Cyrus- or Courier-like account: ``.`` separates levels below the personal prefix ``INBOX.``.
PREFIXED = {"INBOX.Drafts": DRAFTS, "INBOX.Trash": TRASH, "INBOX.Work": None, "INBOX.Work.Old": None}


def listed(
    boxes: dict[str, str | None], *, prefix: str = "", separator: str = "/", **settings: str
) -> MailboxDirectory:
    account = (
        AccountConfig(host="imap.example.org", username="me", password="pw", **settings) if settings else None
    )
    return directory_of(MemoryMail(boxes, separator).mailboxes(), account, prefix, separator)


def flat(**settings: str) -> MailboxDirectory:
    return listed(FLAT, **settings)


def prefixed() -> MailboxDirectory:
    return listed(PREFIXED, prefix="INBOX.", separator=".")


def refused(problem: NameProblem, error: pytest.ExceptionInfo[MailboxNameRefused], parameter: str) -> bool:
    return error.value.problem == problem and error.value.parameter == parameter


@pytest.mark.parametrize("name", sorted(FLAT))
def test_an_existing_mailbox_is_itself(name: str) -> None:
    assert existing_mailbox(flat(), name, "mailbox") == (name, [])


@pytest.mark.parametrize("spelling", ["INBOX", "inbox", "Inbox"])
def test_inbox_in_any_case_exists(spelling: str) -> None:
    assert existing_mailbox(flat(), spelling, "mailbox") == ("INBOX", [])


@pytest.mark.parametrize(("given", "found"), [("Work", "INBOX.Work"), ("Work.Old", "INBOX.Work.Old")])
def test_a_name_without_the_prefix_finds_the_mailbox_below_it_and_says_so(given: str, found: str) -> None:
    name, notes = existing_mailbox(prefixed(), given, "mailbox")
    assert name == found and len(notes) == 1 and "'INBOX.'" in notes[0]


@pytest.mark.parametrize("name", ["Nowhere", "Work/Nothing", "work"])
def test_an_unknown_mailbox_is_refused_naming_the_argument(name: str) -> None:
    with pytest.raises(MailboxNameUnknown) as error:
        existing_mailbox(flat(), name, "mailbox")
    assert (error.value.name, error.value.parameter) == (name, "mailbox")


@pytest.mark.parametrize("name", ["Projects", "Work/2026", "Hobby/Photos/Old"])
def test_a_new_name_is_taken_as_given(name: str) -> None:
    assert new_mailbox(flat(), name, "mailbox") == (name, [])


def test_a_new_name_gets_the_personal_prefix_and_a_note() -> None:
    name, notes = new_mailbox(prefixed(), "Projects", "mailbox")
    assert name == "INBOX.Projects" and len(notes) == 1


@pytest.mark.parametrize("name", ["/", "//", "///"])
def test_a_new_name_of_separators_alone_is_refused(name: str) -> None:
    with pytest.raises(MailboxNameRefused) as error:
        new_mailbox(flat(), name, "mailbox")
    assert refused(NameProblem.ONLY_SEPARATORS, error, "mailbox")


@pytest.mark.parametrize("name", ["/Work", "Work/", "Work//Old", "Work/ /Old"])
def test_a_new_name_with_an_empty_level_is_refused(name: str) -> None:
    with pytest.raises(MailboxNameRefused) as error:
        new_mailbox(flat(), name, "mailbox")
    assert refused(NameProblem.EMPTY_LEVEL, error, "mailbox")


@pytest.mark.parametrize("name", ["Work", "Work/Reports", "INBOX", "inbox", "Trash"])
def test_a_new_name_that_is_taken_is_refused(name: str) -> None:
    with pytest.raises(MailboxNameRefused) as error:
        new_mailbox(flat(), name, "mailbox")
    assert refused(NameProblem.EXISTS, error, "mailbox")


def test_a_new_name_taken_below_the_prefix_is_refused() -> None:
    with pytest.raises(MailboxNameRefused) as error:
        new_mailbox(prefixed(), "Work", "mailbox")
    assert refused(NameProblem.EXISTS, error, "mailbox") and error.value.name == "INBOX.Work"


@pytest.mark.parametrize("name", ["INBOX", "Drafts", "Sent", "Trash", "Junk", "Archive", "Hobby/Sent"])
def test_inbox_and_every_special_use_mailbox_are_never_renamed_or_deleted(name: str) -> None:
    with pytest.raises(MailboxNameRefused) as error:
        refuse_protected(flat(), name, "mailbox", "delete")
    assert refused(NameProblem.PROTECTED, error, "mailbox") and error.value.contained is None


def test_a_mailbox_holding_a_special_use_one_is_never_deleted() -> None:
    with pytest.raises(MailboxNameRefused) as error:
        refuse_protected(flat(), "Hobby", "mailbox", "delete")
    assert refused(NameProblem.PROTECTED, error, "mailbox") and error.value.contained == "Hobby/Sent"


def test_the_configured_trash_is_never_renamed() -> None:
    directory = listed({"Deleted": None, "Work": None}, trash_mailbox="Deleted")
    with pytest.raises(MailboxNameRefused) as error:
        refuse_protected(directory, "Deleted", "mailbox", "rename")
    assert "trash_mailbox" in error.value.why


@pytest.mark.parametrize("name", ["Work", "Work/Reports"])
def test_an_ordinary_mailbox_may_be_renamed_or_deleted(name: str) -> None:
    refuse_protected(flat(), name, "mailbox", "rename")


@pytest.mark.parametrize(("name", "role"), [("Trash", TRASH), ("Junk", JUNK), ("Drafts", DRAFTS)])
def test_a_special_use_folders_name_is_refused_as_a_new_name(name: str, role: str) -> None:
    with pytest.raises(MailboxNameRefused) as error:
        refuse_special_use_name(flat(), name, "destination_mailbox")
    assert refused(NameProblem.SPECIAL_USE, error, "destination_mailbox") and error.value.why == role


def test_a_special_use_folders_name_is_refused_without_its_prefix_too() -> None:
    with pytest.raises(MailboxNameRefused) as error:
        refuse_special_use_name(prefixed(), "Trash", "destination_mailbox")
    assert error.value.name == "INBOX.Trash"


def test_an_ordinary_new_name_is_no_special_use_folders() -> None:
    refuse_special_use_name(flat(), "Projects", "destination_mailbox")


@pytest.mark.parametrize("usual", ["Spam", "Bin", "Deleted Items", "Junk E-mail"])
def test_a_rename_to_a_name_a_search_of_everything_leaves_out_is_refused(usual: str) -> None:
    unmarked = listed({"Work": None, "Drafts": DRAFTS})
    with pytest.raises(MailboxNameRefused) as error:
        new_destination(unmarked, "Work", usual)
    assert refused(NameProblem.LEFT_OUT, error, "destination_mailbox")


def test_a_usual_name_is_no_trouble_where_the_server_marks_the_role() -> None:
    assert new_destination(flat(), "Work", "Spam") == ("Spam", [])


def test_a_mailbox_left_out_already_may_take_another_name_that_is() -> None:
    unmarked = listed({"Spam": None, "Work": None})
    assert hidden_by_rename(unmarked, "Spam", "Bulk Mail") is None


def test_a_rename_keeps_the_mailboxes_below_in_view() -> None:
    assert new_destination(flat(), "Work", "Job") == ("Job", [])
    assert hidden_by_rename(flat(), "Work", "Job") is None
