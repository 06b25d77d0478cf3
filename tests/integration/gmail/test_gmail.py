"""Gmail as Gmail users know it, end to end through an MCP client against the Gmail emulation
(tests/support/servers/gmail_server.py): a search of every folder is a search of All Mail (each message once,
archived mail included, with its labels), conversations come from X-GM-THRID, and a server without
X-GM-EXT-1 is searched as before."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import account_client, make_config, open_client
from tests.support.mail import mailgen
from tests.support.round_trips import Plan, plain_settings, recording, rig
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.gmail import ALL_MAIL, TRASH, Gmail, attached, message, seed_labelled
from tests.support.servers.oauth2 import TokenHelper

pytestmark = pytest.mark.anyio


async def client_of(server: Gmail, user: str, **settings: Any) -> AsyncIterator[EnvelopeClient]:
    async for client in account_client(server, user, write_enabled=True, **settings):
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


async def ids_in(client: EnvelopeClient, mailbox: str) -> list[str]:
    """The ids of a mailbox's messages (its first page)."""
    found = await client.ok("imap_search_messages", {"mailbox": mailbox})
    return [m["message_id"] for m in found["messages"]]


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
    first = await gmcp.ok("imap_search_messages", {"mailbox": "*", "limit": 3})
    rest = await gmcp.ok("imap_search_messages", {"mailbox": "*", "limit": 3, "cursor": first["next_cursor"]})
    assert subjects(first["messages"]) + subjects(rest["messages"]) == subjects(data["messages"])
    assert rest.get("next_cursor") is None
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


def census(gmail: Gmail, user: str) -> dict[str, int]:
    """Messages per folder, and the distinct messages of the account (All Mail, Spam and Trash)."""
    with gmail.connect(user) as client:
        counts = {
            name: client.folder_status(name, [b"MESSAGES"])[b"MESSAGES"]
            for flags, _, name in client.list_folders()
            if b"\\Noselect" not in flags
        }
    return {**counts, "messages": len(labels_of_every_message(gmail, user))}


async def test_labels_added_removed_and_undone_nothing_lost(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient
) -> None:
    before = census(gmail, gmail_user)
    found = await gmcp.ok("imap_search_messages", {"mailbox": "*", "limit": 20})
    ids = {m["subject"]: m["message_id"] for m in found["messages"]}
    two, four = ids["About two"], ids["About four"]
    dry = await gmcp.ok(
        "imap_update_message_flags",
        {
            "message_ids": [two, four],
            "operation": "add",
            "labels": ["Receipts", "Important"],
            "dry_run": True,
        },
    )
    assert [m["labels"] for m in dry["messages"]] == [
        ["Important", "Inbox", "Receipts"],
        ["Important", "Receipts"],
    ]
    assert census(gmail, gmail_user) == before
    added = await gmcp.ok(
        "imap_update_message_flags",
        {"message_ids": [two, four], "operation": "add", "labels": ["Receipts", "\\Important"]},
    )
    assert [m["previous_labels"] for m in added["messages"]] == [["Inbox"], []]
    assert [m["labels"] for m in added["messages"]] == [
        ["Important", "Inbox", "Receipts"],
        ["Important", "Receipts"],
    ]
    assert all(m["flags"] == m["previous_flags"] for m in added["messages"])
    after = census(gmail, gmail_user)
    assert after["Receipts"] == 2 and after["[Gmail]/Important"] == before["[Gmail]/Important"] + 2
    assert after["messages"] == before["messages"] and after[ALL_MAIL] == before[ALL_MAIL]
    undo = added["next_action"]
    assert undo["tool"] == "imap_update_message_flags" and undo["arguments"]["operation"] == "remove"
    assert sorted(undo["arguments"]["labels"]) == ["Important", "Receipts"]
    await gmcp.ok(undo["tool"], undo["arguments"])
    restored = census(gmail, gmail_user)
    assert {k: v for k, v in restored.items() if k != "Receipts"} == before
    assert restored["Receipts"] == 0  # the label stays as an empty folder, as in Gmail


