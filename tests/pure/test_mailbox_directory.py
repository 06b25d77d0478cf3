"""The mailbox directory without a server: special-use with configured overrides, INBOX case, the
hierarchy separator, the personal prefix, existence and the mailboxes never renamed or deleted."""

from __future__ import annotations

import pytest

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import ErrorCode
from mail_imap_mcp.imap.personality import Personality, Profile
from mail_imap_mcp.mail.directory import (
    MailboxDirectory,
    canonical_inbox,
    configured_roles,
    same_mailbox,
)
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.roles import DRAFTS, JUNK, SENT, TRASH
from mail_imap_mcp.mail.write_errors import RoleMailboxMissing
from mail_imap_mcp.presentation.failures import envelope_of


def box(name: str, special_use: str | None = None, *, selectable: bool = True, sep: str = ".") -> MailboxInfo:
    attributes = [special_use] if special_use else []
    return MailboxInfo(
        name, sep, attributes + ([] if selectable else ["\\Noselect"]), special_use, selectable
    )


def account(**settings: str) -> AccountConfig:
    return AccountConfig(host="imap.example.com", username="me", password="x", **settings)


def test_inbox_is_case_insensitive_also_as_the_head_of_a_hierarchy() -> None:
    assert canonical_inbox("inbox") == "INBOX"
    assert canonical_inbox("Inbox.Work") == "Inbox.Work"
    assert same_mailbox("INBOX", "iNbOx") and not same_mailbox("Work", "work")
    directory = MailboxDirectory([box("INBOX"), box("INBOX.Work")], separator=".")
    assert directory.canonical("inbox.Work") == "INBOX.Work"
    assert directory.selectable("inbox") == "INBOX"
    assert directory.selectable("inbox.Work") == "INBOX.Work"
    assert directory.inbox() == "INBOX"


def test_special_use_marked_by_the_server_comes_first_then_the_configured_override() -> None:
    boxes = [box("INBOX"), box("Bin", TRASH), box("Old Trash"), box("Drafts")]
    directory = MailboxDirectory(boxes, configured_roles(account(trash_mailbox="Old Trash")))
    assert directory.special_use(TRASH) == "Bin"
    assert directory.special_use(DRAFTS) is None  # not marked, not configured
    unmarked = MailboxDirectory(
        [box("INBOX"), box("Old Trash")], configured_roles(account(trash_mailbox="Old Trash"))
    )
    assert unmarked.special_use(TRASH) == "Old Trash"


def test_a_configured_mailbox_that_does_not_exist_or_cannot_be_selected_is_none() -> None:
    roles = configured_roles(account(trash_mailbox="Gone", drafts_mailbox="Folder"))
    assert roles == {TRASH: "Gone", DRAFTS: "Folder"}
    directory = MailboxDirectory([box("INBOX"), box("Folder", selectable=False)], roles)
    assert directory.special_use(TRASH) is None
    assert directory.special_use(DRAFTS) is None
    assert directory.configured[TRASH] == "Gone"
    assert directory.get("Folder") is not None and directory.selectable("Folder") is None


def test_a_mailbox_marked_but_not_selectable_is_not_the_role() -> None:
    directory = MailboxDirectory([box("INBOX"), box("Trash", TRASH, selectable=False)])
    assert directory.marked(TRASH) is None


def test_reads_guess_a_role_by_its_usual_name_only_where_the_server_marks_none() -> None:
    guessed = MailboxDirectory([box("INBOX"), box("INBOX.Sent Items"), box("INBOX.Spam")])
    assert guessed.with_role(SENT) == ["INBOX.Sent Items"]
    assert guessed.with_role(JUNK) == ["INBOX.Spam"]
    marked = MailboxDirectory([box("INBOX"), box("Sent"), box("Outbox", SENT)])
    assert marked.with_role(SENT) == ["Outbox"]


def test_children_prefix_and_protected_mailboxes() -> None:
    boxes = [
        box("INBOX"),
        box("INBOX.Trash", TRASH),
        box("INBOX.Work"),
        box("INBOX.Work.2024"),
        box("INBOX.Keep"),
    ]
    directory = MailboxDirectory(boxes, configured_roles(account(drafts_mailbox="INBOX.Keep")), "INBOX.", ".")
    assert directory.children("INBOX.Work") == ("INBOX.Work.2024",)
    assert directory.with_prefix("Work") == "INBOX.Work"
    assert directory.with_prefix("INBOX.Work") is None
    assert directory.with_prefix("Nothing") is None
    protected = directory.protected()
    assert set(protected) == {"INBOX", "INBOX.Trash", "INBOX.Keep"}
    assert "special-use" in protected["INBOX.Trash"] and "drafts_mailbox" in protected["INBOX.Keep"]


def test_no_separator_means_no_children() -> None:
    directory = MailboxDirectory([box("INBOX", sep=""), box("INBOX.Work", sep="")])
    assert directory.children("INBOX") == ()


def test_a_search_of_every_mailbox_leaves_out_trash_junk_and_virtual_views() -> None:
    marked = [
        box("INBOX"),
        box("Bin", TRASH),
        box("Spam", JUNK),
        box("All", "\\All"),
        box("Trash"),
        box("Work"),
    ]
    assert MailboxDirectory(marked).searchable() == ["INBOX", "Trash", "Work"]
    unmarked = [box("INBOX"), box("INBOX.Deleted Items"), box("INBOX.Junk E-mail"), box("Old"), box("Work")]
    assert MailboxDirectory(unmarked, {TRASH: "Old"}).searchable() == ["INBOX", "Work"]


def test_the_standard_personality_searches_what_the_directory_calls_searchable() -> None:
    listing = MailboxDirectory([box("INBOX"), box("Bin", TRASH), box("All", "\\All"), box("Work")])
    assert Personality(Profile.of(["IMAP4rev1"])).every_mailbox(listing) == ["INBOX", "Work"]


def test_a_missing_role_mailbox_is_not_found_naming_the_setting() -> None:
    settings = account(drafts_mailbox="Entwürfe")
    directory = MailboxDirectory([box("INBOX")], configured_roles(settings), account=settings)
    # The IMAP layer raises what is missing; the failure registry names the setting.
    with pytest.raises(RoleMailboxMissing) as missing_role:
        directory.require(TRASH, "work", ", or use action move")
    unset = envelope_of(missing_role.value)
    assert unset.code is ErrorCode.NOT_FOUND
    assert unset.details == {
        "parameter": "trash_mailbox",
        "setting": "trash_mailbox",
        "account_id": "work",
    }
    assert unset.message.endswith(", or use action move.")
    with pytest.raises(RoleMailboxMissing) as missing_configured:
        directory.require(DRAFTS, "work")
    missing = envelope_of(missing_configured.value)
    assert missing.details["mailbox"] == "Entwürfe" and "drafts_mailbox" in missing.message
    assert (
        MailboxDirectory([box("INBOX"), box("Entwürfe")], configured_roles(settings)).require(DRAFTS, "w")
        == "Entwürfe"
    )
