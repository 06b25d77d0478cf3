"""Every call sees the mailbox as it is, on every server of the matrix (issue 9, defect 1).

Regression: a mailbox already selected by an earlier call was reused without a command. Courier then
never showed mail delivered by another session ("5 of 5" while 7 existed, stale counts in
imap_list_mailboxes); Dovecot showed it a call late; after another session deleted and recreated the
mailbox, Courier answered old ids with a placeholder body and old cursors with a page, and Cyrus
answered `internal` ("Mailbox does not exist" escaped from a FETCH) and 0 messages for a fresh search.
Changes are made by a second, independent IMAP session, as another mail client would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mail_imap_mcp.imap.errors import says_mailbox_missing
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.servers.imapserver import ImapServer
from tests.support.servers.matrix import inbox_only

pytestmark = pytest.mark.anyio

SERVERS = ["dovecot", "cyrus", "cyrus_altns", "courier"]
#: A test of ``server`` that names no folder but INBOX runs on each of ``SERVERS`` but Cyrus's second namespace.
INBOX_ONLY = inbox_only(SERVERS, fixture="server")


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> ImapServer:
    found: ImapServer = request.getfixturevalue(request.param)
    return found


@pytest.fixture
def mailbox_user(server: ImapServer) -> str:
    return server.new_user("t-fresh")


@pytest.fixture
async def mcp(server: ImapServer, mailbox_user: str) -> AsyncIterator[EnvelopeClient]:
    config = make_config({"default": account_settings(server, mailbox_user)})
    async for client in open_client(config):
        yield client


def other_session_appends(server: ImapServer, user: str, mailbox: str, *messages: bytes) -> None:
    client = server.connect(user)
    try:
        for message in messages:
            client.append(mailbox, message)
    finally:
        client.logout()


def other_session_expunges(server: ImapServer, user: str, mailbox: str, subject: str) -> None:
    client = server.connect(user)
    try:
        client.select_folder(mailbox)
        uids = client.search(["SUBJECT", subject])
        assert uids
        client.add_flags(uids, [b"\\Deleted"])
        client.expunge()
    finally:
        client.logout()


def subjects(data: dict[str, Any]) -> list[str]:
    return [message["subject"] for message in data["messages"]]


@INBOX_ONLY
async def test_mail_delivered_by_another_session_is_visible_in_the_next_call(
    server: ImapServer, mailbox_user: str, mcp: EnvelopeClient
) -> None:
    server.seed(mailbox_user, "INBOX", [mailgen.plain_message(f"old {i}", "body") for i in range(5)])
    assert (await mcp.ok("imap_search_messages"))["total"] == 5
    other_session_appends(
        server,
        mailbox_user,
        "INBOX",
        mailgen.plain_message("new 1", "body"),
        mailgen.plain_message("new 2", "body"),
    )
    for _ in range(3):  # and in every call after it
        data = await mcp.ok("imap_search_messages")
        assert data["total"] == 7
        assert set(subjects(data)) >= {"new 1", "new 2"}
    filtered = await mcp.ok("imap_search_messages", {"subject": "new"})
    assert sorted(subjects(filtered)) == ["new 1", "new 2"]


async def test_mailbox_counts_follow_another_sessions_changes(
    server: ImapServer, mailbox_user: str, mcp: EnvelopeClient
) -> None:
    server.seed(mailbox_user, "INBOX", [mailgen.plain_message(f"m{i}", "body") for i in range(3)])
    await mcp.ok("imap_search_messages")  # leaves INBOX selected on the server's connection
    other_session_appends(server, mailbox_user, "INBOX", mailgen.plain_message("m3", "body"))
    boxes = (await mcp.ok("imap_list_mailboxes", {"include_counts": True}))["mailboxes"]
    inbox = next(box for box in boxes if box["name"] == "INBOX")
    assert (inbox["messages"], inbox["unseen"]) == (4, 4)
    assert (await mcp.ok("imap_search_messages"))["total"] == 4


@INBOX_ONLY
async def test_a_message_expunged_by_another_session_is_not_returned(
    server: ImapServer, mailbox_user: str, mcp: EnvelopeClient
) -> None:
    server.seed(mailbox_user, "INBOX", [mailgen.plain_message(s, "body") for s in ("keep", "drop", "also")])
    before = await mcp.ok("imap_search_messages")
    dropped = next(m["message_id"] for m in before["messages"] if m["subject"] == "drop")
    other_session_expunges(server, mailbox_user, "INBOX", "drop")
    after = await mcp.ok("imap_search_messages")
    assert sorted(subjects(after)) == ["also", "keep"] and after["total"] == 2
    envelope = await mcp.fail("imap_get_message", {"message_id": dropped}, "not_found")
    assert "placeholder" not in str(envelope).lower()


async def test_ids_and_cursors_from_before_a_uidvalidity_change_get_conflict(
    server: ImapServer, mailbox_user: str, mcp: EnvelopeClient
) -> None:
    folder = server.mailbox_name("Projects")
    server.seed(mailbox_user, folder, [mailgen.plain_message(f"before {i}", "body") for i in range(5)])
    first = await mcp.ok("imap_search_messages", {"mailbox": folder, "limit": 2})
    old_id = first["messages"][0]["message_id"]
    assert (await mcp.ok("imap_get_message", {"message_id": old_id}))["message"]["subject"] == "before 4"

    old, new = server.recreate_mailbox(mailbox_user, folder)
    assert old != new
    server.seed(mailbox_user, folder, [mailgen.plain_message(f"after {i}", "body") for i in range(3)])

    for tool, arguments in (
        ("imap_get_message", {"message_id": old_id}),
        ("imap_get_message_raw", {"message_id": old_id}),
        ("imap_search_messages", {"mailbox": folder, "limit": 2, "cursor": first["next_cursor"]}),
    ):
        envelope = await mcp.fail(tool, arguments, "conflict")
        assert envelope["data"]["next_action"]["tool"] == "imap_search_messages", tool
        assert envelope["error"]["details"]["actual_uidvalidity"] == new
    fresh = await mcp.ok("imap_search_messages", {"mailbox": folder})
    assert fresh["total"] == 3
    assert sorted(subjects(fresh)) == ["after 0", "after 1", "after 2"]
    read = await mcp.ok("imap_get_message", {"message_id": fresh["messages"][0]["message_id"]})
    assert read["message"]["subject"] == "after 2"


async def test_a_mailbox_deleted_by_another_session_is_not_found_never_internal(
    server: ImapServer, mailbox_user: str, mcp: EnvelopeClient
) -> None:
    folder = server.mailbox_name("Gone")
    server.seed(mailbox_user, folder, [mailgen.plain_message("soon gone", "body")])
    data = await mcp.ok("imap_search_messages", {"mailbox": folder})
    message_id = data["messages"][0]["message_id"]
    server.delete_mailbox(mailbox_user, folder)
    for tool, arguments in (
        ("imap_get_message", {"message_id": message_id}),
        ("imap_search_messages", {"mailbox": folder}),
    ):
        envelope = await mcp.call(tool, arguments)
        assert envelope["error"]["code"] in {"not_found", "conflict"}, (tool, envelope["error"])


@pytest.mark.parametrize(
    "text",
    [
        "NO [NONEXISTENT] Mailbox doesn't exist: Gone",  # Dovecot, RFC 5530
        "NO Mailbox does not exist",  # Cyrus
        "fetch failed: Mailbox does not exist",  # Cyrus, as imapclient reports a failed FETCH
        "NO [TRYCREATE] Mailbox doesn't exist",
        "NO Invalid mailbox name.",  # Courier
    ],
)
def test_server_texts_for_a_missing_mailbox_have_one_meaning(text: str) -> None:
    from imapclient.exceptions import IMAPClientError

    assert says_mailbox_missing(IMAPClientError(text))
    assert not says_mailbox_missing(IMAPClientError("NO [OVERQUOTA] Quota exceeded"))
    assert not says_mailbox_missing(ConnectionResetError(text))
