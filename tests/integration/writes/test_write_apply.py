"""imap_apply_to_messages through an MCP client on the server matrix (Dovecot, Cyrus in both namespaces,
Courier), a Dovecot without UIDPLUS and MOVE, and a connection reset behind the fault proxy.

Every mailbox of the user is read by Message-ID with a session of its own (``message_id_counts``) before and
after each change, so "moved, not duplicated, nothing else touched" is counted, not assumed. Courier has
no MOVE: there a move is UID COPY + \\Deleted + UID EXPUNGE of exactly those UIDs, and a message another
client marked \\Deleted beforehand must survive it. Trash is found by special-use on Dovecot and Cyrus and
through the account's trash_mailbox on Courier.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from typing import Any

import pytest

from mail_imap_mcp.config import Config
from tests.support.accounts import account_settings
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import MessageIdCounts, message_id_counts
from tests.support.mail.mailgen import plain_message
from tests.support.servers.courier import Courier
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import ON_DOVECOT, MatrixServer

pytestmark = pytest.mark.anyio

TOOL = "imap_apply_to_messages"


def moved(before: MessageIdCounts, source: str, destination: str, message_ids: list[str]) -> MessageIdCounts:
    """``before`` with ``message_ids`` moved from ``source`` to ``destination``."""
    after = {name: Counter(ids) for name, ids in before.items()}
    for mid in message_ids:
        assert after[source][mid] == 1, (source, mid)
        after[source][mid] -= 1
        after[destination][mid] += 1
    return {name: +ids for name, ids in after.items()}


def clean(found: MessageIdCounts) -> MessageIdCounts:
    return {name: +ids for name, ids in found.items()}


def mid_of(subject: str) -> str:
    """The Message-ID plain_message() gives a message with ``subject`` (and the default sender/date)."""
    match = re.search(rb"^Message-ID: (<[^<>\s]+>)", plain_message(subject, "x"), re.MULTILINE)
    assert match is not None
    return match.group(1).decode()


def trash_of(server: MatrixServer) -> str:
    return server.mailbox_name("Trash")


def setup_user(server: MatrixServer, user: str, subjects: list[str]) -> None:
    """INBOX with one message per subject, a \\Deleted bystander first, an empty Archive and Trash."""
    server.seed(
        user,
        "INBOX",
        [
            plain_message("bystander", "marked deleted by another client"),
            *(plain_message(s, s) for s in subjects),
        ],
        flags=lambda i: "\\Deleted" if i == 0 else "",
    )
    server.seed(user, server.mailbox_name("Archive"), [])
    server.seed(user, trash_of(server), [])


def write_config(server: MatrixServer, account: AccountFactory, user: str, **settings: Any) -> Config:
    """Writes on; Courier marks no \\Trash, so its account names the Trash folder."""
    extra = {"trash_mailbox": trash_of(server)} if isinstance(server, Courier) else {}
    return make_config({"default": account(user, **extra)}, write_enabled=True, **settings)


async def ids_by_subject(mcp: EnvelopeClient, mailbox: str = "INBOX") -> dict[str, str]:
    data = await mcp.ok("imap_search_messages", {"mailbox": mailbox, "limit": 50, "snippet_chars": 0})
    return {m["subject"]: m["message_id"] for m in data["messages"]}


async def subject_of(mcp: EnvelopeClient, message_id: str) -> str:
    data = await mcp.ok("imap_get_message", {"message_id": message_id, "body_max_chars": 100})
    subject: str = data["message"]["subject"]
    return subject


# ------------------------------------------------------------------------------------ the matrix


async def test_move_copy_delete_and_undo(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Dry run, move, undo, copy, delete to Trash and its undo: every mailbox counted after each step; the
    new ids resolve; the \\Deleted bystander in INBOX survives them all (Courier: COPY + UID EXPUNGE)."""
    setup_user(imap_server, user, ["one", "two", "three", "four"])
    archive, trash = imap_server.mailbox_name("Archive"), trash_of(imap_server)
    start = clean(message_id_counts(imap_server, user))
    assert start["INBOX"][mid_of("bystander")] == 1
    fallback = isinstance(imap_server, Courier)
    async for mcp in open_client(write_config(imap_server, account, user)):
        ids = await ids_by_subject(mcp)
        pair = [ids["one"], ids["two"]]

        plan = await mcp.ok(
            TOOL, {"message_ids": pair, "action": "move", "destination_mailbox": archive, "dry_run": True}
        )
        assert [r["outcome"] for r in plan["results"]] == ["would_move", "would_move"]
        assert plan["mailboxes"] == [
            {
                "source_mailbox": "INBOX",
                "destination_mailbox": archive,
                "messages": 2,
                "missing": 0,
                "method": "UID COPY + UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"
                if fallback
                else "UID MOVE",
            }
        ]
        assert plan["next_action"]["arguments"] == {
            "message_ids": pair,
            "action": "move",
            "destination_mailbox": archive,
        }
        assert clean(message_id_counts(imap_server, user)) == start

        data = await mcp.ok(TOOL, {"message_ids": pair, "action": "move", "destination_mailbox": archive})
        assert (data["status"], data["changed"], data["requested"]) == ("ok", 2, 2)
        assert [r["outcome"] for r in data["results"]] == ["moved", "moved"]
        new_ids = [r["new_message_id"] for r in data["results"]]
        assert all(new_id.startswith(f"imap:default:{archive}:") for new_id in new_ids)
        assert [await subject_of(mcp, new_id) for new_id in new_ids] == ["one", "two"]
        after_move = moved(start, "INBOX", archive, [mid_of("one"), mid_of("two")])
        assert clean(message_id_counts(imap_server, user)) == after_move

        undo = data["next_action"]
        assert undo == data["undo"][0]
        assert undo["arguments"] == {"message_ids": new_ids, "action": "move", "destination_mailbox": "INBOX"}
        back = await mcp.ok(TOOL, undo["arguments"])
        assert [r["outcome"] for r in back["results"]] == ["moved", "moved"]
        assert clean(message_id_counts(imap_server, user)) == start

        copy = await mcp.ok(
            TOOL, {"message_ids": [ids["three"]], "action": "copy", "destination_mailbox": archive}
        )
        (copied,) = copy["results"]
        assert copied["outcome"] == "copied"
        assert await subject_of(mcp, copied["new_message_id"]) == "three"
        assert copy["undo"] == []
        with_copy = {name: Counter(found) for name, found in start.items()}
        with_copy[archive][mid_of("three")] += 1
        assert clean(message_id_counts(imap_server, user)) == with_copy

        deleted = await mcp.ok(TOOL, {"message_ids": [ids["four"]], "action": "delete"})
        assert deleted["destination_mailbox"] == trash
        (result,) = deleted["results"]
        assert result["outcome"] == "moved_to_trash"
        assert await subject_of(mcp, result["new_message_id"]) == "four"
        assert clean(message_id_counts(imap_server, user)) == moved(
            with_copy, "INBOX", trash, [mid_of("four")]
        )
        # Deleting what is in Trash already changes nothing: refused, with the way to remove it for good.
        again = await mcp.fail(
            TOOL, {"message_ids": [result["new_message_id"]], "action": "delete"}, "invalid_input"
        )
        assert again["error"]["details"]["parameter"] == "permanent"
        restored = await mcp.ok(TOOL, deleted["next_action"]["arguments"])
        assert [r["outcome"] for r in restored["results"]] == ["moved"]
        assert clean(message_id_counts(imap_server, user)) == with_copy
        assert (await ids_by_subject(mcp)).keys() == {"bystander", "one", "two", "three", "four"}


