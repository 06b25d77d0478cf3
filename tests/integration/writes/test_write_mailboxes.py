"""imap_manage_mailbox through an MCP client on the server matrix (Dovecot, Cyrus in both namespaces,
Courier).

Every test reads the account's mailboxes and the Message-IDs in each with a session of its own
(``message_id_listing``) before and after, so "nothing else changed" is checked, not assumed: confirmation flow
(confirmation_required, the same call with the token, a token for another request refused, a used token
refused), names without the personal prefix on Cyrus and Courier, rename moving messages and children,
refusals (INBOX, special-use, non-empty, children, existing names, a message arriving between the
confirmation and the DELETE), dry runs and the write gate.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from imapclient import imap_utf7

from mail_imap_mcp.tools.manage_mailbox import change as mailbox_change
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_listing
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.write_mailboxes import TOOL, confirmed, messages, writable
from tests.support.wire import ImapRecorder, String, parse_commands

pytestmark = pytest.mark.anyio


async def expect_refusal(
    mcp: EnvelopeClient, args: dict[str, Any], code: str, parameter: str, words: str
) -> None:
    envelope = await mcp.fail(TOOL, args, code)
    assert envelope["error"]["details"]["parameter"] == parameter, envelope["error"]
    assert words in envelope["error"]["message"], envelope["error"]["message"]


async def test_create_rename_delete_with_confirmation(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Create (a bare name gets the personal prefix where the server needs one), rename with its
    messages and child mailbox after confirmation, delete an empty mailbox after confirmation; tokens
    bind to one request and work once; a message that arrives after the confirmation stops the DELETE."""
    server = imap_server
    server.seed(user, "INBOX", messages(2, "inbox"))
    projects, work = server.mailbox_name("Projects"), server.mailbox_name("Work")
    async for mcp in open_client(writable(account, user)):
        envelope = await mcp.call(TOOL, {"action": "create", "mailbox": "Projects"})
        data = envelope["data"]
        assert (data["mailbox"], data["result_mailbox"], data["changed"]) == (projects, projects, True)
        if projects != "Projects":  # Cyrus default namespace, Courier: INBOX. added, and said so
            assert any("INBOX." in warning for warning in envelope["meta"]["warnings"])
        child = server.mailbox_name("Projects", "2024")
        assert (await mcp.ok(TOOL, {"action": "create", "mailbox": child}))["result_mailbox"] == child
        server.seed(user, projects, messages(2, "project"))
        before = message_id_listing(server, user)
        assert before[child] == [] and len(before[projects] or []) == 2

        rename = {"action": "rename", "mailbox": projects, "destination_mailbox": work}
        first = await mcp.fail(TOOL, rename, "confirmation_required")
        token = first["error"]["details"]["confirm_token"]
        assert message_id_listing(server, user) == before, "confirmation_required changed something"
        other = {**rename, "destination_mailbox": server.mailbox_name("Elsewhere"), "confirm_token": token}
        refused = await mcp.fail(TOOL, other, "invalid_input")
        assert refused["error"]["details"]["parameter"] == "confirm_token"
        assert message_id_listing(server, user) == before
        data = await mcp.ok(TOOL, first["data"]["next_action"]["arguments"])
        new_child = server.mailbox_name("Work", "2024")
        assert (data["result_mailbox"], data["messages"], data["changed"]) == (work, 2, True)
        assert data["child_mailboxes"] == [child]
        assert data["next_action"]["tool"] == "imap_list_mailboxes"
        await mcp.fail(TOOL, {**rename, "confirm_token": token}, "not_found")  # a replay changes nothing
        after = message_id_listing(server, user)
        assert projects not in after and child not in after
        assert after[work] == before[projects] and after[new_child] == []
        assert after["INBOX"] == before["INBOX"]

        # Delete: the empty child after confirmation; then a mailbox that gets a message meanwhile.
        data = await confirmed(mcp, {"action": "delete", "mailbox": new_child})
        assert (data["mailbox"], data["result_mailbox"], data["changed"]) == (new_child, None, True)
        assert new_child not in message_id_listing(server, user)
        old = server.mailbox_name("Old")
        await mcp.ok(TOOL, {"action": "create", "mailbox": old})
        first = await mcp.fail(TOOL, {"action": "delete", "mailbox": old}, "confirmation_required")
        server.seed(user, old, messages(1, "late arrival"))
        late = await mcp.fail(TOOL, first["data"]["next_action"]["arguments"], "invalid_input")
        assert late["error"]["details"] == {"parameter": "mailbox", "mailbox": old, "messages": 1}
        assert late["data"]["next_action"]["arguments"] == {"account_id": "default", "mailbox": old}
        final = message_id_listing(server, user)
        assert len(final[old] or []) == 1
        assert {name: ids for name, ids in final.items() if name != old} == {
            name: ids for name, ids in after.items() if name != new_child
        }


