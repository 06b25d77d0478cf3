"""Where a search looks (services/search_scope.py), on mail kept in memory (tests/support/mail/memory_mail.py):
``in:`` finds a mailbox by its name, its role (special-use, else a usual name) or its last level, and
says any other name as written; INBOX is known without asking the backend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

import pytest

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.roles import ALL, ARCHIVE, DRAFTS, JUNK, SENT, TRASH
from mail_imap_mcp.query import Anywhere, InMailbox, Scope
from mail_imap_mcp.services.search_args import ALL_MAILBOXES
from mail_imap_mcp.services.search_scope import ROLE_WORDS, scope_mailbox, searched_where
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

#: An account whose role mailboxes have names other than the words for their roles.
MARKED = {
    "Sent Items": SENT,
    "Entwürfe": DRAFTS,
    "Papierkorb": TRASH,
    "Unerwünscht": JUNK,
    "Ablage": ARCHIVE,
    "Alle": ALL,
    "Projects": None,
    "Projects/Alpha": None,
    "Clients/Beta": None,
    "Old/Beta": None,
}
BY_ROLE = {
    SENT: "Sent Items",
    DRAFTS: "Entwürfe",
    TRASH: "Papierkorb",
    JUNK: "Unerwünscht",
    ARCHIVE: "Ablage",
    ALL: "Alle",
}


def call_on(boxes: dict[str, str | None], **settings: Any) -> MemoryCall:
    return MemoryCall({"default": MemoryMail(boxes)}, {"default": settings})


def scope(call: MemoryCall, name: str) -> str:
    return scope_mailbox(cast(Call, call), "default", name)


@pytest.mark.parametrize("word", sorted(ROLE_WORDS))
def test_a_role_word_finds_the_mailbox_marked_with_its_role(word: str) -> None:
    assert scope(call_on(MARKED), word) == BY_ROLE[ROLE_WORDS[word]]


@pytest.mark.parametrize("word", sorted(ROLE_WORDS))
def test_a_role_word_in_capitals_finds_it_too(word: str) -> None:
    assert scope(call_on(MARKED), word.upper()) == BY_ROLE[ROLE_WORDS[word]]


@pytest.mark.parametrize(
    ("word", "usual"),
    [("sent", "Sent Messages"), ("trash", "Deleted Items"), ("spam", "Junk E-mail"), ("junk", "Bulk Mail")],
)
def test_without_special_use_a_role_word_finds_the_usual_name(word: str, usual: str) -> None:
    assert scope(call_on({usual: None, "Other": None}), word) == usual


@pytest.mark.parametrize("word", ["drafts", "archive", "all"])
def test_a_role_without_a_usual_name_and_no_mark_is_the_word_as_written(word: str) -> None:
    assert scope(call_on({"Drafts folder": None}), word) == word


@pytest.mark.parametrize("name", sorted(MARKED))
def test_a_mailbox_named_exactly_is_itself(name: str) -> None:
    assert scope(call_on(MARKED), name) == name


def test_a_mailbox_named_like_a_role_word_is_itself_before_the_role() -> None:
    assert scope(call_on({"Sent": None, "Sent Items": SENT}), "Sent") == "Sent"


@pytest.mark.parametrize("spelling", ["INBOX", "inbox", "Inbox", "iNbOx"])
def test_inbox_in_any_case_is_inbox_without_asking_the_backend(spelling: str) -> None:
    call = call_on(MARKED)
    assert scope(call, spelling) == "INBOX"
    assert call.reached == 0


@pytest.mark.parametrize("level", ["alpha", "Alpha", "ALPHA"])
def test_a_last_level_in_any_case_finds_the_one_mailbox_it_ends(level: str) -> None:
    assert scope(call_on(MARKED), level) == "Projects/Alpha"


def test_a_last_level_two_mailboxes_end_with_is_the_name_as_written() -> None:
    assert scope(call_on(MARKED), "beta") == "beta"


@pytest.mark.parametrize("name", ["Nowhere", "Projects/Gamma", "alpha/Projects"])
def test_an_unknown_name_is_said_as_written(name: str) -> None:
    assert scope(call_on(MARKED), name) == name


def test_one_listing_answers_a_name() -> None:
    call = call_on(MARKED)
    scope(call, "spam")
    assert call.reached == 1


@dataclass(frozen=True)
class Args:
    mailbox: str | None = None
    query: str | None = None
    mailboxes: list[str] | None = None
    sort: Literal["arrival", "date", "relevance"] = "arrival"
    limit: int = 10
    snippet_chars: int = 0
    cursor: str | None = None
    about: str | None = None
    like: str | None = None


@pytest.mark.parametrize(
    ("args", "given", "expected"),
    [
        (Args(), None, "INBOX"),
        (Args(query="from:ann"), None, ALL_MAILBOXES),
        (Args(mailbox="Projects"), None, "Projects"),
        (Args(query="x"), Anywhere(), ALL_MAILBOXES),
        (Args(query="x"), InMailbox("trash"), "Papierkorb"),
        (Args(query="x"), InMailbox("alpha"), "Projects/Alpha"),
        (Args(), InMailbox("inbox"), "INBOX"),
        (Args(about="the heating"), None, ALL_MAILBOXES),
        (Args(like="imap:default:INBOX:1:2"), None, ALL_MAILBOXES),
        (Args(about="the heating", mailbox="Projects"), None, "Projects"),
        (Args(about="the heating", query="x"), InMailbox("alpha"), "Projects/Alpha"),
    ],
)
def test_a_search_looks_where_its_arguments_and_its_in_say(
    args: Args, given: Scope | None, expected: str
) -> None:
    searched = searched_where(cast(Call, call_on(MARKED)), "default", args, given)
    assert (searched.account_id, searched.mailbox) == ("default", expected)
    # A search by meaning is best match first.
    assert searched.sort == ("relevance" if args.about or args.like else "arrival")
