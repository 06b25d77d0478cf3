"""The server personality: which one a server gets, and what the standard one means (no server)."""

from __future__ import annotations

import pytest

from mail_imap_mcp.imap.personality import PERSONALITIES, Personality, Profile, personality_for
from mail_imap_mcp.imap.personality.gmail import Gmail, gmail_label
from mail_imap_mcp.mail.pages import IndexView
from mail_imap_mcp.mail.roles import ALL, JUNK, SENT, TRASH
from mail_imap_mcp.mail.write_errors import ExtensionMissing


def standard(*capabilities: str) -> Personality:
    return personality_for(Profile.of(["IMAP4rev1", *capabilities]))


def test_every_server_of_the_matrix_gets_the_standard_personality_and_x_gm_ext_1_gets_gmails() -> None:
    assert (Gmail,) == PERSONALITIES
    for capabilities in (("MOVE", "UIDPLUS", "SORT"), ("UIDPLUS",), ()):
        chosen = standard(*capabilities)
        assert type(chosen) is Personality and chosen.name == "standard"
        assert not chosen.has_labels and chosen.summary_items == () and chosen.thread_key() is None
    gmail = standard("X-GM-EXT-1", "MOVE", "UIDPLUS")
    assert type(gmail) is Gmail and gmail.name == "gmail" and gmail.has_labels
    assert gmail.summary_items == ("X-GM-LABELS", "X-GM-MSGID") and gmail.thread_key() == "X-GM-THRID"
    assert (
        gmail.identity_of({b"X-GM-MSGID": 2**60}) == 2**60
        and standard().identity_of({b"X-GM-MSGID": 1}) is None
    )


class _Listing:
    def __init__(self, roles: dict[str, str | None]) -> None:
        self.roles = roles

    def searchable(self) -> list[str]:
        return [name for name, role in self.roles.items() if role not in (ALL, TRASH, JUNK)]

    def with_role(self, role: str) -> list[str]:
        return [name for name, r in self.roles.items() if r == role]


def test_gmail_searches_all_mail_alone_and_expunges_for_good_only_in_trash_and_spam() -> None:
    gmail = standard("X-GM-EXT-1")
    listing = _Listing(
        {"INBOX": None, "Work": None, "[Gmail]/All Mail": ALL, "[Gmail]/Trash": TRASH, "[Gmail]/Spam": JUNK}
    )
    assert gmail.every_mailbox(listing) == ["[Gmail]/All Mail"]
    assert standard().every_mailbox(listing) == ["INBOX", "Work"]
    # A Gmail that marks no All Mail (an IMAP setting hides it) searches as a standard server does.
    assert gmail.every_mailbox(_Listing({"INBOX": None, "Work": None})) == ["INBOX", "Work"]
    assert [gmail.expunges_for_good(role) for role in (TRASH, JUNK, ALL, None)] == [True, True, False, False]
    assert standard().expunges_for_good(None)


def test_gmail_labels_as_a_summary_shows_them_and_back() -> None:
    gmail = standard("X-GM-EXT-1")
    answer = {b"X-GM-LABELS": (b"\\Inbox", b"\\Starred", b"Work", b"&AMk-t&AOk-", b"\\Important")}
    assert gmail.labels_of(answer) == ["Important", "Inbox", "Work", "\u00c9t\u00e9"]
    assert gmail.labels_of({}) == [] and standard().labels_of(answer) is None
    assert [gmail_label(shown) for shown in ("Inbox", "inbox", "\\Inbox", "Starred", "Work")] == [
        "\\Inbox", "\\Inbox", "\\Inbox", "\\Starred", "Work"
    ]  # fmt: skip


def test_the_standard_personality_searches_with_imap_keys_and_deletes_to_the_trash() -> None:
    assert standard().search_dialects == ("imap",)
    assert standard().deletes_to == TRASH


@pytest.mark.parametrize(
    ("capabilities", "action", "permanent", "commands"),
    [
        (("MOVE", "UIDPLUS"), "move", False, "UID MOVE"),
        (("MOVE",), "delete", False, "UID MOVE"),
        (("UIDPLUS",), "move", False, "UID COPY + UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"),
        (("UIDPLUS",), "delete", True, "UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"),
        ((), "copy", False, "UID COPY"),
    ],
)
def test_the_commands_that_touch_exactly_the_messages_asked_for(
    capabilities: tuple[str, ...], action: str, permanent: bool, commands: str
) -> None:
    assert standard(*capabilities).transfer_commands(action, permanent=permanent) == commands  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("capabilities", "action", "permanent", "missing"),
    [((), "move", False, "MOVE or UIDPLUS"), (("MOVE",), "delete", True, "UIDPLUS")],
)
def test_without_the_extension_a_write_is_refused_before_anything_changes(
    capabilities: tuple[str, ...], action: str, permanent: bool, missing: str
) -> None:
    with pytest.raises(ExtensionMissing) as refused:
        standard(*capabilities).transfer_commands(action, permanent=permanent)  # type: ignore[arg-type]
    assert refused.value.capability == missing


def test_the_profile_names_the_sasl_mechanisms_offered_in_any_case_and_spelling() -> None:
    profile = Profile.of([b"IMAP4rev1", b"auth=xoauth2", "AUTH=PLAIN", "AUTHENTICATE", "UNSELECT"])
    assert profile.mechanisms == {"XOAUTH2", "PLAIN"}
    assert profile.offers_mechanism("xoauth2") and profile.offers_mechanism("PLAIN")
    assert not profile.offers_mechanism("OAUTHBEARER")
    assert Profile.of(["IMAP4rev1"]).mechanisms == frozenset()
    assert profile.unselects and not Profile.of(["IMAP4rev1"]).unselects


def test_gmail_indexes_all_mail_and_a_label_folder_is_all_mail_with_its_label() -> None:
    gmail = standard("X-GM-EXT-1")
    roles = {
        "INBOX": None,
        "Work": None,
        "[Gmail]/All Mail": ALL,
        "[Gmail]/Trash": TRASH,
        "[Gmail]/Spam": JUNK,
    }
    listing = _Listing(roles | {"[Gmail]/Sent Mail": SENT})
    plan = gmail.index_plan(listing, list(listing.roles))
    assert (plan.always, plan.on_request) == (["[Gmail]/All Mail"], ["[Gmail]/Spam", "[Gmail]/Trash"])
    assert plan.one_row_per_message  # All Mail, Spam and Trash never show one message twice
    views = [gmail.index_view(name, lambda: listing) for name in ("INBOX", "Work", "[Gmail]/Sent Mail")]
    assert [(v.folder, v.label) for v in views] == [
        ("[Gmail]/All Mail", label) for label in ("\\Inbox", "Work", "\\Sent")
    ]
    assert gmail.index_view("[Gmail]/Trash", lambda: listing) == IndexView("[Gmail]/Trash")
    # The standard personality indexes every folder as itself, without asking for the listing.
    assert standard().index_plan(listing, ["INBOX", "Work"]).kept == ["INBOX", "Work"]
    assert standard().index_view("Work", lambda: pytest.fail("no LIST needed")) == IndexView("Work")
    bare = _Listing({"INBOX": None, "Work": None})
    # A Gmail that marks no All Mail indexes every folder, a row per folder that shows a message.
    fallback = gmail.index_plan(bare, ["INBOX", "Work"])
    assert fallback.always == ["INBOX", "Work"] and not fallback.one_row_per_message