async def test_permanent_delete_is_allowed_confirmed_and_exact(
    imap_server: MatrixServer, user: str, account: AccountFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Refused unless allow_permanent_delete; then, where the user opted in to confirming without
    elicitation, confirmation_required (nothing changed), and with the token exactly the given message
    is expunged: the \\Deleted bystander stays."""
    setup_user(imap_server, user, ["keep", "drop"])
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    start = clean(message_id_counts(imap_server, user))
    async for mcp in open_client(write_config(imap_server, account, user)):
        ids = await ids_by_subject(mcp)
        args = {"message_ids": [ids["drop"]], "action": "delete", "permanent": True}
        refused = await mcp.fail(TOOL, args, "permission_denied")
        assert refused["error"]["details"]["setting"] == "allow_permanent_delete"
        assert "allow_permanent_delete" in refused["error"]["message"]
    assert clean(message_id_counts(imap_server, user)) == start
    opted_in = write_config(
        imap_server, account, user, allow_permanent_delete=True, confirm_without_elicitation=True
    )
    async for mcp in open_client(opted_in):
        plan = await mcp.ok(TOOL, {**args, "dry_run": True})
        assert plan["results"][0]["outcome"] == "would_delete"
        asked = await mcp.fail(TOOL, args, "confirmation_required")
        assert clean(message_id_counts(imap_server, user)) == start
        data = await mcp.ok(TOOL, asked["data"]["next_action"]["arguments"])
        assert data["results"] == [{"message_id": ids["drop"], "new_message_id": None, "outcome": "deleted"}]
        assert data["next_action"] is None
        assert data["mailboxes"][0]["method"] == "UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"
    audit = [r.getMessage() for r in caplog.records if r.name == "mail_imap_mcp.audit"]
    assert [line.split(" action=")[1] for line in audit] == [
        "delete_permanent messages=1 outcome=permission_denied",
        "dry_run:delete_permanent messages=1 outcome=ok",
        "delete_permanent messages=1 outcome=confirmation_required",
        "delete_permanent messages=1 outcome=ok",
    ]
    expected = {name: Counter(found) for name, found in start.items()}
    expected["INBOX"][mid_of("drop")] -= 1
    assert clean(message_id_counts(imap_server, user)) == clean(expected)


@ON_DOVECOT
async def test_regression_permanent_delete_is_confirmed_by_the_user_never_by_a_token_the_agent_holds(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    # Issue 25: with allow_permanent_delete, the answer carried the token in error.details and in a ready
    # next_action: a prompt-injected agent deleted for good in two calls (even from another session).
    # Dovecot alone: who confirms is asking's, no server's:
    # tests/pure/test_writes.py::test_a_permanent_delete_asks_the_user_naming_what_cannot_be_recovered,
    # tests/pure/test_asking_choose.py; the exact expunge on every server:
    # test_permanent_delete_is_allowed_confirmed_and_exact.
    setup_user(imap_server, user, ["keep", "drop"])
    start = clean(message_id_counts(imap_server, user))
    config = write_config(imap_server, account, user, allow_permanent_delete=True)
    async for mcp in open_client(config):  # a client without elicitation
        ids = await ids_by_subject(mcp)
        args = {"message_ids": [ids["drop"]], "action": "delete", "permanent": True}
        refused = await mcp.fail(TOOL, args, "permission_denied")
        assert "confirm_token" not in json.dumps(refused)
        assert refused["error"]["details"]["setting"] == "confirm_without_elicitation"
        forged = await mcp.fail(TOOL, {**args, "confirm_token": "9999999999.abc.def"}, "invalid_input")
        assert forged["error"]["details"]["parameter"] == "confirm_token"
    assert clean(message_id_counts(imap_server, user)) == start
    declining = answering("accept", confirm=False)
    async for mcp in open_client(config, elicitation_callback=declining, mode="legacy"):
        await mcp.fail(TOOL, args, "confirmation_required")
    assert clean(message_id_counts(imap_server, user)) == start
    accepting = answering("accept")
    async for mcp in open_client(config, elicitation_callback=accepting, mode="legacy"):
        data = await mcp.ok(TOOL, args)
        assert data["results"] == [{"message_id": ids["drop"], "new_message_id": None, "outcome": "deleted"}]
    assert accepting.asked == declining.asked
    assert accepting.asked[0].startswith("Permanently delete 1 message(s)")
    expected = {name: Counter(found) for name, found in start.items()}
    expected["INBOX"][mid_of("drop")] -= 1
    assert clean(message_id_counts(imap_server, user)) == clean(expected)


@pytest.mark.parametrize("imap_server", ["dovecot", "courier"], indirect=True)
async def test_messages_of_several_mailboxes_in_one_call(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Ids from INBOX and Archive deleted together: each mailbox selected and checked, one undo per source
    mailbox, and undoing both restores every mailbox."""
    setup_user(imap_server, user, ["inbox one", "inbox two"])
    archive, trash = imap_server.mailbox_name("Archive"), trash_of(imap_server)
    imap_server.seed(user, archive, [plain_message("archived", "a")])
    start = clean(message_id_counts(imap_server, user))
    async for mcp in open_client(write_config(imap_server, account, user)):
        inbox, archived = await ids_by_subject(mcp), await ids_by_subject(mcp, archive)
        given = [inbox["inbox two"], archived["archived"], inbox["inbox one"], inbox["inbox two"]]
        data = await mcp.ok(TOOL, {"message_ids": given, "action": "delete"})
        assert (data["requested"], data["changed"], data["status"]) == (3, 3, "ok")
        assert [r["message_id"] for r in data["results"]] == given[:3]
        assert [(m["source_mailbox"], m["messages"]) for m in data["mailboxes"]] == [
            ("INBOX", 2),
            (archive, 1),
        ]
        after = moved(start, "INBOX", trash, [mid_of("inbox one"), mid_of("inbox two")])
        assert clean(message_id_counts(imap_server, user)) == moved(
            after, archive, trash, [mid_of("archived")]
        )
        assert sorted(u["arguments"]["destination_mailbox"] for u in data["undo"]) == sorted(
            ["INBOX", archive]
        )
        for undo in data["undo"]:
            await mcp.ok(TOOL, undo["arguments"])
        assert clean(message_id_counts(imap_server, user)) == start


async def test_refusals_change_nothing(imap_server: MatrixServer, user: str, account: AccountFactory) -> None:
    """Missing destination, a move into the messages' own mailbox, stale ids, writes off: refused with
    the parameter or setting named, and every mailbox as it was."""
    setup_user(imap_server, user, ["one", "two"])
    async for mcp in open_client(write_config(imap_server, account, user)):
        ids = await ids_by_subject(mcp)
        pair = [ids["one"], ids["two"]]
        start = clean(message_id_counts(imap_server, user))
        missing = imap_server.mailbox_name("Nowhere")
        envelope = await mcp.fail(
            TOOL, {"message_ids": pair, "action": "move", "destination_mailbox": missing}, "not_found"
        )
        assert envelope["error"]["details"] == {"parameter": "destination_mailbox", "mailbox": missing}
        envelope = await mcp.fail(
            TOOL, {"message_ids": pair, "action": "move", "destination_mailbox": "INBOX"}, "invalid_input"
        )
        assert envelope["error"]["details"]["parameter"] == "destination_mailbox"
        # One id vanished meanwhile: the other is moved, the gone one reported.
        gone, kept = ids["one"], ids["two"]
        with imap_server.connect(user, tls=False, starttls=False) as other:
            other.select_folder("INBOX")
            other.add_flags([int(gone.rsplit(":", 1)[1])], [b"\\Deleted"])
            other.uid_expunge([int(gone.rsplit(":", 1)[1])])
        data = await mcp.ok(
            TOOL, {"message_ids": [gone, kept], "action": "copy", "destination_mailbox": "INBOX"}
        )
        assert data["status"] == "partial"
        assert [r["outcome"] for r in data["results"]] == ["not_found", "copied"]
        assert [(i["code"], i["message_id"]) for i in data["issues"]] == [("not_found", gone)]
        envelope = await mcp.fail(TOOL, {"message_ids": [gone], "action": "delete"}, "not_found")
        assert envelope["error"]["details"]["parameter"] == "message_ids"
    start = clean(message_id_counts(imap_server, user))
    # Writes off for this account (another one allows them, so the tool is listed).
    accounts = {"default": account(user), "other": account(user, write_enabled=True)}
    async for mcp in open_client(make_config(accounts)):
        envelope = await mcp.fail(TOOL, {"message_ids": [kept], "action": "delete"}, "permission_denied")
        assert envelope["error"]["details"]["setting"] == "write_enabled"
    assert clean(message_id_counts(imap_server, user)) == start
    if isinstance(imap_server, Courier):
        return  # Courier derives UIDVALIDITY from the clock: recreating INBOX's sibling is slow there
    archive = imap_server.mailbox_name("Archive")
    imap_server.seed(user, archive, [plain_message("archived", "a")])
    async for mcp in open_client(write_config(imap_server, account, user)):
        (archived,) = (await ids_by_subject(mcp, archive)).values()
        imap_server.recreate_mailbox(user, archive)
        start = clean(message_id_counts(imap_server, user))
        envelope = await mcp.fail(
            TOOL, {"message_ids": [archived], "action": "move", "destination_mailbox": "INBOX"}, "conflict"
        )
        assert envelope["data"]["next_action"]["tool"] == "imap_search_messages"
    assert clean(message_id_counts(imap_server, user)) == start


# ------------------------------------------------------------------------- input, without a server


async def test_archive_is_unsupported_off_gmail_naming_the_argument(
    user: str, account: AccountFactory
) -> None:
    # Well formed, but Gmail's alone (X-GM-EXT-1): unsupported, naming the argument. (Malformed arguments
    # are refused before any server is reached: tests/pure/test_bad_arguments.py.)
    async for mcp in open_client(make_config({"default": account(user)}, write_enabled=True)):
        arguments = {"message_ids": ["imap:default:INBOX:1:1"], "action": "archive"}
        envelope = await mcp.fail(TOOL, arguments, "unsupported")
        assert envelope["error"]["details"]["parameter"] == "action"


async def test_delete_without_a_trash_names_the_setting(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    """No mailbox marked \\Trash (this user has none) and no trash_mailbox: not_found naming the setting,
    also when the ids say "default" for the only account, here named "work"."""
    dovecot.seed(user, "INBOX", [plain_message("one", "1")])
    start = clean(message_id_counts(dovecot, user))
    async for mcp in open_client(make_config({"work": account(user)}, write_enabled=True)):
        (one,) = (await ids_by_subject(mcp)).values()
        alias = one.replace("imap:work:", "imap:default:")
        envelope = await mcp.fail(TOOL, {"message_ids": [alias], "action": "delete"}, "not_found")
        assert envelope["error"]["details"]["setting"] == "trash_mailbox"
        assert "trash_mailbox" in envelope["error"]["message"]
    assert clean(message_id_counts(dovecot, user)) == start


# --------------------------------------------------------------------- a server without UIDPLUS/MOVE


async def test_without_uidplus_and_move_only_copy_works(dovecot_without_uidplus: Dovecot) -> None:
    """Move, delete to Trash and permanent delete are refused (they would need a mailbox-wide EXPUNGE),
    nothing changed; copy works, with no new ids (no COPYUID) and a note saying so."""
    user = dovecot_without_uidplus.new_user()
    setup_user(dovecot_without_uidplus, user, ["one"])
    settings = account_settings(dovecot_without_uidplus, user, trash_mailbox="Trash")
    config = make_config({"default": settings}, write_enabled=True, allow_permanent_delete=True)
    start = clean(message_id_counts(dovecot_without_uidplus, user))
    async for mcp in open_client(config):
        (one,) = [i for s, i in (await ids_by_subject(mcp)).items() if s == "one"]
        for args in (
            {"message_ids": [one], "action": "move", "destination_mailbox": "Archive"},
            {"message_ids": [one], "action": "delete"},
            {"message_ids": [one], "action": "delete", "permanent": True},
            {"message_ids": [one], "action": "delete", "permanent": True, "dry_run": True},
        ):
            envelope = await mcp.fail(TOOL, args, "permission_denied")
            assert "UIDPLUS" in envelope["error"]["details"]["missing_capability"], envelope["error"]
        assert clean(message_id_counts(dovecot_without_uidplus, user)) == start
        envelope = await mcp.call(
            TOOL, {"message_ids": [one], "action": "copy", "destination_mailbox": "Archive"}
        )
        assert envelope["data"]["results"] == [
            {"message_id": one, "new_message_id": None, "outcome": "copied"}
        ]
        assert any("new_message_id is null" in w for w in envelope["meta"]["warnings"])
    expected = {name: Counter(found) for name, found in start.items()}
    expected["Archive"][mid_of("one")] += 1
    assert clean(message_id_counts(dovecot_without_uidplus, user)) == clean(expected)


# ------------------------------------------------------------------ a connection lost after the MOVE


def proxied_account(server: MatrixServer, proxy: FaultProxy, user: str) -> Config:
    """Writes on, the account through ``proxy`` in plain text (its commands readable in ``proxy.sent()``)."""
    extra = {"trash_mailbox": trash_of(server)} if isinstance(server, Courier) else {}
    settings = account_settings(
        server, user, host="127.0.0.1", port=proxy.port, security="plain", ca_file=None, **extra
    )
    return make_config({"default": settings}, write_enabled=True)


def move_command(server: MatrixServer) -> bytes:
    """The command that moves (Courier, without MOVE: copies) the messages."""
    return b" UID COPY " if isinstance(server, Courier) else b" UID MOVE "


@pytest.mark.parametrize("imap_server", ["dovecot", "cyrus", "courier"], indirect=True)
async def test_regression_a_move_by_ids_whose_answer_was_lost_is_settled_by_looking_and_undone(
    imap_server: MatrixServer, user: str
) -> None:
    """Issue 89 item 11: the move's command reaches the server, its answer does not (Courier: copied, still
    in INBOX too). The move by ids runs on the engine of moves by search: a fresh connection looks, finds
    both messages in Archive by Message-ID, size and date (Courier: removes only their originals), and
    answers each moved with its new id, the command never sent again; the undo puts both back. Every
    mailbox counted before and after. (On e01db76 both were ``outcome_unknown``.)"""
    setup_user(imap_server, user, ["alpha", "bravo-two", "charlie"])
    archive = imap_server.mailbox_name("Archive")
    start = clean(message_id_counts(imap_server, user))
    command = move_command(imap_server)
    with FaultProxy(imap_server.host, imap_server.plain_port) as proxy:
        async for mcp in open_client(proxied_account(imap_server, proxy, user)):
            ids = await ids_by_subject(mcp)
            pair = [ids["alpha"], ids["bravo-two"]]
            proxy.cut_after_sent(command)
            data = await mcp.ok(TOOL, {"message_ids": pair, "action": "move", "destination_mailbox": archive})
            assert proxy.cuts == 1 and proxy.sent().count(command) == 1, "the command was sent again"
            assert data["status"] == "ok" and data["issues"] == [], data
            assert [r["outcome"] for r in data["results"]] == ["moved", "moved"], data["results"]
            new_ids = [r["new_message_id"] for r in data["results"]]
            assert all(new_ids), data["results"]
            assert [await subject_of(mcp, new_id) for new_id in new_ids] == ["alpha", "bravo-two"]
            moved_now = moved(start, "INBOX", archive, [mid_of("alpha"), mid_of("bravo-two")])
            assert clean(message_id_counts(imap_server, user)) == moved_now
            (undo,) = data["undo"]
            back = await mcp.ok(undo["tool"], undo["arguments"])
            assert [r["outcome"] for r in back["results"]] == ["moved", "moved"], back
    assert clean(message_id_counts(imap_server, user)) == start


async def test_a_move_whose_answer_was_lost_and_cannot_be_looked_at_is_outcome_unknown_never_replayed(
    dovecot: Dovecot,
) -> None:
    """The link goes down right after the MOVE reached the server: nothing can be looked at, so the
    message's outcome is unknown (the answer says where to look), and the MOVE is never sent again."""
    user = dovecot.new_user()
    setup_user(dovecot, user, ["one", "two"])
    start = clean(message_id_counts(dovecot, user))
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        async for mcp in open_client(proxied_account(dovecot, proxy, user)):
            ids = await ids_by_subject(mcp)
            proxy.cut_after_sent(b" UID MOVE ", then_refuse=True)
            envelope = await mcp.call(
                TOOL, {"message_ids": [ids["one"]], "action": "move", "destination_mailbox": "Archive"}
            )
            assert envelope["success"], envelope["error"]
            data = envelope["data"]
            assert data["status"] == "partial"
            assert data["results"] == [
                {"message_id": ids["one"], "new_message_id": None, "outcome": "outcome_unknown"}
            ]
            (issue,) = data["issues"]
            assert (issue["code"], issue["retryable"], issue["message_id"]) == (
                "outcome_unknown",
                False,
                ids["one"],
            )
            assert data["next_action"]["tool"] == "imap_search_messages"
            assert data["undo"] == []
            assert proxy.cuts == 1
            assert proxy.sent().count(b" UID MOVE ") == 1, "the MOVE was sent again"
    # The server did move it, exactly once.
    assert clean(message_id_counts(dovecot, user)) == moved(start, "INBOX", "Archive", [mid_of("one")])


async def test_ids_under_two_aliases_of_one_account_copy_each_message_once(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    """Regression (issue 21: the two bulk writes disagreed on aliases): "default" names the only account,
    here "work", and imap_update_message_flags refused ids under both names. Both tools now resolve them
    to the one account; a message named under both is copied once, not twice."""
    setup_user(dovecot, user, ["one", "two"])
    archive = dovecot.mailbox_name("Archive")
    start = clean(message_id_counts(dovecot, user))
    async for mcp in open_client(make_config({"work": account(user)}, write_enabled=True)):
        found = await ids_by_subject(mcp)
        one, two = found["one"], found["two"]
        alias = one.replace("imap:work:", "imap:default:")
        data = await mcp.ok(
            TOOL, {"message_ids": [one, alias, two], "action": "copy", "destination_mailbox": archive}
        )
        assert data["status"] == "ok", data["issues"]
        assert (data["requested"], data["changed"]) == (2, 2)
        assert [r["message_id"] for r in data["results"]] == [one, two]
    wanted = {name: Counter(ids) for name, ids in start.items()}
    wanted[archive].update([mid_of("one"), mid_of("two")])
    assert clean(message_id_counts(dovecot, user)) == clean(wanted)
