"""Summaries of messages already seen are not fetched and parsed again; their flags always are.

Through the SDK's MCP client on every server of the matrix: a page seen before asks the server only for
FLAGS and RFC822.SIZE and answers exactly as the first time; a flag changed by another client shows at
once; a new message is fetched and parsed, the kept ones are not; an expunged one leaves the page; the
snippet length is part of the key; a mailbox recreated under a new UIDVALIDITY never shows the content
kept for the old one; and ``summary_cache_entries = 0`` turns it off. ``fetch_log`` only observes.
"""

from __future__ import annotations

from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.imap import fetch as fetch_module
from mail_imap_mcp.imap.fetch import KEPT_ITEMS, summary_items
from tests.support.clients.envelope_client import EnvelopeClient, uid_of
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.mail.mail_state import change_inbox
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import INBOX_ONLY, ON_DOVECOT, MatrixServer

pytestmark = pytest.mark.anyio

TOOL = "imap_search_messages"
FetchLog = list[tuple[list[str], int]]


def seed(server: MatrixServer, user: str, count: int = 12, tag: str = "kept") -> None:
    server.seed(
        user,
        "INBOX",
        [
            mailgen.plain_message(f"{tag} {i}", f"Body of {tag} {i}, written by its sender.\n")
            for i in range(count)
        ],
    )