async def test_removing_inbox_archives_and_the_undo_uses_the_all_mail_id(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient
) -> None:
    before = census(gmail, gmail_user)
    inbox = await gmcp.ok("imap_search_messages", {"mailbox": "INBOX"})
    one = next(m["message_id"] for m in inbox["messages"] if m["subject"] == "About one")
    done = await gmcp.ok(
        "imap_update_message_flags", {"message_ids": [one], "operation": "remove", "labels": ["Inbox"]}
    )
    (result,) = done["messages"]
    assert result["labels"] == ["Important", "Work"] and result["new_message_id"].startswith(
        "imap:default:[Gmail]/All Mail:"
    )
    archived = census(gmail, gmail_user)
    assert archived["INBOX"] == before["INBOX"] - 1 and archived["messages"] == before["messages"]
    assert archived[ALL_MAIL] == before[ALL_MAIL]
    undo = done["next_action"]
    assert undo["arguments"] == {
        "message_ids": [result["new_message_id"]],
        "operation": "add",
        "labels": ["Inbox"],
    }
    await gmcp.ok(undo["tool"], undo["arguments"])
    assert census(gmail, gmail_user) == before


async def test_archive_moves_inbox_messages_to_all_mail_and_back(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient
) -> None:
    before = census(gmail, gmail_user)
    ids = await ids_in(gmcp, "INBOX")
    done = await gmcp.ok("imap_apply_to_messages", {"message_ids": ids, "action": "archive"})
    assert {r["outcome"] for r in done["results"]} == {"archived"} and done["destination_mailbox"] == ALL_MAIL
    archived = census(gmail, gmail_user)
    assert archived["INBOX"] == 0 and archived["Work"] == before["Work"]  # the other labels stay
    assert archived["messages"] == before["messages"] and archived[ALL_MAIL] == before[ALL_MAIL]
    every = await gmcp.ok("imap_search_messages", {"mailbox": "*", "limit": 20})
    assert all("Inbox" not in (m.get("labels") or []) for m in every["messages"])
    undo = done["next_action"]
    assert undo["arguments"]["action"] == "move" and undo["arguments"]["destination_mailbox"] == "INBOX"
    await gmcp.ok(undo["tool"], undo["arguments"])
    assert census(gmail, gmail_user) == before
    # Only INBOX messages are archived; elsewhere the label write says how.
    work = await gmcp.ok("imap_search_messages", {"mailbox": "Work"})
    refused = await gmcp.fail(
        "imap_apply_to_messages",
        {"message_ids": [work["messages"][0]["message_id"]], "action": "archive"},
        "invalid_input",
    )
    assert "labels" in refused["error"]["message"]
    assert census(gmail, gmail_user) == before


async def test_delete_lands_in_trash_and_permanent_is_refused_outside_trash(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient
) -> None:
    before = census(gmail, gmail_user)
    ids = await ids_in(gmcp, "Work")
    permanent = {"message_ids": ids, "action": "delete", "permanent": True}
    await gmcp.fail("imap_apply_to_messages", permanent, "permission_denied")  # off by default
    async for allowed in client_of(gmail, gmail_user, allow_permanent_delete=True):
        # Where allowed, Gmail's expunge outside Trash and Spam would remove a label: refused first.
        refused = await allowed.fail(
            "imap_apply_to_messages", {**permanent, "dry_run": True}, "invalid_input"
        )
        assert refused["error"]["details"]["parameter"] == "permanent"
    assert census(gmail, gmail_user) == before
    done = await gmcp.ok("imap_apply_to_messages", {"message_ids": ids, "action": "delete"})
    assert {r["outcome"] for r in done["results"]} == {"moved_to_trash"}
    trashed = census(gmail, gmail_user)
    assert trashed[TRASH] == before[TRASH] + 2 and trashed["Work"] == 0
    assert trashed[ALL_MAIL] == before[ALL_MAIL] - 2 and trashed["messages"] == before["messages"]


async def test_regression_trash_spam_and_no_labels_are_refused_as_label_changes(
    gmcp: EnvelopeClient, gmail: Gmail, gmail_user: str
) -> None:
    """A label change that sends mail to Trash or Spam is a delete without its Trash, audit and undo
    rules; an empty list with replace stripped every label (Inbox too) of every message given."""
    before = census(gmail, gmail_user)
    ids = await ids_in(gmcp, "INBOX")
    for labels in (["\\Trash"], ["[Gmail]/Spam"], ["Work", "spam"], []):
        args = {"message_ids": ids, "operation": "replace", "labels": labels}
        refused = await gmcp.fail("imap_update_message_flags", args, "invalid_input")
        assert refused["error"]["details"]["parameter"] == "labels", labels
    assert census(gmail, gmail_user) == before


