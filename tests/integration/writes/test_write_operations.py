"""Bulk writes that outlast the inline wait continue in the background as an operation: polled with
imap_get_operation, stopped between mailboxes by imap_cancel_operation, never losing or doubling mail.

The slow writes here say ``background_after_s=0`` (the tests' configs otherwise answer inline, so that
no test races the wall clock); a fault proxy adds latency (0.1 s each way) so that a move out of six
mailboxes takes several seconds, as it would against a distant server, and a cancel lands between two.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from tests.support.accounts import account_settings
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_counts
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import ON_DOVECOT, MatrixServer

pytestmark = pytest.mark.anyio

SOURCES = [f"Box{i}" for i in range(6)]


def seed(dovecot: Dovecot) -> str:
    user = dovecot.new_user()
    for box in SOURCES:
        dovecot.seed(
            user, box, [plain_message(f"{box} {n}", "x", message_id=f"<{box}-{n}@t>") for n in range(2)]
        )
    dovecot.seed(user, "Archive", [])
    return user


async def ids_of(mcp: EnvelopeClient) -> list[str]:
    ids = []
    for box in SOURCES:
        ids += [m["message_id"] for m in (await mcp.ok("imap_search_messages", {"mailbox": box}))["messages"]]
    return ids


async def until_finished(mcp: EnvelopeClient, operation_id: str) -> dict[str, Any]:
    async def ended() -> dict[str, Any] | None:
        data = await mcp.ok("imap_get_operation", {"operation_id": operation_id})
        if data["operation"]["state"] not in {"accepted", "running"}:
            return data
        assert data["next_action"]["tool"] == "imap_get_operation"
        return None

    return await eventually_async(ended, within=30, interval=0.1, what="the operation finishing")


async def until_some_done(mcp: EnvelopeClient, operation_id: str) -> None:
    async def some_done() -> bool:
        polled = await mcp.ok("imap_get_operation", {"operation_id": operation_id})
        return polled["operation"]["done"] > 0

    await eventually_async(some_done, within=10, what="a first batch of the operation done")


def total(found: dict[str, Counter[str]]) -> Counter[str]:
    return sum(found.values(), Counter())


async def slow_move(
    dovecot: Dovecot, user: str, proxy: FaultProxy, cancel: bool
) -> tuple[dict[str, Any], list[str]]:
    account = account_settings(dovecot, user, port=proxy.port, command_timeout_s=30)
    config = make_config({"default": account}, write_enabled=True, background_after_s=0)
    finished: dict[str, Any] = {}
    ids: list[str] = []
    async for mcp in open_client(config):
        ids = await ids_of(mcp)
        proxy.set_latency(0.1)
        started = await mcp.ok(
            "imap_apply_to_messages", {"message_ids": ids, "action": "move", "destination_mailbox": "Archive"}
        )
        operation = started["operation"]
        assert operation is not None and operation["state"] in {"accepted", "running"}
        assert started["results"] == [] and started["next_action"]["tool"] == "imap_get_operation"
        if cancel:  # once the first mailbox is done, so that the cancel lands between two mailboxes
            await until_some_done(mcp, operation["operation_id"])
            cancelled = await mcp.ok("imap_cancel_operation", {"operation_id": operation["operation_id"]})
            assert cancelled["operation"]["operation_id"] == operation["operation_id"]
        finished = await until_finished(mcp, operation["operation_id"])
        proxy.pass_through()
    return finished, ids


@pytest.mark.slow
async def test_a_slow_bulk_move_continues_in_the_background_and_reports_its_result(dovecot: Dovecot) -> None:
    user = seed(dovecot)
    before = total(message_id_counts(dovecot, user))
    with FaultProxy(dovecot.host, dovecot.tls_port) as proxy:
        finished, ids = await slow_move(dovecot, user, proxy, cancel=False)
    assert finished["operation"]["state"] == "ok"
    assert finished["operation"]["done"] == finished["operation"]["total"] == len(ids)
    result = finished["result"]
    assert [r["outcome"] for r in result["results"]] == ["moved"] * len(ids)
    assert len(result["undo"]) == len(SOURCES)
    after = message_id_counts(dovecot, user)
    assert total(after) == before  # nothing lost, nothing doubled
    assert sum(after["Archive"].values()) == len(ids)


async def test_cancel_stops_between_mailboxes_and_reports_what_was_done(dovecot: Dovecot) -> None:
    user = seed(dovecot)
    before = total(message_id_counts(dovecot, user))
    with FaultProxy(dovecot.host, dovecot.tls_port) as proxy:
        finished, ids = await slow_move(dovecot, user, proxy, cancel=True)
    assert finished["operation"]["state"] == "canceled"
    outcomes = Counter(r["outcome"] for r in finished["result"]["results"])
    assert set(outcomes) == {"moved", "not_attempted"}, outcomes
    assert finished["operation"]["done"] == outcomes["moved"] < len(ids)
    after = message_id_counts(dovecot, user)
    assert total(after) == before
    assert sum(after["Archive"].values()) == outcomes["moved"]
    assert all(i["code"] == "not_attempted" for i in finished["result"]["issues"])


async def test_an_unknown_or_evicted_operation_is_not_found(dovecot: Dovecot) -> None:
    user = dovecot.new_user()
    config = make_config({"default": account_settings(dovecot, user)}, write_enabled=True)
    async for mcp in open_client(config):
        envelope = await mcp.fail("imap_get_operation", {"operation_id": "op_9_abcdef"}, "not_found")
        assert envelope["error"]["details"]["parameter"] == "operation_id"
        await mcp.fail("imap_cancel_operation", {"operation_id": "op_9_abcdef"}, "not_found")
        await mcp.fail("imap_get_operation", {"operation_id": "nope"}, "invalid_input")


@pytest.mark.slow
async def test_a_slow_flag_change_continues_in_the_background_too(dovecot: Dovecot) -> None:
    user = seed(dovecot)
    with FaultProxy(dovecot.host, dovecot.tls_port) as proxy:
        account = account_settings(dovecot, user, port=proxy.port, command_timeout_s=30)
        config = make_config({"default": account}, write_enabled=True, background_after_s=0)
        async for mcp in open_client(config):
            ids = await ids_of(mcp)
            proxy.set_latency(0.1)
            started = await mcp.ok(
                "imap_update_message_flags", {"message_ids": ids, "operation": "add", "flags": ["\\Flagged"]}
            )
            assert started["background"] is not None and started["messages"] == []
            finished = await until_finished(mcp, started["background"]["operation_id"])
            proxy.pass_through()
            assert finished["operation"]["state"] == "ok"
            assert finished["result"]["changed"] == len(ids)
            flagged = await mcp.ok("imap_search_messages", {"mailbox": SOURCES[-1], "flagged": True})
            assert flagged["total"] == 2


async def test_a_client_that_asks_for_progress_gets_it_per_mailbox(dovecot: Dovecot) -> None:
    user = seed(dovecot)
    reports: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total_items: float | None, message: str | None) -> None:
        reports.append((progress, total_items))

    with FaultProxy(dovecot.host, dovecot.tls_port) as proxy:
        account = account_settings(dovecot, user, port=proxy.port)
        async for mcp in open_client(make_config({"default": account}, write_enabled=True)):
            ids = (await ids_of(mcp))[:4]  # Box0 and Box1: done within the inline wait
            proxy.set_latency(0.02)
            arguments = {"message_ids": ids, "action": "move", "destination_mailbox": "Archive"}
            result = await mcp.client.call_tool(
                "imap_apply_to_messages", arguments, progress_callback=on_progress
            )
            proxy.pass_through()
            assert result.structured_content is not None
            assert result.structured_content["data"]["operation"] is None  # answered inline
    assert reports, "no progress notification"
    assert [done for done, _ in reports] == sorted(done for done, _ in reports)
    assert reports[-1] == (4, 4)


def background_only(config: Any) -> AppContext:
    """An app whose every write continues in the background (no inline wait)."""
    app = AppContext.from_config(config)
    app.operations.inline_s = 0
    return app


@ON_DOVECOT
async def test_a_write_that_needs_a_token_confirmation_asks_before_it_goes_to_the_background(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Regression (issue 33 item 10): a permanent delete that went on in the background asked for
    confirmation from there, where an elicitation client could not be asked. Now the question comes
    first, with nothing changed; the confirming call then runs in the background and deletes. Its
    answer names the operation as data.background, like imap_update_message_flags (item 12), and
    keeps data.operation as the deprecated alias."""
    # Dovecot alone: that the question comes before the background is the operations layer's and asking's,
    # the same on every server; the permanent delete's exact expunge on every server:
    # test_write_apply.py::test_permanent_delete_is_allowed_confirmed_and_exact.
    server = imap_server
    server.seed(
        user, "INBOX", [plain_message(f"gone {n}", "x", message_id=f"<gone-{n}@t>") for n in range(2)]
    )
    with FaultProxy(server.host, server.tls_port) as proxy:
        config = make_config(
            {"default": account(user, port=proxy.port, command_timeout_s=30)},
            write_enabled=True,
            allow_permanent_delete=True,
            confirm_without_elicitation=True,
        )
        async for mcp in open_client(config, background_only(config)):
            ids = [m["message_id"] for m in (await mcp.ok("imap_search_messages", {}))["messages"]]
            arguments = {"message_ids": ids, "action": "delete", "permanent": True}
            proxy.set_latency(0.15)
            refused = await mcp.fail("imap_apply_to_messages", arguments, "confirmation_required")
            assert message_id_counts(server, user)["INBOX"] == Counter({"<gone-0@t>": 1, "<gone-1@t>": 1})
            follow = refused["data"]["next_action"]
            assert follow is not None and follow["tool"] == "imap_apply_to_messages"
            assert follow["arguments"]["confirm_token"] == refused["error"]["details"]["confirm_token"]
            assert {key: follow["arguments"][key] for key in arguments} == arguments
            started = await mcp.ok(follow["tool"], follow["arguments"])
            assert started["background"] is not None and started["background"] == started["operation"]
            done = await until_finished(mcp, started["background"]["operation_id"])
            assert done["operation"]["state"] == "ok" and done["next_action"] is None
            proxy.pass_through()
    assert sum(message_id_counts(server, user)["INBOX"].values()) == 0


