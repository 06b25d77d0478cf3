"""Acting on a whole search (``query`` with ``mailbox``) on real servers, through the MCP client.

Each user gets 500 messages in INBOX: 300 from a newsletter (the search ``from:news@lists.example``
finds them) and 200 from someone else; Trash and Archive empty. After every write, a session of the
test's own counts every Message-ID in every mailbox: none lost, none twice, the non-matching ones
untouched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import ElicitRequestParams, ElicitResult
from redis import Redis

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.operations import Progress, background, bulk
from mail_imap_mcp.operations.chunk_sizes import ChunkSizes
from tests.support.accounts import account_settings
from tests.support.clients import chromium
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.clients.index_clients import indexed_client
from tests.support.mail.mail_state import flag_snapshot, message_id_counts
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async
from tests.support.servers.courier import Courier
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.gmail import ALL_MAIL, Gmail
from tests.support.servers.matrix import ON_DOVECOT, MatrixServer
from tests.support.servers.redis_server import RedisServer
from tests.support.shared.send import _answer_page, _opened_later
from tests.support.shared.write_by_search import (
    APPLY,
    FLAGS,
    MATCHING,
    QUERY,
    cancelled_once_reached,
    clean,
    matching_ids,
    news,
    paused_once_done,
    seed,
    shared_config,
)

pytestmark = pytest.mark.anyio


def config_for(server: MatrixServer, account: AccountFactory, user: str, **settings: Any) -> Any:
    extra = {"trash_mailbox": server.mailbox_name("Trash")} if isinstance(server, Courier) else {}
    return make_config({"default": account(user, **extra)}, write_enabled=True, **settings)


def appending(server: MatrixServer, user: str, count: int) -> Any:
    """An elicitation callback that accepts, after another client appended ``count`` matching messages."""
    asked: list[str] = []

    async def callback(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        server.seed(user, "INBOX", [news(MATCHING + n) for n in range(count)])
        return ElicitResult(action="accept", content={"confirm": True})

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


@ON_DOVECOT
async def test_moving_a_whole_search_to_trash_with_approval_and_undo(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    # Dovecot alone: the approval, the count of what came meanwhile and the undo are the service's, on
    # every backend in tests/pure/test_bulk_runs.py (a move by search and its undo, a delete by search
    # to the trash, matches arriving during the run); the run on every server in the mail contract
    # (tests/support/shared/mail_contract_cases.py: a run moving its fixed set, a delete by search going
    # to the trash); a whole search deleted and undone on Courier (no MOVE) end to end: test_write_by_search_runs.py.
    seed(imap_server, user)
    trash = imap_server.mailbox_name("Trash")
    start = clean(message_id_counts(imap_server, user))
    elicit = appending(imap_server, user, 5)
    config = config_for(imap_server, account, user, background_after_s=60)
    async for mcp in open_client(config, elicitation_callback=elicit):
        search = {"query": QUERY, "mailbox": "INBOX", "action": "delete"}
        dry = await mcp.ok(APPLY, {**search, "dry_run": True})
        assert dry["search"]["matched"] == MATCHING and dry["changed"] == 0
        assert len(dry["search"]["sample"]) == 10
        assert all(m["from"] and "news@lists.example" in m["from"] for m in dry["search"]["sample"])
        assert dry["next_action"]["arguments"] == search
        assert clean(message_id_counts(imap_server, user)) == start  # a dry run changes nothing

        done = await mcp.ok(APPLY, search)
        (question,) = elicit.asked
        assert "300 message(s)" in question and QUERY in question and "News " in question
        assert done["search"]["matched"] == MATCHING and done["search"]["done"] == MATCHING
        assert done["search"]["came_meanwhile"] == 5 and done["destination_mailbox"] == trash
        after = clean(message_id_counts(imap_server, user))
        assert after[trash] == matching_ids()
        assert after["INBOX"] == start["INBOX"] - matching_ids() + Counter(
            f"<news-{MATCHING + n}@lists.example>" for n in range(5)
        )
        undo = done["next_action"]
        assert undo["arguments"]["undo"] == done["search"]["undo_token"]

        back = await mcp.ok(undo["tool"], undo["arguments"])
        assert back["search"]["done"] == MATCHING
        restored = clean(message_id_counts(imap_server, user))
        assert trash not in restored
        assert restored["INBOX"] == start["INBOX"] + Counter(
            f"<news-{MATCHING + n}@lists.example>" for n in range(5)
        )
        again = await mcp.fail(undo["tool"], undo["arguments"], "not_found")  # an undo works once
        assert again["error"]["details"]["parameter"] == "undo"


async def test_a_small_search_needs_no_approval_and_a_permanent_delete_by_search_is_refused(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    seed(dovecot, user)
    config = config_for(dovecot, account, user, bulk_approval_threshold=MATCHING)
    async for mcp in open_client(config):  # no elicitation: nobody could be asked
        refused = await mcp.fail(
            APPLY,
            {"query": QUERY, "mailbox": "INBOX", "action": "delete", "permanent": True},
            "invalid_input",
        )
        assert refused["error"]["details"]["parameter"] == "permanent"
        done = await mcp.ok(
            APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "move", "destination_mailbox": "Archive"}
        )
        assert done["search"]["done"] == MATCHING
    assert clean(message_id_counts(dovecot, user))["Archive"] == matching_ids()


async def test_without_a_way_to_ask_a_large_move_takes_the_confirmation_token(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    async for mcp in open_client(config_for(dovecot, account, user)):
        search = {"query": QUERY, "mailbox": "INBOX", "action": "delete"}
        asked = await mcp.fail(APPLY, search, "confirmation_required")
        assert clean(message_id_counts(dovecot, user)) == start
        confirmed = asked["data"]["next_action"]["arguments"]
        assert confirmed["confirm_token"] == asked["error"]["details"]["confirm_token"]
        done = await mcp.ok(APPLY, confirmed)
        assert done["search"]["done"] == MATCHING


async def test_a_page_that_cannot_open_in_the_call_falls_back_to_the_confirmation_token(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    """A call that waits for the page (it carries a progressToken) whose browser cannot open: confirming
    stands in for the move's approval, as where no page is plugged in at all (``Ask.confirmable``, chosen
    in ``asking/``: the tool no longer reads the refusal's details to find it out)."""
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    config = config_for(dovecot, account, user)
    app = AppContext.from_config(config)
    opened: list[str] = []
    app.approval_page = approval_page(lambda url: bool(opened.append(url)), timeout_s=30)  # cannot open

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    async for mcp in open_client(config, app):  # no elicitation
        search = {"query": QUERY, "mailbox": "INBOX", "action": "delete"}
        result = await mcp.client.call_tool(APPLY, search, progress_callback=on_progress)
        asked = result.structured_content
        assert asked is not None and asked["error"]["code"] == "confirmation_required", asked
        assert clean(message_id_counts(dovecot, user)) == start and len(opened) == 1
        done = await mcp.ok(APPLY, asked["data"]["next_action"]["arguments"])
        assert done["search"]["done"] == MATCHING


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=50, least=50, most=50))