async def test_labels_are_refused_where_the_server_has_none(gmail_unmarked: Gmail) -> None:
    user = gmail_unmarked.new_user("n")
    seed_labelled(gmail_unmarked, user)
    async for client in client_of(gmail_unmarked, user):
        ids = await ids_in(client, "INBOX")
        args = {"message_ids": ids, "operation": "add", "labels": ["Work"]}
        refused = await client.fail("imap_update_message_flags", args, "unsupported")
        assert refused["error"]["details"] == {"parameter": "labels", "missing_capability": "X-GM-EXT-1"}
        refused = await client.fail(
            "imap_apply_to_messages", {"message_ids": ids, "action": "archive"}, "unsupported"
        )
        assert refused["error"]["details"]["parameter"] == "action"
        await client.fail(
            "imap_update_message_flags", {"message_ids": ids, "operation": "add"}, "invalid_input"
        )


@pytest.mark.parametrize("auth", ["password", "xoauth2"])
async def test_gmails_connection_limit_is_unavailable_and_retryable_not_a_login_failure(
    gmail: Gmail, gmail_user: str, auth: str, tmp_path: Path
) -> None:
    """Gmail says so at LOGIN and at AUTHENTICATE (the built-in Google sign-in's XOAUTH2); the latter was
    reported as a server that cannot be talked to, its host, port and security to be checked."""
    account = account_settings(gmail, gmail_user)
    if auth == "xoauth2":  # the emulation's token is the account's password
        helper = TokenHelper(tmp_path / "helper", gmail.password)
        account.update(auth="xoauth2", oauth2_token_command=helper.command)
        del account["password_env"]
    async for client in open_client(make_config({"default": account}, write_enabled=True)):
        with contextlib.ExitStack() as others:  # another mail client holding Gmail's 15 connections
            for _ in range(15):
                others.enter_context(gmail.connect(gmail_user, tls=False, starttls=False))
            refused = await client.fail("imap_search_messages", {"mailbox": "INBOX"}, "unavailable")
            assert refused["error"]["retryable"] is True
            assert (
                "15 simultaneous" in refused["error"]["message"] and "Too many" in refused["error"]["message"]
            )
        found = await client.ok("imap_search_messages", {"mailbox": "INBOX"})
        assert subjects(found["messages"]) == ["About two", "About one"]


async def test_filters_go_out_as_gmails_own_search_beside_imap_keys(gmail: Gmail, gmail_user: str) -> None:
    """Read from the wire: what Gmail's language says is one X-GM-RAW; a keyword, which it cannot say, is
    an IMAP key beside it; the answer is the same as IMAP's would be."""
    with recording(gmail) as recorder:  # type: ignore[arg-type]
        async with rig(plain_settings(gmail, gmail_user, recorder.port), recorder) as r:  # type: ignore[arg-type]
            await r.call("imap_list_mailboxes", {})  # the login is not part of the plan below
            found, plan = await r.call(
                "imap_search_messages",
                {
                    "mailbox": "*",
                    "from": "alice",
                    "subject": "three",
                    "since": "2026-09-30",
                    "larger_than_bytes": 10,
                },
            )
            assert b'UID SEARCH X-GM-RAW "from:alice subject:three after:2026/09/30 larger:10"' in r.last_sent
            assert subjects(found["messages"]) == ["About three"]
            assert plan == Plan(("LIST", "EXAMINE", "UID SEARCH", "UID FETCH"), 4)
            unread, _ = await r.call(
                "imap_search_messages",
                {"mailbox": "INBOX", "unread_only": True, "has_keyword": "$Work", "query": "two"},
            )
            assert (
                b"X-GM-RAW " in r.last_sent
                and b"is:unread" in r.last_sent
                and b"KEYWORD $Work" in r.last_sent
            )
            assert unread["messages"] == []  # no message has the keyword


