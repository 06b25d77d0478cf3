"""Gmail as Gmail users know it, end to end through an MCP client against the Gmail emulation
(tests/support/gmail_server.py): a search of every folder is a search of All Mail (each message once,
archived mail included, with its labels), conversations come from X-GM-THRID, and a server without
X-GM-EXT-1 is searched as before."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support import mailgen
from tests.support.accounts import account_settings
from tests.support.clients import make_config, open_client
from tests.support.envelope_client import EnvelopeClient
from tests.support.gmail import ALL_MAIL, TRASH, Gmail
from tests.support.round_trips import Plan, plain_settings, recording, rig

pytestmark = pytest.mark.anyio

BASE = dt.datetime(2026, 10, 1, 9, tzinfo=dt.UTC)


def message(name: str, days: int, **headers: str) -> bytes:
    return mailgen.plain_message(
        subject=f"About {name}",
        body=f"This is {name}.",
        date=BASE + dt.timedelta(days=days),
        message_id=f"<{name}@gmail.example>",
        headers=headers,
    )


def seed_labelled(gmail: Gmail, user: str) -> None:
    """Two messages in INBOX (one also labelled Work), one archived with Work, one archived bare, one
    in Trash."""
    gmail.seed(user, "INBOX", [message("one", 0), message("two", 1)])
    gmail.seed(user, "Work", [message("three", 2)])
    gmail.seed(user, ALL_MAIL, [message("four", 3)])
    gmail.seed(user, TRASH, [message("binned", 4)])
    gmail.label(user, "INBOX", [["Work", "\\Important"], []])


async def client_of(server: Gmail, user: str, **settings: Any) -> AsyncIterator[EnvelopeClient]:
    config = make_config({"default": account_settings(server, user)}, write_enabled=True, **settings)
    async for client in open_client(config):
        yield client


@pytest.fixture
def gmail_user(gmail: Gmail) -> str:
    user = gmail.new_user("g")
    seed_labelled(gmail, user)
    return user


@pytest.fixture
async def gmcp(gmail: Gmail, gmail_user: str) -> AsyncIterator[EnvelopeClient]:
    async for client in client_of(gmail, gmail_user):
        yield client


def subjects(messages: list[dict[str, Any]]) -> list[str]:
    return [m["subject"] for m in messages]


async def test_every_folder_is_all_mail_once_each_with_its_labels(gmcp: EnvelopeClient) -> None:
    data = await gmcp.ok("imap_search_messages", {"mailbox": "*", "limit": 20})
    assert subjects(data["messages"]) == ["About four", "About three", "About two", "About one"]
    labels = {m["subject"]: m.get("labels") for m in data["messages"]}
    assert labels == {
        "About one": ["Important", "Inbox", "Work"],
        "About two": ["Inbox"],
        "About three": ["Work"],
        "About four": None,  # archived without a label: compact leaves the empty list out
    }
    full = await gmcp.ok("imap_search_messages", {"mailbox": "*", "limit": 20, "fields": "full"})
    assert [m["labels"] for m in full["messages"]][-1] == ["Important", "Inbox", "Work"]
    assert full["messages"][0]["labels"] == []
    assert full["mailboxes"] == [ALL_MAIL]
    # Trash only when named; one folder alone is that folder.
    named = await gmcp.ok("imap_search_messages", {"mailboxes": ["*", TRASH], "limit": 20})
    assert sorted(subjects(named["messages"])) == [
        "About binned",
        "About four",
        "About one",
        "About three",
        "About two",
    ]
    inbox = await gmcp.ok("imap_search_messages", {"mailbox": "INBOX"})
    assert subjects(inbox["messages"]) == ["About two", "About one"]
    assert {m.get("labels") is not None for m in inbox["messages"]} == {True}
    found = await gmcp.ok("imap_search_messages", {"mailbox": "*", "subject": "three"})
    assert subjects(found["messages"]) == ["About three"]


async def test_without_x_gm_ext_1_the_same_mail_is_searched_folder_by_folder(gmail_unmarked: Gmail) -> None:
    user = gmail_unmarked.new_user("u")
    seed_labelled(gmail_unmarked, user)
    async for client in client_of(gmail_unmarked, user):
        data = await client.ok("imap_search_messages", {"mailbox": "*", "limit": 20, "fields": "full"})
        # The standard meaning: every folder but All Mail, Important, Starred, Trash and Spam; a
        # message with two labels comes twice, an archived one without a label not at all.
        assert data["mailboxes"] == ["INBOX", "Work", "[Gmail]/Drafts", "[Gmail]/Sent Mail"]
        assert sorted(subjects(data["messages"])) == ["About one", "About one", "About three", "About two"]
        assert all("labels" not in m for m in data["messages"])


async def test_a_conversation_is_gmails_own_found_in_all_mail(gmail: Gmail) -> None:
    user = gmail.new_user("t")
    gmail.seed(user, "INBOX", [message("root", 0)])
    gmail.seed(user, "Work", [message("filed", 1, **{"In-Reply-To": "<root@gmail.example>"})])
    gmail.seed(
        user,
        "[Gmail]/Sent Mail",
        [message("mine", 2, References="<root@gmail.example> <filed@gmail.example>")],
    )
    gmail.seed(user, "INBOX", [message("other", 3)])
    async for client in client_of(gmail, user):
        inbox = await client.ok("imap_search_messages", {"mailbox": "INBOX", "subject": "root"})
        asked = inbox["messages"][0]["message_id"]
        data = await client.ok("imap_get_thread", {"message_id": asked, "fields": "full"})
        assert data["mailboxes"] == [ALL_MAIL] and data["threaded_by_server"] is True
        assert subjects(data["messages"]) == ["About root", "About filed", "About mine"]
        assert [m["labels"] for m in data["messages"]] == [["Inbox"], ["Work"], ["Sent"]]
        assert data["total"] == 3


async def test_a_search_of_every_folder_costs_a_one_folder_search_and_its_list(
    gmail: Gmail, gmail_user: str
) -> None:
    """Read from the wire: All Mail is searched as one folder is (EXAMINE, UID SEARCH, UID FETCH), after
    the LIST every search of every folder sends; a conversation is one X-GM-THRID search."""
    with recording(gmail) as recorder:  # type: ignore[arg-type]
        async with rig(plain_settings(gmail, gmail_user, recorder.port), recorder) as r:  # type: ignore[arg-type]
            await r.call("imap_list_mailboxes", {})  # the login is not part of any plan below
            _, inbox = await r.call("imap_search_messages", {"mailbox": "INBOX", "limit": 10})
            found, every = await r.call("imap_search_messages", {"mailbox": "*", "limit": 10})
            assert b"[Gmail]/All Mail" in r.last_sent and b"EXAMINE INBOX" not in r.last_sent
            _, thread = await r.call("imap_get_thread", {"message_id": found["messages"][-1]["message_id"]})
            assert b"UID SEARCH X-GM-THRID " in r.last_sent and b"X-GM-THRID)" in r.last_sent
    assert inbox == Plan(("EXAMINE", "UID SEARCH", "UID FETCH"), 3)
    assert every == Plan(("LIST", *inbox.commands), inbox.round_trips + 1)
    # The seed's headers and X-GM-THRID (its mailbox revalidated), the LIST, the search, the summaries.
    assert thread == Plan(("NOOP", "STATUS", "UID FETCH", "LIST", "UID SEARCH", "UID FETCH"), 4)