async def test_a_token_works_once_for_its_request_only(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    """A delete refused (the mailbox got a message) before its token was looked at keeps the token:
    once the mailbox is empty again the confirmed request runs. The token then works once only, even
    for the same request on a new mailbox of that name; a token is never good for another request."""
    dovecot.seed(user, "Old", messages(1, "old"))
    dovecot.seed(user, "Other", [])
    async for mcp in open_client(writable(account, user)):
        await mcp.fail(TOOL, {"action": "delete", "mailbox": "Old"}, "invalid_input")  # holds a message
        with dovecot.connect(user) as direct:
            direct.select_folder("Old")
            direct.delete_messages(direct.search("ALL"))
            direct.expunge()
        first = await mcp.fail(TOOL, {"action": "delete", "mailbox": "Old"}, "confirmation_required")
        confirmed_delete = first["data"]["next_action"]["arguments"]
        assert confirmed_delete["confirm_token"] == first["error"]["details"]["confirm_token"]
        refused = await mcp.fail(TOOL, {**confirmed_delete, "mailbox": "Other"}, "invalid_input")
        assert refused["error"]["details"]["parameter"] == "confirm_token"
        assert "Other" in message_id_listing(dovecot, user)
        assert (await mcp.ok(TOOL, confirmed_delete))["changed"] is True
        await mcp.ok(TOOL, {"action": "create", "mailbox": "Old"})
        used = await mcp.fail(TOOL, confirmed_delete, "invalid_input")
        assert "already used" in used["error"]["message"]
    assert message_id_listing(dovecot, user) == {"INBOX": [], "Old": [], "Other": []}


async def test_refusals_and_dry_runs_change_nothing(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """INBOX, special-use folders (Courier: the configured drafts_mailbox), a non-empty mailbox, one with
    children, existing names, a move into itself, malformed names and missing mailboxes are refused with
    the parameter named; dry runs report the plan; the mailboxes and messages stay exactly as they were."""
    server = imap_server
    sep = server.separator
    drafts, full, parent = (server.mailbox_name(n) for n in ("Drafts", "Full", "Parent"))
    server.seed(user, "INBOX", messages(1, "inbox"))
    server.seed(user, drafts, [])
    server.seed(user, full, messages(2, "full"))
    server.seed(user, server.mailbox_name("Parent", "Kid"), [])
    empty = server.mailbox_name("Empty")
    server.seed(user, empty, [])
    settings = {"drafts_mailbox": drafts} if server.kind == "courier" else {}
    before = message_id_listing(server, user)
    async for mcp in open_client(writable(account, user, **settings)):
        refused = functools.partial(expect_refusal, mcp)
        invalid = "invalid_input"
        await refused({"action": "delete", "mailbox": "INBOX"}, invalid, "mailbox", "INBOX")
        await refused(
            {"action": "rename", "mailbox": "inbox", "destination_mailbox": empty + "2"},
            invalid,
            "mailbox",
            "INBOX",
        )
        await refused({"action": "delete", "mailbox": drafts}, invalid, "mailbox", "never renamed or deleted")
        await refused(
            {"action": "rename", "mailbox": drafts, "destination_mailbox": server.mailbox_name("D2")},
            invalid,
            "mailbox",
            "drafts_mailbox" if server.kind == "courier" else "\\Drafts",
        )
        await refused({"action": "delete", "mailbox": full}, invalid, "mailbox", "holds 2 message(s)")
        await refused({"action": "delete", "mailbox": parent}, invalid, "mailbox", "child mailbox")
        await refused({"action": "create", "mailbox": full}, invalid, "mailbox", "already exists")
        await refused({"action": "create", "mailbox": "INBOX"}, invalid, "mailbox", "already exists")
        await refused(
            {"action": "rename", "mailbox": empty, "destination_mailbox": full},
            invalid,
            "destination_mailbox",
            "already exists",
        )
        await refused(
            {
                "action": "rename",
                "mailbox": parent,
                "destination_mailbox": server.mailbox_name("Parent", "Kid", "x"),
            },
            invalid,
            "destination_mailbox",
            "cannot move into itself",
        )
        for name in (sep, sep * 3, empty + sep, sep + "Top", server.mailbox_name("A", "", "B")):
            await refused({"action": "create", "mailbox": name}, invalid, "mailbox", "")
        await refused(
            {"action": "delete", "mailbox": server.mailbox_name("Nope")}, "not_found", "mailbox", "Nope"
        )
        await refused(
            {"action": "rename", "mailbox": "Nope", "destination_mailbox": "Nope2"},
            "not_found",
            "mailbox",
            "Nope",
        )

        plans = {
            "create": {"action": "create", "mailbox": server.mailbox_name("New"), "dry_run": True},
            "rename": {"action": "rename", "mailbox": full, "destination_mailbox": "Moved", "dry_run": True},
            "delete": {"action": "delete", "mailbox": empty, "dry_run": True},
        }
        for action, args in plans.items():
            data = await mcp.ok(TOOL, args)  # no confirmation needed to look
            assert (data["action"], data["dry_run"], data["changed"]) == (action, True, False)
            assert data["result_mailbox"] is None
        assert data["plan"] == f"Delete the empty mailbox {empty!r}."
        assert (await mcp.ok(TOOL, plans["rename"]))["destination_mailbox"] == server.mailbox_name("Moved")
    assert message_id_listing(server, user) == before


async def test_writes_off_is_permission_denied_and_changes_nothing(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    dovecot.seed(user, "Keep", messages(1, "keep"))
    before = message_id_listing(dovecot, user)
    config = make_config(
        {"default": account(user, write_enabled=False), "other": account(dovecot.new_user())},
        write_enabled=True,
    )
    async for mcp in open_client(config):
        for args in (
            {"action": "create", "mailbox": "New"},
            {"action": "delete", "mailbox": "Keep"},
            {"action": "rename", "mailbox": "Keep", "destination_mailbox": "Gone", "dry_run": True},
        ):
            envelope = await mcp.fail(TOOL, args, "permission_denied")
            assert envelope["error"]["details"]["setting"] == "write_enabled"
    assert message_id_listing(dovecot, user) == before


async def test_a_message_arriving_after_the_checks_still_stops_the_delete(
    dovecot: MatrixServer, user: str, account: AccountFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dovecot deletes a mailbox with messages in it without a word, so the DELETE is preceded by a
    fresh EXAMINE of its own (not STATUS, which Dovecot answers from an index that can lag): a delivery between the first checks (and the confirmation) and the DELETE is seen
    there. The delivery is injected right after the tool's checks, by a session of its own."""
    dovecot.seed(user, "Old", [])
    original = mailbox_change.plan_change

    def plan_then_deliver(*args: Any) -> Any:
        plan = original(*args)
        if not args[-1].dry_run and args[-1].confirm_token:
            dovecot.seed(user, "Old", messages(1, "delivered meanwhile"))
        return plan

    monkeypatch.setattr(mailbox_change, "plan_change", plan_then_deliver)
    async for mcp in open_client(writable(account, user)):
        first = await mcp.fail(TOOL, {"action": "delete", "mailbox": "Old"}, "confirmation_required")
        envelope = await mcp.fail(TOOL, first["data"]["next_action"]["arguments"], "invalid_input")
        assert envelope["error"]["details"]["messages"] == 1
    assert len(message_id_listing(dovecot, user)["Old"] or []) == 1


async def test_quotes_braces_and_non_ascii_in_names_reach_the_server_as_one_string(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    """A name with quotes, literal syntax, a backslash, parentheses and non-ASCII is sent as exactly one
    quoted string (modified UTF-7) per CREATE/RENAME/DELETE, nothing more (wire recorder; DELETE goes
    through a RENAME aside), and the server shows exactly that name."""
    recorder = ImapRecorder(dovecot.plain_port)
    settings = account(user, host="127.0.0.1", port=recorder.port, security="plain", ca_file=None)
    name = 'Say "hi" {5} back\\slash Ünï'
    renamed = name + " (old)"
    try:
        async for mcp in open_client(make_config({"default": settings}, write_enabled=True)):
            recorder.take()
            assert (await mcp.ok(TOOL, {"action": "create", "mailbox": name}))["result_mailbox"] == name
            assert name in message_id_listing(dovecot, user)
            await confirmed(mcp, {"action": "rename", "mailbox": name, "destination_mailbox": renamed})
            assert renamed in message_id_listing(dovecot, user)
            await confirmed(mcp, {"action": "delete", "mailbox": renamed})
        commands = [command for sent, _ in recorder.take() for command in parse_commands(sent)]
    finally:
        recorder.close()
    writes = [
        (command.verb, [arg.value if isinstance(arg, String) else arg for arg in command.args])
        for command in commands
        if command.verb in {"CREATE", "RENAME", "DELETE", "APPEND"}
    ]
    wire = [imap_utf7.encode(n) for n in (name, renamed)]
    aside = writes[2][1][1]  # DELETE renames the mailbox aside first (a name nobody delivers to)
    assert aside.startswith(wire[1] + b"-deleting-")
    assert writes == [
        ("CREATE", [wire[0]]),
        ("RENAME", wire),
        ("RENAME", [wire[1], aside]),
        ("DELETE", [aside]),
    ]
    assert set(message_id_listing(dovecot, user)) == {"INBOX"}


async def test_connection_lost_after_delete_is_outcome_unknown_never_replayed(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    """The reset comes after DELETE reached Dovecot, before its answer: outcome_unknown (status partial,
    not retryable), a next_action that lists the mailboxes, and no second DELETE."""
    dovecot.seed(user, "Old", [])
    dovecot.seed(user, "INBOX", messages(1, "inbox"))
    before = message_id_listing(dovecot, user)
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        proxy.cut_after_sent(b" DELETE ")
        settings = account(user, host="127.0.0.1", port=proxy.port, security="plain", ca_file=None)
        async for mcp in open_client(make_config({"default": settings}, write_enabled=True)):
            first = await mcp.fail(TOOL, {"action": "delete", "mailbox": "Old"}, "confirmation_required")
            envelope = await mcp.call(TOOL, first["data"]["next_action"]["arguments"])
            assert envelope["success"], envelope["error"]
            data = envelope["data"]
            assert (data["status"], data["changed"]) == ("partial", False)
            (issue,) = data["issues"]
            assert (issue["code"], issue["retryable"]) == ("outcome_unknown", False)
            assert data["next_action"]["tool"] == "imap_list_mailboxes"
            assert proxy.cuts == 1
            listed = await mcp.ok("imap_list_mailboxes", data["next_action"]["arguments"])
            assert [m["name"] for m in listed["mailboxes"]] == ["INBOX"]
            assert proxy.sent().count(b" DELETE ") == 1, "the DELETE was sent again"
    assert message_id_listing(dovecot, user) == {"INBOX": before["INBOX"]}


async def test_the_argument_named_is_the_one_the_server_refused(
    imap_server: MatrixServer, user: str, account: AccountFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RENAME's refusal names the argument it is about, as the failure map reads the server's answer: a
    source deleted by another session between the checks and the RENAME is ``not_found`` naming
    ``mailbox`` (Dovecot ``[NONEXISTENT]``, Cyrus "Mailbox does not exist"); a new name the server
    refuses ("Invalid mailbox name" on Courier and Cyrus, for a ``/`` where ``.`` separates) is
    ``invalid_input`` naming ``destination_mailbox``, never a missing source. (Courier answers RENAME of
    a missing source "OK Folder renamed." and changes nothing, so there the first case cannot be told.)"""
    server = imap_server
    keep = server.mailbox_name("Keep")
    server.seed(user, keep, [])
    original = mailbox_change.plan_change
    vanish = server.kind != "courier"

    def plan_then_delete(*args: Any) -> Any:
        plan = original(*args)
        if vanish and args[-1].confirm_token:
            server.delete_mailbox(user, keep)
        return plan

    monkeypatch.setattr(mailbox_change, "plan_change", plan_then_delete)
    async for mcp in open_client(writable(account, user)):
        if vanish:
            args = {"action": "rename", "mailbox": keep, "destination_mailbox": server.mailbox_name("Moved")}
            first = await mcp.fail(TOOL, args, "confirmation_required")
            await expect_refusal(mcp, first["data"]["next_action"]["arguments"], "not_found", "mailbox", keep)
        if server.separator == ".":
            vanish = False
            server.seed(user, keep, [])
            args = {"action": "rename", "mailbox": keep, "destination_mailbox": "x/y"}
            first = await mcp.fail(TOOL, args, "confirmation_required")
            await expect_refusal(
                mcp,
                first["data"]["next_action"]["arguments"],
                "invalid_input",
                "destination_mailbox",
                "Invalid mailbox name",
            )
    assert server.mailbox_name("Moved") not in message_id_listing(server, user)