async def test_the_query_languages_gmail_operators_on_gmail_and_elsewhere(
    gmail: Gmail, gmail_unmarked: Gmail
) -> None:
    user = gmail.new_user("q")
    seed_labelled(gmail, user)
    async for client in client_of(gmail, user):
        work = await client.ok("imap_search_messages", {"mailbox": "*", "query": "label:work"})
        assert sorted(subjects(work["messages"])) == ["About one", "About three"]
        important = await client.ok(
            "imap_search_messages", {"mailbox": "*", "query": "is:important OR label:work -from:nobody"}
        )
        assert sorted(subjects(important["messages"])) == ["About one", "About three"]
        inbox = await client.ok("imap_search_messages", {"query": "in:inbox two"})
        assert subjects(inbox["messages"]) == ["About two"]
    other = gmail_unmarked.new_user("q")
    seed_labelled(gmail_unmarked, other)
    async for client in client_of(gmail_unmarked, other):
        refused = await client.fail(
            "imap_search_messages", {"mailbox": "*", "query": "label:work"}, "unsupported"
        )
        assert refused["error"]["details"]["parameter"] == "query" and "Gmail" in refused["error"]["message"]


async def test_attachments_are_found_by_gmail_not_judged_here(gmail: Gmail) -> None:
    """has:attachment and filename: go to Gmail in X-GM-RAW: one search, where another server's page
    judges every candidate's structure."""
    user = gmail.new_user("a")
    seed_labelled(gmail, user)
    scan = mailgen.large_attachment_message(3000, filename="scan-2026.pdf", subject="Scanned contract")
    gmail.seed(user, "INBOX", [scan])
    with recording(gmail) as recorder:  # type: ignore[arg-type]
        async with rig(plain_settings(gmail, user, recorder.port), recorder) as r:  # type: ignore[arg-type]
            await r.call("imap_list_mailboxes", {})
            found, plan = await r.call(
                "imap_search_messages", {"mailbox": "*", "query": "has:attachment filename:scan"}
            )
            assert b'X-GM-RAW "has:attachment filename:scan"' in r.last_sent
            assert subjects(found["messages"]) == ["Scanned contract"]
            assert plan == Plan(("LIST", "EXAMINE", "UID SEARCH", "UID FETCH"), 4)


async def test_regression_gmails_search_takes_text_beyond_ascii_and_quoted_operator_words(
    gmail: Gmail,
) -> None:
    """Without the index: ``filename:übersicht`` and ``label:Café`` were an internal error (the X-GM-RAW
    string went out as ASCII); ``"alpha" "OR" "beta"`` went out as ``alpha OR beta`` (either word) and
    ``"-alpha"`` as ``-alpha`` (every message without it)."""
    user = gmail.new_user("u")
    overview = attached("overview", 0, "filename*=utf-8''%C3%BCbersicht.pdf")
    gmail.seed(
        user, "INBOX", [overview, message("alpha", 1), message("beta", 2), message("alpha or beta", 3)]
    )
    gmail.label(user, "INBOX", [["Café"]])

    async for client in client_of(gmail, user):

        async def found(query: str, client: EnvelopeClient = client) -> list[str]:
            data = await client.ok("imap_search_messages", {"mailbox": "*", "query": query})
            return sorted(subjects(data["messages"]))

        assert await found("filename:übersicht") == ["About overview"]
        assert await found("label:Café") == ["About overview"]
        assert await found("alpha OR beta") == ["About alpha", "About alpha or beta", "About beta"]
        assert await found('"alpha" "OR" "beta"') == ["About alpha or beta"]
        assert await found('"-alpha"') == ["About alpha", "About alpha or beta"]


async def test_a_message_under_several_labels_comes_once_in_a_search_of_them(gmcp: EnvelopeClient) -> None:
    data = await gmcp.ok(
        "imap_search_messages", {"mailboxes": ["INBOX", "Work"], "limit": 20, "fields": "full"}
    )
    # "About one" is in INBOX and in Work: one Gmail message (one X-GM-MSGID), listed once, where found first.
    assert sorted(subjects(data["messages"])) == ["About one", "About three", "About two"]
    assert (data["attempted"], data["returned"], data["failed"]) == (3, 3, 0)


