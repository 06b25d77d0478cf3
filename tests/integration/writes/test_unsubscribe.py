"""imap_apply_to_messages's action "unsubscribe" through the SDK's MCP client (issue 60 item 2), on a real Dovecot: the user's approval
by elicitation, then exactly one RFC 8058 POST to a local HTTPS server with a test CA (reached through the
test-only loopback allowance, which the address rule's own test shows is off by default), none before the
approval or after a decline; an https address without one-click or without a covering DKIM signature never
fetched; the mailto path through the submission chain (Dovecot submission -> Exim -> LMTP), sent only
through imap_send_draft's own approval."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.net.one_click import ONE_CLICK_BODY
from tests.support.accounts import account_settings
from tests.support.clients import chromium
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.patience import eventually_async
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.one_click_server import LIST_HOST, OneClickServer, one_click_server
from tests.support.servers.submission import DOMAIN, SubmissionDovecot
from tests.support.shared.send import _files, _settings
from tests.support.shared.unsubscribe import AUTHSERV, TOOL, _decided, client, list_message

pytestmark = pytest.mark.anyio

#: The arguments every call here gives besides the messages.
UNSUBSCRIBE = {"action": "unsubscribe"}


@pytest.fixture
def lists() -> Iterator[OneClickServer]:
    with one_click_server() as server:
        server.names = {LIST_HOST: ["127.0.0.1"]}
        yield server


def _seeded(dovecot: Dovecot, *messages: bytes) -> dict[str, Any]:
    """The settings of a new user of ``dovecot`` whose INBOX holds ``messages``, trusting ``AUTHSERV``."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", list(messages))
    return account_settings(dovecot, user, authserv_id=AUTHSERV)


async def _ids(mcp: EnvelopeClient) -> dict[str, str]:
    found = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "limit": 50, "fields": "full"})
    return {m["subject"]: m["message_id"] for m in found["messages"]}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_one_post_after_the_users_approval_and_none_after_a_decline(
    dovecot: Dovecot, lists: OneClickServer, mode: str
) -> None:
    settings = _seeded(dovecot, list_message("one-click", f"<https://{LIST_HOST}/ok?u=1>"))
    declined = answering("decline")
    async with client(settings, lists, declined) as mcp:
        (message_id,) = (await _ids(mcp)).values()
        await mcp.fail(TOOL, {**UNSUBSCRIBE, "message_ids": [message_id]}, "confirmation_required")
    assert lists.requests == [] and lists.connections == [] and lists.resolved == []
    (question,) = declined.asked
    assert "Weekly News" in question and LIST_HOST in question
    accepted = answering("accept")
    async with client(settings, lists, accepted) as mcp:
        data = await mcp.ok(TOOL, {**UNSUBSCRIBE, "message_ids": [message_id, message_id]})
    (left,) = data["lists"]
    assert (left["way"], left["outcome"], left["status"], left["host"]) == (
        "one_click",
        "unsubscribed",
        200,
        LIST_HOST,
    )
    (request,) = lists.requests
    assert (request.method, request.path, request.body) == ("POST", "/ok?u=1", ONE_CLICK_BODY)