@ON_DOVECOT
@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_a_write_that_needs_the_users_confirmation_asks_an_elicitation_client_before_the_background(
    imap_server: MatrixServer, user: str, account: AccountFactory, answer: str
) -> None:
    """Regression (issue 33 item 10): with a client that confirms by elicitation, a permanent delete that
    would run in the background asks the user first. Accepted, the background operation deletes exactly
    the messages; declined, nothing changes and nothing goes to the background."""
    # Dovecot alone: that the question comes before the background is the operations layer's and asking's,
    # the same on every server; the permanent delete's exact expunge on every server:
    # test_write_apply.py::test_permanent_delete_is_allowed_confirmed_and_exact.
    server = imap_server
    seeded = [plain_message(f"gone {n}", "x", message_id=f"<gone-{n}@t>") for n in range(2)]
    server.seed(user, "INBOX", [*seeded, plain_message("kept", "x", message_id="<kept@t>")])
    user_answer = answering("accept", confirm=answer == "accept")
    with FaultProxy(server.host, server.tls_port) as proxy:
        config = make_config(
            {"default": account(user, port=proxy.port, command_timeout_s=30)},
            write_enabled=True,
            allow_permanent_delete=True,
        )
        async for mcp in open_client(
            config, background_only(config), elicitation_callback=user_answer, mode="legacy"
        ):
            found = (await mcp.ok("imap_search_messages", {"query": "gone"}))["messages"]
            arguments = {
                "message_ids": [m["message_id"] for m in found],
                "action": "delete",
                "permanent": True,
            }
            proxy.set_latency(0.15)
            if answer == "decline":
                refused = await mcp.fail("imap_apply_to_messages", arguments, "confirmation_required")
                assert "confirm_token" not in str(refused)
            else:
                started = await mcp.ok("imap_apply_to_messages", arguments)
                assert started["background"] is not None and started["results"] == []
                done = await until_finished(mcp, started["background"]["operation_id"])
                assert done["operation"]["state"] == "ok"
                assert [r["outcome"] for r in done["result"]["results"]] == ["deleted", "deleted"]
            proxy.pass_through()
    assert user_answer.asked and user_answer.asked[0].startswith("Permanently delete 2 message(s)")
    remaining = message_id_counts(server, user)["INBOX"]
    if answer == "decline":
        assert remaining == Counter({"<gone-0@t>": 1, "<gone-1@t>": 1, "<kept@t>": 1})
    else:
        assert remaining == Counter({"<kept@t>": 1})