async def test_label_writes_send_their_plans(gmail: Gmail, gmail_user: str) -> None:
    """Read from the wire: adding a label is a read and one STORE whose answer is the labels after;
    removing Inbox also looks the message up in All Mail by its X-GM-MSGID (it left INBOX)."""
    with recording(gmail) as recorder:  # type: ignore[arg-type]
        async with rig(
            {**plain_settings(gmail, gmail_user, recorder.port), "write_enabled": True}, recorder
        ) as r:  # type: ignore[arg-type]
            inbox, _ = await r.call("imap_search_messages", {"mailbox": "INBOX"})
            ids = [m["message_id"] for m in inbox["messages"]]
            _, added = await r.call(
                "imap_update_message_flags", {"message_ids": ids, "operation": "add", "labels": ["X"]}
            )
            assert b'UID STORE 1:2 +X-GM-LABELS ("X")' in r.last_sent
            _, archived = await r.call(
                "imap_update_message_flags",
                {"message_ids": ids[:1], "operation": "remove", "labels": ["Inbox"]},
            )
    # The LIST: whether a label added names the Trash or Spam (by special use), before anything changes.
    assert added == Plan(("LIST", "SELECT", "UID FETCH", "UID STORE"), 4)
    # Then: which left INBOX, the LIST that names All Mail, and the message found there by X-GM-MSGID.
    assert archived == Plan(
        ("SELECT", "UID FETCH", "UID STORE", "UID SEARCH", "LIST", "EXAMINE", "UID SEARCH", "UID FETCH"), 8
    )


async def cut_while_changing(
    gmail: Gmail, user: str, marker: bytes, change: dict[str, Any], times: int = 1
) -> tuple[dict[str, Any], bytes, list[str]]:
    """imap_update_message_flags with ``change`` on the user's INBOX messages through the fault proxy,
    which cuts the connection once, when ``marker`` was sent (``times`` times): the answer, every byte
    that reached the emulation and the ids changed."""
    with FaultProxy(gmail.host, gmail.plain_port) as proxy:
        settings = {**plain_settings(gmail, user, proxy.port), "write_enabled": True}
        async with rig(settings, None) as r:
            ids = await ids_in(r.client, "INBOX")
            proxy.cut_after_sent(marker, times)
            data = await r.client.ok("imap_update_message_flags", {"message_ids": ids, **change})
            assert proxy.cuts == 1
            return data, proxy.sent(), ids


def assert_unknown_and_not_sent_again(data: dict[str, Any], sent: bytes, store: bytes) -> None:
    """The label STORE went out once, and its messages are outcome_unknown, to be searched for."""
    assert sent.count(store) == 1, "the STORE was sent again"
    assert data["status"] == "partial" and data["messages"] == []
    assert {(i["code"], i["retryable"]) for i in data["issues"]} == {("outcome_unknown", False)}
    assert data["next_action"]["tool"] == "imap_search_messages"


async def test_a_label_store_whose_answer_is_lost_is_outcome_unknown_and_never_replayed(
    gmail: Gmail, gmail_user: str
) -> None:
    before = census(gmail, gmail_user)
    data, sent, _ = await cut_while_changing(
        gmail, gmail_user, b"X-GM-LABELS (", {"operation": "add", "labels": ["Lost"]}
    )
    assert_unknown_and_not_sent_again(data, sent, b"+X-GM-LABELS")
    after = census(gmail, gmail_user)
    # Gmail did make the change, once; nothing else moved.
    assert after["Lost"] == 2 and {k: v for k, v in after.items() if k != "Lost"} == before


async def test_regression_a_label_store_lost_while_looking_in_all_mail_is_outcome_unknown(
    gmail: Gmail, gmail_user: str
) -> None:
    """Removing Inbox takes the messages out of INBOX; the connection dies while they are looked up in All
    Mail, after the STORE was answered: the change happened, so it is never not_attempted (an invitation
    to send it again) but outcome_unknown, and nothing is sent again."""
    before = census(gmail, gmail_user)
    data, sent, ids = await cut_while_changing(
        gmail, gmail_user, b'EXAMINE "[Gmail]/All Mail"', {"operation": "remove", "labels": ["Inbox"]}
    )
    assert_unknown_and_not_sent_again(data, sent, b"-X-GM-LABELS")
    assert sorted(i["message_id"] for i in data["issues"]) == sorted(ids)
    after = census(gmail, gmail_user)
    assert after["INBOX"] == before["INBOX"] - 2 and after["messages"] == before["messages"]
    assert {k: v for k, v in after.items() if k != "INBOX"} == {
        k: v for k, v in before.items() if k != "INBOX"
    }