def without_meta(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in {"duration_ms", "request_id"}}


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """UIDs whose summary was built from the server's answer (observation only)."""
    seen: list[int] = []
    original = fetch_module.summary_record

    def counting(ref: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(ref.uid)
        return original(ref, *args, **kwargs)

    monkeypatch.setattr(fetch_module, "summary_record", counting)
    return seen


@INBOX_ONLY
async def test_a_page_seen_before_asks_only_for_flags_and_answers_the_same(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient, fetch_log: FetchLog, parsed: list[int]
) -> None:
    seed(imap_server, user)
    for shape in ("full", "compact"):
        first = await mcp.ok(TOOL, {"limit": 10, "fields": shape})
        fetch_log.clear()
        parsed.clear()
        again = await mcp.ok(TOOL, {"limit": 10, "fields": shape})
        assert [items for items, _ in fetch_log] == [KEPT_ITEMS]
        assert parsed == []
        assert without_meta(again) == without_meta(first)
        assert len(again["messages"]) == 10
    with imap_server.connect(user) as direct:
        direct.select_folder("INBOX", readonly=True)
        assert all(b"\\Seen" not in flags for flags in direct.get_flags(direct.search("ALL")).values())


@INBOX_ONLY
async def test_a_flag_changed_elsewhere_shows_on_a_page_seen_before(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient, fetch_log: FetchLog
) -> None:
    seed(imap_server, user)
    first = await mcp.ok(TOOL, {"limit": 5})
    target = first["messages"][2]
    assert target.get("unread") is True and "flags" not in target
    with imap_server.connect(user) as other:
        other.select_folder("INBOX")
        other.add_flags([uid_of(target)], [b"\\Flagged", b"\\Seen"])
    fetch_log.clear()
    again = await mcp.ok(TOOL, {"limit": 5})
    assert [items for items, _ in fetch_log][-1] == KEPT_ITEMS
    changed = again["messages"][2]
    assert changed["message_id"] == target["message_id"]
    assert changed["flags"] == ["\\Flagged"] and "unread" not in changed
    assert [m for i, m in enumerate(again["messages"]) if i != 2] == [
        m for i, m in enumerate(first["messages"]) if i != 2
    ]


@INBOX_ONLY
async def test_a_new_message_is_fetched_and_parsed_and_the_kept_ones_give_only_their_flags(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient, fetch_log: FetchLog, parsed: list[int]
) -> None:
    seed(imap_server, user)
    first = await mcp.ok(TOOL, {"limit": 5})
    change_inbox(imap_server, user, add=[mailgen.plain_message("newcomer", "Fresh news.\n")])
    fetch_log.clear()
    parsed.clear()
    again = await mcp.ok(TOOL, {"limit": 5})
    # The last page's two FETCHes, sent together: everything for the new message, flags for the others.
    assert [items for items, _ in fetch_log][-2:] == [summary_items(200), KEPT_ITEMS]
    newest = again["messages"][0]
    assert newest["subject"] == "newcomer" and newest["snippet"] == "Fresh news."
    assert parsed == [uid_of(newest)]
    assert again["messages"][1:] == first["messages"][:4]


async def test_the_flags_of_kept_messages_ride_with_the_fetch_of_new_ones(
    dovecot: Dovecot, account: Any
) -> None:
    """A page with new and kept messages sends its two FETCHes together: no round trip more than the
    same page without kept summaries, and the same answer."""
    seen: dict[int, tuple[list[tuple[str, str, bool | None]], int]] = {}
    for entries in (0, 100):
        user = dovecot.new_user("t-kept")
        seed(dovecot, user, count=8)
        config = make_config({"default": account(user)}, summary_cache_entries=entries)
        app = AppContext.from_config(config)
        async for client in open_client(config, app):
            await client.ok(TOOL, {"limit": 5})
            change_inbox(dovecot, user, add=[mailgen.plain_message("newcomer", "Fresh news.\n")])
            # The view's change is seen (and the call rerun) here, by a page of another snippet
            # length, whose summaries are kept under other keys: the page below finds the new message
            # not kept and the four others kept.
            await client.ok(TOOL, {"limit": 5, "snippet_chars": 0})
            before = app.connection("default").round_trips
            data = await client.ok(TOOL, {"limit": 5})
            trips = app.connection("default").round_trips - before
            seen[entries] = ([(m["subject"], m["snippet"], m.get("unread")) for m in data["messages"]], trips)
    assert seen[100] == seen[0]
    assert seen[100][0][0][0] == "newcomer"
    assert seen[100][1] == 2


@INBOX_ONLY
async def test_a_message_expunged_elsewhere_leaves_a_page_seen_before(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    seed(imap_server, user)
    first = await mcp.ok(TOOL, {"limit": 5})
    doomed = uid_of(first["messages"][1])
    change_inbox(imap_server, user, remove=lambda _: [doomed])
    again = await mcp.ok(TOOL, {"limit": 5})
    assert again["total"] == first["total"] - 1
    assert doomed not in [uid_of(m) for m in again["messages"]]
    assert again["messages"][:4] == [first["messages"][0], *first["messages"][2:5]]


@ON_DOVECOT
async def test_the_snippet_length_is_part_of_what_is_kept(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient, fetch_log: FetchLog
) -> None:
    # Dovecot alone: the key is the cache's (tests/pure/test_summary_cache.py::
    # test_keys_differ_by_uidvalidity_and_snippet_length); a snippet's length on every backend:
    # mail_contract_cases.py::a_summary_says_what_every_server_says_of_a_message.
    seed(imap_server, user, count=3)
    short = await mcp.ok(TOOL, {"limit": 3, "snippet_chars": 10})
    fetch_log.clear()
    long = await mcp.ok(TOOL, {"limit": 3, "snippet_chars": 200})
    assert [items for items, _ in fetch_log][-1] == summary_items(200)
    assert all(len(m["snippet"]) <= 11 for m in short["messages"])
    assert [m["snippet"] for m in long["messages"]] == [
        f"Body of kept {i}, written by its sender." for i in (2, 1, 0)
    ]


async def test_a_recreated_mailbox_never_shows_what_was_kept_for_its_old_uidvalidity(
    dovecot: Dovecot, mcp: EnvelopeClient, user: str
) -> None:
    """Same mailbox name, same UIDs, new UIDVALIDITY: the kept summaries of the old one are not used."""
    box = "Projects"
    dovecot.seed(user, box, [mailgen.plain_message(f"old {i}", "old body\n") for i in range(3)])
    before = await mcp.ok(TOOL, {"mailbox": box, "limit": 3})
    with dovecot.connect(user) as writer:
        writer.delete_folder(box)
    dovecot.seed(user, box, [mailgen.plain_message(f"new {i}", "new body\n") for i in range(3)])
    after = await mcp.ok(TOOL, {"mailbox": box, "limit": 3})
    assert [uid_of(m) for m in after["messages"]] == [uid_of(m) for m in before["messages"]]
    old_validity = before["messages"][0]["message_id"].split(":")[3]
    assert after["messages"][0]["message_id"].split(":")[3] != old_validity
    assert [m["subject"] for m in after["messages"]] == ["new 2", "new 1", "new 0"]
    assert all(m["snippet"] == "new body" for m in after["messages"])


@ON_DOVECOT
async def test_with_summary_cache_entries_zero_every_page_fetches_the_content(
    imap_server: MatrixServer, user: str, account: Any, fetch_log: FetchLog, parsed: list[int]
) -> None:
    # Dovecot alone: the setting is the cache's (tests/pure/test_summary_cache.py::
    # test_zero_entries_keeps_nothing); what a page fetches on every server:
    # test_a_page_seen_before_asks_only_for_flags_and_answers_the_same.
    seed(imap_server, user, count=4)
    config = make_config({"default": account(user)}, summary_cache_entries=0)
    async for client in open_client(config):
        first = await client.ok(TOOL, {"limit": 4})
        fetch_log.clear()
        parsed.clear()
        again = await client.ok(TOOL, {"limit": 4})
    assert [items for items, _ in fetch_log] == [summary_items(200)]
    assert sorted(parsed) == sorted(uid_of(m) for m in first["messages"])
    assert without_meta(again) == without_meta(first)