async def test_https_without_one_click_or_a_covering_signature_is_never_fetched(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    settings = _seeded(
        dovecot,
        list_message("no post", f"<https://{LIST_HOST}/ok?u=2>", post=False),
        list_message("not covered", f"<https://{LIST_HOST}/ok?u=3>", covered=False),
        list_message("dkim failed", f"<https://{LIST_HOST}/ok?u=4>", passed=False),
        list_message("plain http", f"<http://{LIST_HOST}/ok?u=5>"),
    )
    asked = answering("accept")
    async with client(settings, lists, asked) as mcp:
        ids = await _ids(mcp)
        for subject in ("no post", "not covered", "dkim failed", "plain http"):
            data = await mcp.ok(TOOL, {**UNSUBSCRIBE, "message_ids": [ids[subject]]})
            (left,) = data["lists"]
            expected = ("none", "nothing_offered") if subject == "plain http" else ("link", "open_yourself")
            assert (left["way"], left["outcome"]) == expected, (subject, left)
            if subject != "plain http":
                assert left["link"].startswith(f"https://{LIST_HOST}/") and left["detail"]
        # One list's name with three addresses is three lists: none is left out as "the same".
        together = await mcp.ok(
            TOOL, {**UNSUBSCRIBE, "message_ids": [ids["no post"], ids["not covered"], ids["dkim failed"]]}
        )
        assert sorted(left["link"][-3:] for left in together["lists"]) == ["u=2", "u=3", "u=4"]
    assert asked.asked == [] and lists.requests == [] and lists.resolved == []


async def test_a_redirect_is_not_followed_and_a_server_error_is_said(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    settings = _seeded(
        dovecot,
        list_message("moved", f"<https://{LIST_HOST}/redirect>"),
        list_message("broken", f"<https://{LIST_HOST}/fail>"),
    )
    async with client(settings, lists, answering("accept")) as mcp:
        ids = await _ids(mcp)
        moved = (await mcp.ok(TOOL, {**UNSUBSCRIBE, "message_ids": [ids["moved"]]}))["lists"][0]
        broken = (await mcp.ok(TOOL, {**UNSUBSCRIBE, "message_ids": [ids["broken"]]}))["lists"][0]
    assert (moved["outcome"], moved["status"]) == ("not_confirmed", 302)
    assert (broken["outcome"], broken["status"]) == ("failed", 503)
    assert [r.path for r in lists.requests] == ["/redirect", "/fail"]


async def test_the_action_is_refused_and_unlisted_where_unsubscribe_is_off(dovecot: Dovecot) -> None:
    user = dovecot.new_user()
    config = make_config({"default": account_settings(dovecot, user)}, write_enabled=True)
    async for mcp in open_client(config):
        listed = {tool.name: tool for tool in (await mcp.client.list_tools()).tools}
        assert listed[TOOL].input_schema["properties"]["action"]["enum"] == [
            "move",
            "copy",
            "delete",
            "archive",
        ]
        failure = await mcp.fail(
            TOOL, {**UNSUBSCRIBE, "message_ids": ["imap:default:INBOX:1:1"]}, "permission_denied"
        )
        assert "unsubscribe_enabled" in failure["error"]["message"]


async def test_writes_off_refuses_it_before_anything_is_asked(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    settings = _seeded(dovecot, list_message("read only", f"<https://{LIST_HOST}/ok?u=9>"))
    config = make_config({"default": settings}, unsubscribe_enabled=True)
    app = AppContext.from_config(config)
    app.one_click = lists.client()
    asked = answering("accept")
    async for mcp in open_client(config, app, elicitation_callback=asked):
        (message_id,) = (await _ids(mcp)).values()
        failure = await mcp.fail(TOOL, {**UNSUBSCRIBE, "message_ids": [message_id]}, "permission_denied")
        assert failure["error"]["details"]["setting"] == "write_enabled"
    assert asked.asked == [] and lists.requests == [] and lists.resolved == []


@pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed")
@pytest.mark.parametrize("press", ["send", "decline"])
async def test_claude_desktops_path_the_page_shows_the_list_and_host_and_posts_once_approved(
    dovecot: Dovecot, lists: OneClickServer, press: str
) -> None:
    settings = _seeded(dovecot, list_message("on the page", "<https://bücher.example/ok?u=7>"))
    lists.names = {"xn--bcher-kva.example": ["127.0.0.1"]}
    config = make_config({"default": {**settings, "write_enabled": True}}, unsubscribe_enabled=True)
    app = AppContext.from_config(config)
    app.one_click = lists.client()
    seen: list[str] = []

    def browser(url: str) -> bool:
        shown, _ = chromium.answer_approval(url, press)
        seen.append(shown)
        return True

    app.approval_page = approval_page(browser, timeout_s=60)
    async for mcp in open_client(config, app):  # no elicitation: the page asks
        (message_id,) = (await _ids(mcp)).values()
        result, error = await _decided(
            mcp, await mcp.call(TOOL, {**UNSUBSCRIBE, "message_ids": [message_id]})
        )

    async def browsed() -> bool:
        return bool(seen)

    await eventually_async(browsed, within=30)
    (page,) = seen
    assert "Weekly News" in page and "bücher.example (xn--bcher-kva.example)" in page
    if press == "decline":
        assert error is not None and error["code"] == "confirmation_required"
        assert lists.requests == [] and lists.resolved == []
        return
    assert error is None and result["lists"][0]["outcome"] == "unsubscribed"
    (request,) = lists.requests
    assert (request.path, request.body, request.headers["Host"]) == (
        "/ok?u=7",
        ONE_CLICK_BODY,
        "xn--bcher-kva.example",
    )


def _mail_user(chain: SubmissionDovecot, user: str, list_address: str, allowed: list[str]) -> dict[str, Any]:
    """The settings of ``user`` of the chain (writes and sending on, ``allowed`` recipients) whose INBOX
    holds a list's message whose unsubscribe is a mailto to ``list_address`` with cc and bcc in it."""
    link = f"<mailto:{list_address}?subject=unsubscribe%20me&cc=boss@{DOMAIN}&bcc=spy@{DOMAIN}&body=stop>"
    for box in ("Drafts", "Trash", "Sent"):
        chain.ensure_folder(user, box)
    chain.seed(user, "INBOX", [list_message("by mail", link, post=False)])
    settings = _settings(
        chain, user, chain.submission_port, "starttls", write_enabled=True, authserv_id=AUTHSERV
    )
    return {**settings, "allowed_recipients": allowed}


async def test_mailto_becomes_a_draft_sent_only_through_imap_send_draft(
    chain: SubmissionDovecot, lists: OneClickServer
) -> None:
    user, list_owner = chain.new_user(), chain.new_user()
    address = chain.address(list_owner)
    settings = _mail_user(chain, user, address, allowed=[f"@{DOMAIN}"])
    asked = answering("accept")
    async with client(settings, lists, asked) as mcp:
        (message_id,) = (await _ids(mcp)).values()
        data = await mcp.ok(TOOL, {**UNSUBSCRIBE, "message_ids": [message_id]})
        (left,) = data["lists"]
        assert (left["way"], left["outcome"]) == ("mailto", "draft_saved")
        assert chain.folder_path(list_owner, "INBOX").exists() is False or not list(
            (chain.folder_path(list_owner, "INBOX") / "new").glob("*")
        )
        assert data["next_action"]["tool"] == "imap_send_draft"
        sent = await mcp.ok("imap_send_draft", data["next_action"]["arguments"])
        assert sent["outcome"] == "sent" and sent["accepted"] == [address]
    assert len(asked.asked) == 2 and address in asked.asked[0] and address in asked.asked[1]
    assert "boss@" not in asked.asked[1] and "spy@" not in asked.asked[1]

    async def delivered() -> bool:
        folder = chain.folder_path(list_owner, "INBOX") / "new"
        return folder.exists() and any(folder.glob("*"))

    await eventually_async(delivered, within=15)
    (arrived,) = list((chain.folder_path(list_owner, "INBOX") / "new").glob("*"))
    text = arrived.read_bytes()
    assert b"Subject: unsubscribe me" in text and b"boss@" not in text and b"spy@" not in text
    assert lists.requests == []


async def test_a_mailto_outside_allowed_recipients_is_drafted_but_never_sent(
    chain: SubmissionDovecot, lists: OneClickServer
) -> None:
    user, list_owner = chain.new_user(), chain.new_user()
    settings = _mail_user(chain, user, chain.address(list_owner), allowed=[chain.address(user)])
    sent_before = chain.mta_log().count(" <= ")
    async with client(settings, lists, answering("accept")) as mcp:
        (message_id,) = (await _ids(mcp)).values()
        data = await mcp.ok(TOOL, {**UNSUBSCRIBE, "message_ids": [message_id]})
        (left,) = data["lists"]
        assert left["outcome"] == "draft_saved" and data.get("next_action") is None
        refused = await mcp.fail("imap_send_draft", {"message_id": left["draft_id"]}, "permission_denied")
        assert chain.address(list_owner) in refused["error"]["message"]
    assert chain.mta_log().count(" <= ") == sent_before


async def test_regression_with_sending_off_a_mailto_draft_is_not_offered_to_imap_send_draft(
    chain: SubmissionDovecot, lists: OneClickServer
) -> None:
    """The answer named imap_send_draft as its next action on an account that does not send, whose call
    is refused: the draft is saved, and the dry run, the question and the answer say the user sends it."""
    user, list_owner = chain.new_user(), chain.new_user()
    settings = {**_mail_user(chain, user, chain.address(list_owner), [f"@{DOMAIN}"]), "send_enabled": False}
    asked = answering("accept")
    async with client(settings, lists, asked) as mcp:
        (message_id,) = (await _ids(mcp)).values()
        arguments = {**UNSUBSCRIBE, "message_ids": [message_id]}
        dry = await mcp.ok(TOOL, {**arguments, "dry_run": True})
        data = await mcp.ok(TOOL, arguments)
    said = "sending is off for this account (send_enabled in [accounts.default])"
    assert said in dry["lists"][0]["detail"] and said in asked.asked[0]
    (left,) = data["lists"]
    assert left["outcome"] == "draft_saved" and left["draft_id"] and said in left["detail"]
    assert data.get("next_action") is None
    assert len(_files(chain, user, "Drafts")) == 1


async def test_regression_a_mailto_outside_allowed_recipients_is_said_in_the_dry_run_and_the_question(
    chain: SubmissionDovecot, lists: OneClickServer
) -> None:
    """It was approved and drafted, and only imap_send_draft refused it (issue 78 item 9)."""
    user, list_owner = chain.new_user(), chain.new_user()
    address = chain.address(list_owner)
    settings = _mail_user(chain, user, address, allowed=[chain.address(user)])
    declined = answering("decline")
    async with client(settings, lists, declined) as mcp:
        (message_id,) = (await _ids(mcp)).values()
        arguments = {**UNSUBSCRIBE, "message_ids": [message_id]}
        dry = await mcp.ok(TOOL, {**arguments, "dry_run": True})
        await mcp.fail(TOOL, arguments, "confirmation_required")
    (would,) = dry["lists"]
    assert would["outcome"] == "would_do" and f"{address} is outside allowed_recipients" in would["detail"]
    (question,) = declined.asked
    assert (
        f"{address} is outside allowed_recipients" in question and "imap_send_draft will refuse" in question
    )
    assert _files(chain, user, "Drafts") == []
    async with client(settings, lists, answering("accept")) as mcp:
        data = await mcp.ok(TOOL, arguments)
    (left,) = data["lists"]
    assert left["outcome"] == "draft_saved" and "allowed_recipients" in left["detail"]
    assert len(_files(chain, user, "Drafts")) == 1