@pytest.mark.parametrize(
    ("marker", "times"),
    [(b"(FLAGS X-GM-LABELS X-GM-MSGID)", 1), (b"(FLAGS)", 2)],
    ids=["reading the labels", "reading the flags back"],
)
async def test_regression_labels_lost_before_their_store_after_the_flags_changed_are_said(
    gmail: Gmail, gmail_user: str, marker: bytes, times: int
) -> None:
    """Flags and labels in one call: the flags are stored, then the connection dies reading the flags back
    or the labels. The flags' results stand, and each message says its labels were not changed
    (not_attempted), where the label change used to vanish without a word."""
    before = census(gmail, gmail_user)
    change = {"operation": "add", "flags": ["\\Flagged"], "labels": ["Later"]}
    data, sent, ids = await cut_while_changing(gmail, gmail_user, marker, change, times)
    assert b"X-GM-LABELS (" not in sent and sent.count(b"+FLAGS") == 1
    assert data["status"] == "partial"
    assert [m["flags"] for m in data["messages"]] == [["\\Flagged"], ["\\Flagged"]]
    assert all(m.get("labels") is None for m in data["messages"])
    assert sorted(i["message_id"] for i in data["issues"]) == sorted(ids)
    assert {(i["code"], i["retryable"]) for i in data["issues"]} == {("not_attempted", True)}
    after = census(gmail, gmail_user)
    # Flagged is Gmail's Starred: the two messages are there now, and nothing else changed.
    assert "Later" not in after and after == {**before, "[Gmail]/Starred": before["[Gmail]/Starred"] + 2}


async def test_regression_a_label_replace_that_fails_part_way_says_which_messages_changed(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient
) -> None:
    """Gmail changes the first message, then answers NO: the first is reported changed with its labels
    now, the second refused and unchanged (the whole mailbox was reported refused); every folder counted."""
    before = census(gmail, gmail_user)
    one, two = await inbox_ids(gmcp, "About one", "About two")
    gmail.fail_label_store(gmail_user, after=1)
    data = await gmcp.ok(
        "imap_update_message_flags",
        {"message_ids": [one, two], "operation": "replace", "labels": ["Inbox", "Receipts"]},
    )
    assert data["status"] == "partial" and data["changed"] == 1
    (changed,) = data["messages"]
    assert changed["message_id"] == one and changed["changed"]
    assert (changed["previous_labels"], changed["labels"]) == (
        ["Important", "Inbox", "Work"],
        ["Inbox", "Receipts"],
    )
    (issue,) = data["issues"]
    assert (issue["message_id"], issue["code"]) == (two, "store_refused")
    after = census(gmail, gmail_user)
    assert after == {
        **before,
        "Receipts": 1,
        "Work": before["Work"] - 1,
        "[Gmail]/Important": before["[Gmail]/Important"] - 1,
    }
    undo = data["next_action"]
    assert undo["tool"] == "imap_update_message_flags" and undo["arguments"]["message_ids"] == [one]
    await gmcp.ok(undo["tool"], undo["arguments"])
    assert {k: v for k, v in census(gmail, gmail_user).items() if k != "Receipts"} == before


async def inbox_ids(gmcp: EnvelopeClient, *subjects: str) -> list[str]:
    """The message ids of INBOX's messages with ``subjects``, in that order."""
    inbox = await gmcp.ok("imap_search_messages", {"mailbox": "INBOX"})
    return [next(m["message_id"] for m in inbox["messages"] if m["subject"] == s) for s in subjects]


def labels_of_every_message(gmail: Gmail, user: str) -> dict[int, set[str]]:
    """Each message of the account (by X-GM-MSGID; All Mail, Spam and Trash) with its labels."""
    labels: dict[int, set[str]] = {}
    with gmail.connect(user) as client:
        every = [
            name for flags, _, name in client.list_folders() if {b"\\All", b"\\Trash", b"\\Junk"} & set(flags)
        ]
        for name in every:
            client.select_folder(name, readonly=True)
            found = client.search("ALL")
            for data in client.fetch(found, ["X-GM-MSGID", "X-GM-LABELS"]).values() if found else ():
                names = (n.decode() if isinstance(n, bytes) else str(n) for n in data[b"X-GM-LABELS"])
                labels.setdefault(data[b"X-GM-MSGID"], set()).update(names)
    return labels