async def test_cancel_at_forty_percent_stops_between_chunks(
    dovecot: Dovecot, account: AccountFactory, user: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    reached, released = paused_once_done(monkeypatch, int(0.4 * MATCHING))  # 120 of 300: after 3 chunks
    config = config_for(dovecot, account, user, background_after_s=0, bulk_approval_threshold=1000)
    async for mcp in open_client(config):
        polled = await cancelled_once_reached(mcp, reached, released)
    assert polled["operation"]["state"] == "canceled"
    result = polled["result"]["search"]
    assert (result["done"], result["not_attempted"]) == (150, 150)
    after = clean(message_id_counts(dovecot, user))
    assert sum(after["Trash"].values()) == 150
    assert sum(after.values(), Counter()) == sum(start.values(), Counter())  # none lost, none twice


async def test_matches_that_arrive_while_the_run_runs_are_left_alone_and_counted(
    dovecot: Dovecot, account: AccountFactory, user: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven newsletters arrive after the run's first chunk (after its own search): left in INBOX, and
    counted in came_meanwhile with any that came before it ("after the set was fixed")."""
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    advance = Progress.advance
    late = Counter(f"<news-{MATCHING + n}@lists.example>" for n in range(7))

    def arriving(self: Progress, count: int, message: str = "") -> None:
        advance(self, count, message)
        if self._operation.done == 50:
            dovecot.seed(user, "INBOX", [news(MATCHING + n) for n in range(7)])

    monkeypatch.setattr(background.Progress, "advance", arriving)
    config = config_for(dovecot, account, user, background_after_s=60, bulk_approval_threshold=1000)
    async for mcp in open_client(config):
        done = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
    run = done["search"]
    assert (run["matched"], run["done"], run["came_meanwhile"]) == (MATCHING, MATCHING, 7), done
    after = clean(message_id_counts(dovecot, user))
    assert after["Trash"] == matching_ids() and after["INBOX"] == start["INBOX"] - matching_ids() + late


@pytest.fixture
async def cut_at_third_move(dovecot: Dovecot) -> AsyncIterator[tuple[FaultProxy, str]]:
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        proxy.cut_after_sent(b" UID MOVE ", times=3)
        yield proxy, dovecot.new_user()


async def test_a_chunk_whose_answer_was_lost_is_found_out_on_a_fresh_connection_and_counted_done(
    dovecot: Dovecot, cut_at_third_move: tuple[FaultProxy, str], small_chunks: None
) -> None:
    """The third MOVE reached the server, its answer did not: the run looks on a new connection, finds
    those 50 gone from INBOX and in Trash (their new UIDs by Message-ID, size and date), and goes on; the
    MOVE is never sent again, and the undo puts back all 300."""
    proxy, user = cut_at_third_move
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    settings = account_settings(
        dovecot, user, host="127.0.0.1", port=proxy.port, security="plain", ca_file=None
    )
    app = AppContext.from_config(
        make_config(
            {"default": settings}, write_enabled=True, background_after_s=60, bulk_approval_threshold=1000
        )
    )
    async for mcp in open_client(app.config, app):
        done = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
        run = done["search"]
        assert (run["done"], run["outcome_unknown"], run["not_attempted"]) == (MATCHING, 0, 0), done
        assert done["status"] == "ok" and proxy.cuts == 1
        assert proxy.sent().count(b" UID MOVE ") == MATCHING // 50, "a MOVE was sent again"
        assert clean(message_id_counts(dovecot, user))["Trash"] == matching_ids()
        undo = done["next_action"]
        back = await mcp.ok(undo["tool"], undo["arguments"])
        assert back["search"]["done"] == MATCHING
    assert clean(message_id_counts(dovecot, user)) == start


async def test_flags_by_search_need_no_approval_and_undo_exactly(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    seed(dovecot, user)
    async for mcp in open_client(config_for(dovecot, account, user, background_after_s=60)):
        dry = await mcp.ok(
            FLAGS,
            {"query": QUERY, "mailbox": "INBOX", "operation": "add", "flags": ["\\Seen"], "dry_run": True},
        )
        assert dry["search"]["matched"] == MATCHING
        before = flag_snapshot(dovecot, user)

        async def unread(query: str, mcp: EnvelopeClient = mcp) -> int:
            found = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "query": query, "limit": 1})
            total: int = found["total"]
            return total

        others_unread = await unread(f"is:unread -{QUERY}")
        assert await unread(f"is:unread {QUERY}") > 0
        done = await mcp.ok(
            FLAGS, {"query": QUERY, "mailbox": "INBOX", "operation": "add", "flags": ["\\Seen"]}
        )
        assert done["search"]["done"] == MATCHING
        assert (await unread(f"is:unread {QUERY}"), await unread(f"is:unread -{QUERY}")) == (0, others_unread)
        undo = done["next_action"]
        await mcp.ok(undo["tool"], undo["arguments"])
        assert flag_snapshot(dovecot, user) == before  # exactly the flags it changed came off


async def test_claude_desktops_path_the_move_approved_once_on_the_page_in_chromium(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    """No elicitation: the page opens in headless Chromium, shows the count, the search and the newest
    matches, and "Send" there approves the whole batch once."""
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    config = config_for(dovecot, account, user, background_after_s=60)
    app = AppContext.from_config(config)
    pages: list[tuple[str, str]] = []

    def user_presses_send(url: str) -> bool:
        pages.append(chromium.answer_approval(url, "approve"))
        return True

    app.approval_page = approval_page(user_presses_send, timeout_s=60)
    async for mcp in open_client(config, app):
        # Answered within the inline wait here (the page is pressed at once); polled where it is not.
        done = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
        if done["background"] is not None:
            operation = done["background"]["operation_id"]

            async def ended(mcp: EnvelopeClient = mcp, operation: str = operation) -> dict[str, Any] | None:
                polled = await mcp.ok("imap_get_operation", {"operation_id": operation})
                if polled["operation"]["state"] in {"accepted", "running"}:
                    return None
                assert polled["operation"]["state"] == "ok", polled
                result: dict[str, Any] = polled["result"]
                return result

            done = await eventually_async(ended, within=60)

        async def browser_closed() -> str | None:
            return (
                pages[0][0] if pages else None
            )  # the call may answer before the browser read the page's answer

        shown = await eventually_async(browser_closed, within=30)
    assert "300 message(s)" in shown and QUERY in shown and "News 299" in shown
    assert done["search"]["done"] == MATCHING
    after = clean(message_id_counts(dovecot, user))
    assert after["Trash"] == matching_ids() and after["INBOX"] == start["INBOX"] - matching_ids()


async def test_gmail_a_delete_by_search_takes_the_labels_as_todays_writes_and_undo_gives_them_back(
    gmail: Gmail,
) -> None:
    """On the Gmail emulation a delete moves to [Gmail]/Trash (every label goes: out of All Mail too), as a
    delete by ids does; the undo moves them back to INBOX."""
    user = gmail.new_user("b")
    gmail.seed(
        user, "INBOX", [news(n) for n in range(40)] + [plain_message(f"Other {n}", "x") for n in range(10)]
    )
    elicit = appending(gmail, user, 0)
    async for mcp in open_client(
        make_config({"default": account_settings(gmail, user)}, write_enabled=True, background_after_s=60),
        elicitation_callback=elicit,
    ):
        done = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
        assert done["search"]["done"] == 40 and done["destination_mailbox"] == "[Gmail]/Trash"
        after = clean(message_id_counts(gmail, user))
        assert after["[Gmail]/Trash"] == matching_ids(40)
        assert not (after["INBOX"] & matching_ids(40)) and not (after[ALL_MAIL] & matching_ids(40))
        undo = done["next_action"]
        await mcp.ok(undo["tool"], undo["arguments"])
    restored = clean(message_id_counts(gmail, user))
    assert "[Gmail]/Trash" not in restored
    assert restored["INBOX"] & matching_ids(40) == matching_ids(40) == restored[ALL_MAIL] & matching_ids(40)


async def test_the_dry_run_from_the_index_counts_the_set_the_servers_search_fixes(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    seed(dovecot, user)
    async for mcp, _, _ in indexed_client(
        dovecot, user, tmp_path, write_enabled=True, background_after_s=60, bulk_approval_threshold=1000
    ):
        for query in (QUERY, f"{QUERY} is:unread", f"-{QUERY}"):
            search = {"query": query, "mailbox": "INBOX", "action": "move", "destination_mailbox": "Archive"}
            counted = (await mcp.ok(APPLY, {**search, "dry_run": True}))["search"]["matched"]
            with dovecot.connect(user) as imap:
                imap.select_folder("INBOX", readonly=True)
                keys = ["FROM", "news@lists.example"]
                server = imap.search(
                    {QUERY: keys, f"{QUERY} is:unread": [*keys, "UNSEEN"], f"-{QUERY}": ["NOT", *keys]}[query]
                )
            assert counted == len(server) > 0, query
        done = await mcp.ok(
            APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "move", "destination_mailbox": "Archive"}
        )
        assert done["search"]["matched"] == MATCHING


async def test_team_mode_the_undo_of_a_batch_is_kept_in_redis_for_every_instance(
    dovecot: Dovecot, account: AccountFactory, user: str, tmp_path: Path
) -> None:
    """Instance A moves the search to Trash; instance B (its own application, the same Redis) undoes the
    whole batch with A's token, once: A then finds it used."""
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    with RedisServer(tmp_path / "redis") as redis:
        config = shared_config(account(user), redis)
        search = {"query": QUERY, "mailbox": "INBOX", "action": "delete"}
        async for first in open_client(config, elicitation_callback=appending(dovecot, user, 0)):
            done = await first.ok(APPLY, search)
            undo = done["next_action"]
            assert clean(message_id_counts(dovecot, user))["Trash"] == matching_ids()
            shared = Redis.from_url(redis.url)
            assert len(shared.keys("*bulk-undo*")) == 1  # in Redis, not in a file of one instance
            async for second in open_client(config):
                back = await second.ok(undo["tool"], undo["arguments"])
                assert back["search"]["done"] == MATCHING
            assert shared.keys("*bulk-undo*") == []
            await first.fail(undo["tool"], undo["arguments"], "not_found")
    assert clean(message_id_counts(dovecot, user)) == start


async def test_a_declined_question_changes_nothing(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    declining = answering("decline")
    async for mcp in open_client(config_for(dovecot, account, user), elicitation_callback=declining):
        envelope = await mcp.call(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
        assert not envelope["success"] and envelope["error"]["code"] == "confirmation_required", envelope
    (question,) = declining.asked
    assert "300 message(s)" in question
    assert clean(message_id_counts(dovecot, user)) == start


async def test_a_mailbox_recreated_while_the_user_decides_is_a_conflict_and_nothing_moves(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    """The set is UIDs of one UIDVALIDITY: the mailbox deleted and created again (and refilled) before the
    run makes the run a conflict, with nothing moved, never a move of whatever the old UIDs name now."""
    dovecot.seed(user, "News", [news(n) for n in range(40)])
    dovecot.seed(user, "Trash", [])

    async def recreating(context: Any, params: ElicitRequestParams) -> ElicitResult:
        dovecot.recreate_mailbox(user, "News")
        dovecot.seed(
            user, "News", [plain_message(f"Other {n}", "x", message_id=f"<o{n}@t>") for n in range(40)]
        )
        return ElicitResult(action="accept", content={"confirm": True})

    async for mcp in open_client(config_for(dovecot, account, user), elicitation_callback=recreating):
        failed = await mcp.fail(APPLY, {"query": QUERY, "mailbox": "News", "action": "delete"}, "conflict")
        assert failed["error"]["details"]["mailbox"] == "News", failed
    after = clean(message_id_counts(dovecot, user))
    assert "Trash" not in after and sum(after["News"].values()) == 40


async def test_a_move_approved_on_the_page_counts_its_messages_not_the_question(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    """Issue 78: 30 messages moved to Trash once approved on the page (no elicitation) were followed as
    "1 of 1 done" (the question was the one item): the operations count, and say, messages."""
    dovecot.seed(user, "News", [news(n) for n in range(30)])
    dovecot.seed(user, "Trash", [])
    urls: list[str] = []
    config = config_for(dovecot, account, user, background_after_s=0, bulk_approval_threshold=10)
    app = AppContext.from_config(config)
    app.approval_page = approval_page(_opened_later(urls), timeout_s=60)
    async for mcp in open_client(config, app):  # no elicitation: the page, waited for in the background
        waiting = await mcp.call(APPLY, {"query": QUERY, "mailbox": "News", "action": "delete"})
        assert waiting["summary"].startswith(
            f"Continues in the background as {waiting['data']['background']['operation_id']} (0 of 30 "
            "messages done so far)"
        ), waiting

        async def opened() -> bool:
            return bool(urls)

        await eventually_async(opened, within=30, what="the page opened")
        await anyio.to_thread.run_sync(_answer_page, urls[0], "approve", [])
        ended = await _ended(mcp, waiting["data"]["background"]["operation_id"])
        if ended["result"]["background"] is not None:  # the run itself went on in an operation of its own
            ended = await _ended(mcp, ended["result"]["background"]["operation_id"])
    assert ended["state"] == "ok" and ended["summary"].endswith(": ok, 30 of 30 messages done"), ended
    assert sum(clean(message_id_counts(dovecot, user))["Trash"].values()) == 30


async def _ended(mcp: EnvelopeClient, operation: str) -> dict[str, Any]:
    """imap_get_operation's answer once ``operation`` ended: its data, and its summary and state."""

    async def ended() -> dict[str, Any] | None:
        polled = await mcp.call("imap_get_operation", {"operation_id": operation})
        data: dict[str, Any] = polled["data"]
        state = data["operation"]["state"]
        return (
            None
            if state in {"accepted", "running"}
            else {**data, "summary": polled["summary"], "state": state}
        )

    return await eventually_async(ended, within=60, what=f"{operation} ended")