@pytest.mark.parametrize("operation", ["add", "remove"])
async def test_regression_a_message_already_as_asked_is_not_refused_when_the_label_store_fails_part_way(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient, operation: str
) -> None:
    """Gmail changes the first message, then answers NO: the second, which already had the label added
    (or lacked the label removed), is in the state asked for and is reported unchanged, not refused (it
    was store_refused because its labels were as before). Every message's labels counted."""
    gmail.label(gmail_user, "INBOX", [["Later"], []] if operation == "remove" else [[], ["Later"]])
    before = labels_of_every_message(gmail, gmail_user)
    one, two = await inbox_ids(gmcp, "About one", "About two")
    gmail.fail_label_store(gmail_user, after=1)
    data = await gmcp.ok(
        "imap_update_message_flags", {"message_ids": [one, two], "operation": operation, "labels": ["Later"]}
    )
    assert (data["status"], data["issues"]) == ("ok", [])
    assert data["changed"] == 1
    assert [(m["message_id"], m["changed"]) for m in data["messages"]] == [(one, True), (two, False)]
    (second,) = (m for m in data["messages"] if m["message_id"] == two)
    assert second["labels"] == second["previous_labels"]
    assert ("Later" in second["labels"]) == (operation == "add")
    assert data["next_action"]["arguments"]["message_ids"] == [one]  # the undo leaves the second alone
    after = labels_of_every_message(gmail, gmail_user)
    first = next(msgid for msgid, names in before.items() if ("Later" in names) != (operation == "add"))
    expected = before[first] | {"Later"} if operation == "add" else before[first] - {"Later"}
    assert after == {**before, first: expected}


async def test_regression_a_label_that_reads_as_a_number_is_kept_in_a_label_writes_results(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient
) -> None:
    """Gmail sends a label named 2026 as an atom, which reads as a number: a label write read it as no
    label (its previous and new labels lacked it), where a search showed it."""
    gmail.label(gmail_user, "INBOX", [[], ["2026"]])
    inbox = await gmcp.ok("imap_search_messages", {"mailbox": "INBOX", "fields": "full"})
    two = next(m for m in inbox["messages"] if m["subject"] == "About two")
    assert two["labels"] == ["2026", "Inbox"]
    data = await gmcp.ok(
        "imap_update_message_flags",
        {"message_ids": [two["message_id"]], "operation": "add", "labels": ["Tax"]},
    )
    (result,) = data["messages"]
    assert (result["previous_labels"], result["labels"]) == (["2026", "Inbox"], ["2026", "Inbox", "Tax"])


def audited(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The audit lines written so far."""
    return [record.audit for record in caplog.records if hasattr(record, "audit")]


async def test_regression_a_copy_or_move_into_trash_is_a_delete_and_into_spam_is_refused(
    gmail: Gmail, gmail_user: str, gmcp: EnvelopeClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A copy into [Gmail]/Trash took the message out of Inbox and All Mail (Gmail deletes what lands in
    Trash) and was answered "Copied 1 of 1", audited ``copy``, with no undo. A copy or move into the
    mailbox marked ``\\Trash`` is answered as action delete (its answer, audit and undo); into the one
    marked ``\\Junk`` it is refused. Every message of the account and its labels counted throughout."""
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    before, labels = census(gmail, gmail_user), labels_of_every_message(gmail, gmail_user)
    (two,) = await inbox_ids(gmcp, "About two")
    for action in ("copy", "move"):
        spam = {"message_ids": [two], "action": action, "destination_mailbox": "[Gmail]/Spam"}
        refused = await gmcp.fail("imap_apply_to_messages", spam, "invalid_input")
        assert refused["error"]["details"]["parameter"] == "destination_mailbox"
    copy = {"message_ids": [two], "action": "copy", "destination_mailbox": TRASH}
    dry = await gmcp.ok("imap_apply_to_messages", {**copy, "dry_run": True})
    assert (dry["action"], dry["results"][0]["outcome"]) == ("delete", "would_move_to_trash")
    assert census(gmail, gmail_user) == before and labels_of_every_message(gmail, gmail_user) == labels
    envelope = await gmcp.call("imap_apply_to_messages", copy)
    done = envelope["data"]
    assert envelope["summary"].startswith("Moved to Trash 1 of 1") and done["action"] == "delete"
    assert [r["outcome"] for r in done["results"]] == ["moved_to_trash"] and done[
        "destination_mailbox"
    ] == TRASH
    assert any("done as action delete" in warning for warning in envelope["meta"]["warnings"])
    assert (audited(caplog)[-1]["action"], audited(caplog)[-1]["outcome"]) == ("delete", "ok")
    trashed = census(gmail, gmail_user)
    assert (trashed[TRASH], trashed["INBOX"]) == (before[TRASH] + 1, before["INBOX"] - 1)
    assert trashed[ALL_MAIL] == before[ALL_MAIL] - 1 and trashed["messages"] == before["messages"]
    undo = done["next_action"]
    assert undo["arguments"]["action"] == "move" and undo["arguments"]["destination_mailbox"] == "INBOX"
    await gmcp.ok(undo["tool"], undo["arguments"])
    assert census(gmail, gmail_user) == before and labels_of_every_message(gmail, gmail_user) == labels
    # A move out of a label folder into Trash: the same delete, undone into that folder.
    work = await gmcp.ok("imap_search_messages", {"mailbox": "Work"})
    (three,) = [m["message_id"] for m in work["messages"] if m["subject"] == "About three"]
    moved = await gmcp.ok(
        "imap_apply_to_messages", {"message_ids": [three], "action": "move", "destination_mailbox": TRASH}
    )
    assert (moved["action"], moved["results"][0]["outcome"]) == ("delete", "moved_to_trash")
    assert audited(caplog)[-1]["action"] == "delete"
    assert census(gmail, gmail_user)[TRASH] == before[TRASH] + 1
    await gmcp.ok(moved["next_action"]["tool"], moved["next_action"]["arguments"])
    assert census(gmail, gmail_user) == before and labels_of_every_message(gmail, gmail_user) == labels


async def test_regression_trash_and_spam_are_known_by_their_special_use_not_their_names(
    gmail_german: Gmail,
) -> None:
    """A German account's Trash is ``[Google Mail]/Papierkorb``: a copy into it is a delete, a move into
    ``[Google Mail]/Spam`` is refused, and neither is a label; by special-use attribute, not by name
    (the label path refused ``[Gmail]/Trash`` by its name only)."""
    user = gmail_german.new_user("de")
    gmail_german.seed(user, "INBOX", [message("eins", 0), message("zwei", 1)])
    trash, spam = "[Google Mail]/Papierkorb", "[Google Mail]/Spam"
    before, labels = census(gmail_german, user), labels_of_every_message(gmail_german, user)
    async for client in client_of(gmail_german, user):
        ids = await ids_in(client, "INBOX")
        for label in (trash, spam, "[google mail]/papierkorb"):
            args = {"message_ids": ids, "operation": "add", "labels": [label]}
            refused = await client.fail("imap_update_message_flags", args, "invalid_input")
            assert refused["error"]["details"]["parameter"] == "labels", label
        args = {"message_ids": ids[:1], "action": "move", "destination_mailbox": spam}
        refused = await client.fail("imap_apply_to_messages", args, "invalid_input")
        assert refused["error"]["details"]["parameter"] == "destination_mailbox"
        assert census(gmail_german, user) == before and labels_of_every_message(gmail_german, user) == labels
        args = {"message_ids": ids[:1], "action": "copy", "destination_mailbox": trash}
        done = await client.ok("imap_apply_to_messages", args)
        assert (done["action"], done["destination_mailbox"]) == ("delete", trash)
        after = census(gmail_german, user)
        assert (after[trash], after["INBOX"], after["messages"]) == (1, 1, 2)
        await client.ok(done["next_action"]["tool"], done["next_action"]["arguments"])
        assert census(gmail_german, user) == before and labels_of_every_message(gmail_german, user) == labels
