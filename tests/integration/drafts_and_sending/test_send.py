"""imap_send_draft through the SDK's MCP client, against the real submission chain (Dovecot submission ->
Exim -> LMTP into the same Dovecot, tests/support/servers/submission.py): the recipient reads the message in their
INBOX, compared byte for byte with the draft; the user's approval by elicitation (both protocol eras),
declined, cancelled or impossible; faults through the fault proxy on the plaintext submission port; hostile
drafts saved by another client with APPEND. Messages are counted before and after every send.
"""

from __future__ import annotations

import email.utils
import hashlib
import imaplib
import logging
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking import page as asking_page
from mail_imap_mcp.asking.answers import Answer
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.config import Config
from mail_imap_mcp.mime.message_file import MessageFile
from mail_imap_mcp.services.send_page import MessageRenderer
from tests.support.clients import chromium
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.fake_clock import FakeClock
from tests.support.patience import eventually
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.oauth2 import IntrospectionEndpoint, TokenHelper, new_token
from tests.support.servers.redis_server import RedisServer
from tests.support.servers.submission import DOMAIN, SubmissionDovecot
from tests.support.shared.send import (
    TOOL,
    TRACE,
    _answer_page,
    _append,
    _client,
    _decided,
    _delivered,
    _draft,
    _draft_id,
    _everywhere,
    _files,
    _flags,
    _opened_later,
    _page_and_answer,
    _received,
    _reply_to,
    _settings,
    _setup,
    _until,
    desktop_server,
)

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]


async def _refused(mcp: EnvelopeClient, answer: dict[str, Any]) -> dict[str, Any]:
    """``_decided``, for a call that must send nothing: a send is a failure that says so at once (not a
    KeyError on a missing ``error`` further on)."""
    decided = await _decided(mcp, answer)
    assert not decided["success"], f"the call sent, though nothing was to be sent: {decided}"
    return decided


@pytest.mark.parametrize("era", ERAS)
async def test_an_approved_draft_reaches_each_recipient_once_as_saved(
    chain: SubmissionDovecot, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    sender, bob, carol = _setup(chain)
    dave = chain.new_user()
    to, cc, bcc = [f"Bob <{chain.address(bob)}>"], [chain.address(carol)], [chain.address(dave)]
    _, raw = _reply_to(chain, sender, bob, to=to, cc=cc, bcc=bcc)
    received = _received(chain)
    accepting = answering("accept")
    async for mcp in _client(_settings(chain, sender, chain.submissions_port, "tls"), era, accepting):
        draft = await _draft_id(mcp)
        data = await mcp.ok(TOOL, {"message_id": draft})
    assert (data["outcome"], data["status"], data["sent_copy"]) == ("sent", "ok", "appended")
    assert (data["answered"], data["draft_moved_to_trash"]) == (True, True)
    assert sorted(data["accepted"]) == sorted(chain.address(u) for u in (bob, carol, dave))
    (question,) = accepting.asked
    for shown in (f"From: Alice <{chain.address(sender)}>", f"To: Bob <{chain.address(bob)}>",
                  f"Cc: {chain.address(carol)}", f"Bcc: {chain.address(dave)}", "Subject: Re: Question",
                  "Attachments: none"):  # fmt: skip
        assert shown in question.splitlines()
    assert "\n```\nDear Bob,\n.leading dot stays\nBest\n```\n" in question  # the whole text, line by line
    expected = re.sub(rb"Bcc: [^\r]*\r\n", b"", raw)
    for user in (bob, carol, dave):
        (got,) = await _delivered(chain, user, 1)
        body = TRACE.sub(b"", got.replace(b"\r\n", b"\n")).replace(b"\n", b"\r\n")
        date = re.search(rb"^Date: ([^\r]*)\r\n", body, re.M)
        assert date is not None and email.utils.parsedate_to_datetime(date.group(1).decode()).year >= 2026
        assert body.replace(date.group(0), b"") == re.sub(rb"Date: [^\r]*\r\n", b"", expected)
    assert _received(chain) == received + 1
    (copy,) = _files(chain, sender, "Sent")
    assert b"Bcc: " + chain.address(dave).encode() in copy.read_bytes() and copy.name.endswith("S")
    assert len(_files(chain, sender, "Trash")) == 1 and _files(chain, sender, "Drafts") == []
    (answered,) = _files(chain, sender)
    assert "R" in answered.name.rpartition(":2,")[2]
    (line,) = [
        r.getMessage()
        for r in caplog.records
        if r.name == "mail_imap_mcp.audit" and "outcome=sent" in r.getMessage()
    ]
    header_id = re.search(rb"Message-ID: (<[^>]+>)", raw).group(1).decode()  # type: ignore[union-attr]
    assert f"tool={TOOL} account=default action=send messages=3 outcome=sent message_id={header_id}" in line
    assert "recipients=" + ",".join(chain.address(u) for u in (bob, carol, dave)) in line


async def test_an_oauth2_account_submits_with_its_token_as_xoauth2(
    chain: SubmissionDovecot, introspection: IntrospectionEndpoint, tmp_path: Path
) -> None:
    sender, bob, _ = _setup(chain)
    token = new_token()
    introspection.accept(token, sender)
    helper = TokenHelper(tmp_path / "helper", token)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    settings = _settings(chain, sender, chain.submission_port, "starttls", auth="xoauth2")
    settings = {**settings, "oauth2_token_command": helper.command}
    del settings["password"]
    requests = introspection.requests
    async for mcp in _client(settings):
        assert (await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)}))["outcome"] == "sent"
    assert len(await _delivered(chain, bob, 1)) == 1
    assert introspection.requests >= requests + 2  # the IMAP login and the submission's
    # One token for both protocols: the submission logs in with the pool's token, fetched once (a send
    # used to build a token source of its own and run the helper again).
    assert helper.runs == 1


@pytest.mark.parametrize(
    ("era", "action"), [("legacy", "decline"), ("modern", "cancel"), ("modern", "decline")]
)
async def test_a_user_who_does_not_approve_sends_nothing(
    chain: SubmissionDovecot, era: str, action: str
) -> None:
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    received = _received(chain)
    async for mcp in _client(_settings(chain, sender, chain.submissions_port, "tls"), era, answering(action)):
        failed = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "confirmation_required")
        assert failed["error"]["details"]["elicitation"] == action
    assert _received(chain) == received and await _delivered(chain, bob, 0) == []
    assert len(_files(chain, sender, "Drafts")) == 1


async def test_a_draft_changed_while_the_user_was_asked_is_not_sent(chain: SubmissionDovecot) -> None:
    """Another client replaces the draft (a Bcc added) while the user reads the question: the message the
    user approved is no longer there, and the changed one is not sent on that approval."""
    sender, bob, _ = _setup(chain)
    raw = _draft(chain.address(sender), [chain.address(bob)])
    _append(chain, sender, "Drafts", raw)
    received = _received(chain)
    asked: list[str] = []

    async def change_then_accept(context: Any, params: Any) -> Any:
        asked.append(params.message)
        if len(asked) == 1:
            changed = raw.replace(b"Subject: Hello", b"Bcc: eve@mail.test\r\nSubject: Hello")
            await anyio.to_thread.run_sync(_replace_draft, chain, sender, changed)
        return await answering("accept")(context, params)

    async for mcp in _client(
        _settings(chain, sender, chain.submission_port, "starttls"), "legacy", change_then_accept
    ):
        await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "not_found")
    assert len(asked) == 1 and "Bcc: -" in asked[0]
    assert _received(chain) == received and await _delivered(chain, bob, 0) == []


def _replace_draft(chain: SubmissionDovecot, user: str, raw: bytes) -> None:
    imap = imaplib.IMAP4("127.0.0.1", chain.plain_port)
    try:
        imap.login(user, chain.password)
        imap.select("Drafts")
        imap.store("1:*", "+FLAGS", "(\\Deleted)")
        imap.expunge()
        imap.append("Drafts", "(\\Draft)", None, raw)
    finally:
        imap.logout()


async def test_a_client_without_elicitation_is_refused_and_no_setting_lets_the_agent_approve(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    received = _received(chain)
    settings = _settings(chain, sender, chain.submissions_port, "tls")
    config = make_config({"default": settings}, confirm_without_elicitation=True)
    async for mcp in open_client(config):
        draft = await _draft_id(mcp)
        refused = await mcp.fail(TOOL, {"message_id": draft}, "permission_denied")
        assert refused["error"]["details"] == {"approval": "unavailable"}
        assert "confirm_token" not in str(refused)
        await mcp.fail(TOOL, {"message_id": draft, "confirm_token": "x"}, "invalid_input")
    assert _received(chain) == received


async def test_a_recipient_outside_the_allowed_list_is_refused_before_any_connection(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _setup(chain)
    _append(
        chain,
        sender,
        "Drafts",
        _draft(chain.address(sender), [chain.address(bob)], bcc=["eve@elsewhere.example"]),
    )
    with FaultProxy("127.0.0.1", chain.submission_port) as proxy:
        async for mcp in _client(_settings(chain, sender, proxy.address[1], "plain")):
            refused = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "permission_denied")
        assert proxy.accepted == 0
    assert refused["error"]["details"]["recipients"] == ["eve@elsewhere.example"]


async def test_one_of_three_recipients_refused_is_a_partial_answer_naming_it(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, carol = _setup(chain)
    nobody = f"refused-{sender}@{DOMAIN}"
    _append(
        chain,
        sender,
        "Drafts",
        _draft(chain.address(sender), [chain.address(bob), nobody], cc=[chain.address(carol)]),
    )
    async for mcp in _client(_settings(chain, sender, chain.submission_port, "starttls")):
        data = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
    assert (data["outcome"], data["status"]) == ("sent", "partial")
    assert [r["address"] for r in data["refused"]] == [nobody] and data["refused"][0]["reply"].startswith(
        "550"
    )
    assert [issue["code"] for issue in data["issues"]] == ["recipient_refused"]
    assert len(await _delivered(chain, bob, 1)) == 1 and len(await _delivered(chain, carol, 1)) == 1


async def test_a_connection_cut_after_the_data_is_outcome_unknown_and_never_sent_twice(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    with FaultProxy("127.0.0.1", chain.submission_port) as proxy:
        settings = _settings(chain, sender, proxy.address[1], "plain")
        config = make_config({"default": settings})
        proxy.cut_after_sent(b"\r\n.\r\n")
        async for mcp in open_client(config, elicitation_callback=answering("accept"), mode="legacy"):
            draft = await _draft_id(mcp)
            data = await mcp.ok(TOOL, {"message_id": draft})
            assert (data["outcome"], data["status"]) == ("outcome_unknown", "partial")
            assert [issue["code"] for issue in data["issues"]] == ["outcome_unknown"]
            again = await mcp.fail(TOOL, {"message_id": draft}, "conflict")
            assert again["error"]["details"]["state"] == "unknown"
        assert proxy.cuts == 1
    assert len(await _delivered(chain, bob, 1)) == 1  # the server had it: delivered once, never twice
    assert len(_files(chain, sender, "Drafts")) == 1  # left alone: nothing after an unknown outcome


async def test_a_server_down_sends_nothing_and_the_draft_can_be_sent_later(chain: SubmissionDovecot) -> None:
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    with FaultProxy("127.0.0.1", chain.submission_port) as proxy:
        proxy.refuse()
        async for mcp in _client(_settings(chain, sender, proxy.address[1], "plain")):
            draft = await _draft_id(mcp)
            down = await mcp.fail(TOOL, {"message_id": draft}, "unavailable")
            assert down["error"]["retryable"] is True
            proxy.pass_through()
            assert (await mcp.ok(TOOL, {"message_id": draft}))["outcome"] == "sent"
    assert len(await _delivered(chain, bob, 1)) == 1


async def test_a_tls_failure_sends_nothing(chain: SubmissionDovecot) -> None:
    """Implicit TLS configured for the plaintext port: the handshake fails, nothing is sent."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    received = _received(chain)
    async for mcp in _client(_settings(chain, sender, chain.submission_port, "tls")):
        failed = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "unavailable")
    assert failed["error"]["details"]["stage"] == "tls" and _received(chain) == received
    assert "Nothing was sent" in failed["error"]["message"]


async def test_the_hourly_rate_is_held_per_account(chain: SubmissionDovecot) -> None:
    sender, bob, _ = _setup(chain)
    for subject in ("one", "two"):
        _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)], subject=subject))
    async for mcp in _client(
        _settings(chain, sender, chain.submission_port, "starttls", send_rate_per_hour=1)
    ):
        await mcp.ok(TOOL, {"message_id": await _draft_id(mcp, "one")})
        limited = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp, "two")}, "limit_exceeded")
    assert limited["error"]["details"]["setting"] == "send_rate_per_hour"
    assert len(await _delivered(chain, bob, 1)) == 1


async def test_a_follow_up_that_fails_after_acceptance_is_an_issue_of_a_success(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _setup(chain, sent=False)  # no Sent folder: the copy cannot be filed
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    async for mcp in _client(_settings(chain, sender, chain.submission_port, "starttls")):
        data = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
    assert (data["outcome"], data["status"], data["sent_copy"]) == ("sent", "partial", None)
    assert [issue["code"] for issue in data["issues"]] == ["sent_copy_failed"]
    assert len(await _delivered(chain, bob, 1)) == 1


#: One draft sent as saved (its injection shown escaped) and one refused, each through the chain: which
#: drafts are refused, and why, is the draft's reading (tests/pure/test_send_outgoing.py::
#: test_hostile_drafts_are_refused: another sender, a header twice, an injection in a name, too many
#: recipients; ::test_an_injected_subject_is_shown_escaped_on_one_line).
HOSTILE = {
    "header injection": lambda a, b: _draft(a, [b], subject="=?utf-8?q?Hi=0D=0ABcc:_eve@evil.example?="),
    "two To headers": lambda a, b: _draft(a, [b], extra="To: eve@evil.example"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_hostile_draft_saved_by_another_client_is_refused_or_shown_as_it_is(
    chain: SubmissionDovecot, kind: str
) -> None:
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", HOSTILE[kind](chain.address(sender), chain.address(bob)))
    received = _received(chain)
    accepting = answering("accept")
    with FaultProxy("127.0.0.1", chain.submission_port) as proxy:
        async for mcp in _client(_settings(chain, sender, proxy.address[1], "plain"), "legacy", accepting):
            answer = await mcp.call(TOOL, {"message_id": await _draft_id(mcp)})
    if kind == "header injection":
        # Sent as saved, to the one real recipient: the injected text is shown escaped, never a header.
        assert answer["success"] and answer["data"]["accepted"] == [chain.address(bob)]
        (question,) = accepting.asked
        assert "Subject: Hi\\x0d\\x0aBcc: eve@evil.example" in question
        assert await _delivered(chain, bob, 1) != []
    else:
        assert answer["error"]["code"] == "invalid_input" and accepting.asked == [] and proxy.accepted == 0
        assert _received(chain) == received


async def test_a_draft_whose_message_id_is_in_sent_is_refused_before_the_user_is_asked(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _setup(chain)
    raw = _draft(chain.address(sender), [chain.address(bob)])
    _append(chain, sender, "Drafts", raw)
    _append(chain, sender, "Sent", raw, "(\\Seen)")  # sent before, by another client
    accepting = answering("accept")
    async for mcp in _client(
        _settings(chain, sender, chain.submission_port, "starttls"), "legacy", accepting
    ):
        refused = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "conflict")
    assert refused["error"]["details"]["state"] == "sent" and accepting.asked == []
    assert refused["data"]["next_action"]["arguments"]["mailbox"] == "Sent"


async def test_the_servers_size_limit_is_respected(tmp_path: Path) -> None:
    with SubmissionDovecot(max_mail_size=3000) as small:
        sender, bob = small.new_user(), small.new_user()
        for box in ("Drafts", "Trash", "Sent"):
            small.ensure_folder(sender, box)
        _append(small, sender, "Drafts", _draft(small.address(sender), [small.address(bob)], body="x" * 3500))
        async for mcp in _client(_settings(small, sender, small.submission_port, "starttls")):
            failed = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "limit_exceeded")
        assert "3000" in failed["error"]["message"] and _received(small) == 0


async def test_the_record_of_a_send_is_shared_by_instances_through_redis(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """Instance A loses the connection after the data; instance B (another process's view: its own app,
    the same Redis) refuses the draft as of unknown outcome: never sent twice across instances."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    with RedisServer(tmp_path / "redis") as redis, FaultProxy("127.0.0.1", chain.submission_port) as proxy:
        config = Config.model_validate(
            {
                "accounts": {"default": _settings(chain, sender, proxy.address[1], "plain")},
                "state": {"redis_url": redis.url},
            }
        )
        proxy.cut_after_sent(b"\r\n.\r\n")
        async for first in open_client(config, elicitation_callback=answering("accept"), mode="legacy"):
            draft = await _draft_id(first)
            assert (await first.ok(TOOL, {"message_id": draft}))["outcome"] == "outcome_unknown"
        async for second in open_client(config, elicitation_callback=answering("accept"), mode="legacy"):
            again = await second.fail(TOOL, {"message_id": draft}, "conflict")
        assert again["error"]["details"]["state"] == "unknown" and proxy.cuts == 1
    assert len(await _delivered(chain, bob, 1)) == 1


async def test_an_account_without_sending_answers_permission_denied_beside_one_that_sends(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    sending = _settings(chain, sender, chain.submission_port, "starttls")
    quiet = {**sending, "send_enabled": False}
    received = _received(chain)
    config = make_config({"default": sending, "quiet": quiet})
    async for mcp in open_client(config, elicitation_callback=answering("accept"), mode="legacy"):
        assert TOOL in await mcp.schemas()
        found = await mcp.ok("imap_search_messages", {"account_id": "quiet", "mailbox": "Drafts"})
        (draft,) = found["messages"]
        refused = await mcp.fail(TOOL, {"message_id": draft["message_id"]}, "permission_denied")
    assert refused["error"]["details"] == {"account_id": "quiet", "setting": "send_enabled"}
    assert _received(chain) == received
    async for mcp in open_client(make_config({"quiet": quiet})):
        assert TOOL not in await mcp.schemas()


@pytest.mark.parametrize(
    ("decision", "said"), [(Answer.APPROVED, ""), (Answer.DECLINED, "dont_send"), (Answer.EXPIRED, "expired")]
)
async def test_where_the_client_cannot_ask_the_approval_page_hook_decides(
    chain: SubmissionDovecot, decision: Answer, said: str
) -> None:
    """The seam the browser approval page plugs into (AppContext.approval_page): called, for a client
    without elicitation, with the review elicitation would show and the message's renderer; only approval
    sends, and a decline keeps the word a send's clients read (``dont_send``).
    (The page itself is another module's; this stand-in answers as a user would.)"""
    sender, bob, _ = _setup(chain)
    raw = _draft(chain.address(sender), [chain.address(bob)])
    _append(chain, sender, "Drafts", raw)
    config = make_config({"default": _settings(chain, sender, chain.submission_port, "starttls")})
    app = AppContext.from_config(config)
    shown: list[tuple[str, Renderer]] = []

    def page(review: Review, digest: str, render: Renderer) -> Answer:
        shown.append((review.question(), render))
        return decision

    app.approval_page = page
    async for mcp in open_client(config, app):  # no elicitation
        answer = await _decided(mcp, await mcp.call(TOOL, {"message_id": await _draft_id(mcp)}))
    ((text, render),) = shown
    assert text.startswith("send this message from account 'default':")
    assert isinstance(render, MessageRenderer) and isinstance(render.message, MessageFile)
    assert (
        render.message.sha256().digest() == hashlib.sha256(raw).digest()
    )  # the draft's bytes, kept in a file
    if decision is Answer.APPROVED:
        assert answer["data"]["outcome"] == "sent" and len(await _delivered(chain, bob, 1)) == 1
    else:
        assert answer["error"]["code"] == "confirmation_required" and await _delivered(chain, bob, 0) == []
        assert answer["error"]["details"] == {"approval": said}


@pytest.mark.parametrize("decision", ["approve", "decline"])
async def test_the_browser_approval_page_sends_only_on_send(chain: SubmissionDovecot, decision: str) -> None:
    """The real approval page (asking/page_server/) behind the send tool's hook, answered as a browser would: a client
    without elicitation, the draft shown with its Bcc, "Send" sends it once and "Don't send" nothing."""
    sender, bob, carol = _setup(chain)
    _append(
        chain,
        sender,
        "Drafts",
        _draft(chain.address(sender), [chain.address(bob)], bcc=[chain.address(carol)]),
    )
    config = make_config({"default": _settings(chain, sender, chain.submission_port, "starttls")})
    app = AppContext.from_config(config)
    seen: list[str] = []
    app.approval_page = approval_page(lambda url: _answer_page(url, decision, seen), timeout_s=30)
    received = _received(chain)
    async for mcp in open_client(config, app):  # no elicitation
        answer = await _decided(mcp, await mcp.call(TOOL, {"message_id": await _draft_id(mcp)}))
    (html,) = seen
    assert chain.address(carol) in html and "Dear Bob," in html
    if decision == "approve":
        assert answer["data"]["outcome"] == "sent" and len(await _delivered(chain, bob, 1)) == 1
        assert _received(chain) == received + 1
    else:
        assert answer["error"]["details"] == {"approval": "dont_send"}
        assert _received(chain) == received and await _delivered(chain, bob, 0) == []


async def test_a_certificate_not_for_the_host_sends_nothing(chain: SubmissionDovecot) -> None:
    """The submission server reached under a name its certificate does not carry (127.0.0.3, through the
    proxy): the handshake fails on the name, nothing is sent."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    received = _received(chain)
    with FaultProxy("127.0.0.1", chain.submissions_port, host="127.0.0.3") as proxy:
        settings = {
            **_settings(chain, sender, 0, "tls"),
            "smtp": {"host": "127.0.0.3", "port": proxy.address[1]},
        }
        async for mcp in _client(settings):
            failed = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "unavailable")
    assert failed["error"]["details"]["stage"] == "tls" and "certificate" in failed["error"]["message"]
    assert _received(chain) == received


async def test_a_call_waiting_for_the_browser_page_reports_progress_without_the_address(
    chain: SubmissionDovecot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page may take the user minutes: a client that asked for progress hears from the call meanwhile
    (so its request does not time out), and never the page's one-time address."""
    monkeypatch.setattr(asking_page, "PROGRESS_EVERY_S", 0.05)
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    settings = _settings(chain, sender, chain.submission_port, "starttls")
    config = make_config({"default": settings}, background_after_s=0)  # the call answers at once
    app = AppContext.from_config(config)
    urls: list[str] = []

    def slow_user(url: str) -> bool:
        # Reading the message until the client heard from the call: a fixed pause only hoped a progress
        # message had arrived by then, which a loaded machine could delay past it.
        eventually(lambda: messages, what="a progress message while the page is open")
        return _answer_page(url, "approve", [], urls)

    app.approval_page = approval_page(slow_user, timeout_s=30)
    messages: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)

    async for mcp in open_client(config, app):
        draft = await _draft_id(mcp)
        result = await mcp.client.call_tool(TOOL, {"message_id": draft}, progress_callback=on_progress)
    assert result.structured_content is not None and result.structured_content["data"]["outcome"] == "sent"
    assert messages and set(messages) == {"Waiting for the user to approve the message in their browser"}
    (url,) = urls
    assert urllib.parse.urlsplit(url).path not in str(result.structured_content)


@pytest.mark.parametrize("press", ["send", "decline"])
async def test_claude_desktops_path_a_reply_approved_in_chromium_reaches_the_recipient_once(
    chain: SubmissionDovecot, tmp_path: Path, press: str
) -> None:
    """The server as Claude Desktop runs it (a stdio subprocess; the SDK's client declares no elicitation
    and asks for no progress, so the call hands back an operation, polled to its end), the user's browser
    (BROWSER) headless Chromium: the reply is shown on the one-time page, "Send" there
    sends it once (the recipient reads it in their INBOX through the real chain; the original is
    \\Answered, Sent has one copy, the draft is in Trash); "Don't send" changes nothing anywhere."""
    sender, bob, carol = _setup(chain)
    asked_id, _ = _reply_to(chain, sender, bob, bcc=[chain.address(carol)])
    done = tmp_path / "page.txt"
    params = desktop_server(chain, sender, tmp_path, press, done)
    before = _everywhere(chain, sender, [bob, carol])
    async with Client(params) as client:  # declares no elicitation, sends no progressToken
        mcp = EnvelopeClient(client)
        waiting = await mcp.call(TOOL, {"message_id": await _draft_id(mcp)})
        assert waiting["data"]["outcome"] == "waiting_for_approval", waiting
        answer = await _decided(mcp, waiting)
    page, answered = await _page_and_answer(done)
    assert chain.address(carol) in page and "Re: Question" in page and "Dear Bob," in page
    (kept,) = _files(chain, sender)
    if press == "decline":
        assert answered.startswith("Not sent")
        assert answer["error"]["code"] == "confirmation_required" and answer["error"]["details"] == {
            "approval": "dont_send"
        }
        assert await _delivered(chain, bob, 0) == [] and _everywhere(chain, sender, [bob, carol]) == before
        assert "R" not in _flags(kept)
        return
    assert answered.startswith("Approved")
    assert (answer["data"]["outcome"], answer["data"]["answered"]) == ("sent", True), answer
    (got,) = await _delivered(chain, bob, 1)
    assert f"In-Reply-To: {asked_id}".encode() in got and b"Bcc:" not in got
    assert len(await _delivered(chain, carol, 1)) == 1
    assert "R" in _flags(kept)
    after = _everywhere(chain, sender, [bob, carol])
    assert after == {
        **before,
        f"{sender}/Drafts": 0,
        f"{sender}/Sent": 1,
        f"{sender}/Trash": 1,
        f"{bob}/INBOX": 1,
        f"{carol}/INBOX": 1,
        "relayed": before["relayed"] + 1,
    }


async def test_a_provider_that_files_sent_mail_itself_gets_no_second_copy(chain: SubmissionDovecot) -> None:
    """An address at Gmail (its submission server files a copy in Sent itself, config/providers.py): no
    copy is appended, so there are never two."""
    sender, bob, _ = _setup(chain)
    own = f"{sender}@gmail.com"
    _append(chain, sender, "Drafts", _draft(own, [chain.address(bob)]))
    settings = {**_settings(chain, sender, chain.submission_port, "starttls"), "addresses": [own]}
    async for mcp in _client(settings):
        data = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
    assert (data["outcome"], data["sent_copy"], data["status"]) == ("sent", "filed_by_provider", "ok")
    assert _files(chain, sender, "Sent") == [] and len(await _delivered(chain, bob, 1)) == 1


async def test_the_original_is_marked_answered_in_the_folder_it_is_kept(chain: SubmissionDovecot) -> None:
    """The message replied to was filed away (not in INBOX): it is found by the reply's In-Reply-To in the
    folder it is kept in, and marked \\Answered there."""
    sender, bob, _ = _setup(chain)
    chain.seed(sender, "INBOX", [_draft(chain.address(bob), [chain.address(sender)], subject="Other")])
    _reply_to(chain, sender, bob, "Projects/2025")
    async for mcp in _client(_settings(chain, sender, chain.submission_port, "starttls")):
        data = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
    assert (data["outcome"], data["answered"], data["status"]) == ("sent", True, "ok")
    ((kept,), (other,)) = _files(chain, sender, "Projects/2025"), _files(chain, sender)
    assert "R" in _flags(kept) and "R" not in _flags(other)
    assert len(await _delivered(chain, bob, 1)) == 1


async def test_the_state_store_failing_after_acceptance_is_success_with_an_issue_and_never_sent_twice(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """Team mode: Redis goes away just as the outcome is recorded (the server had accepted the message).
    The answer is success with a record_failed issue, never an error inviting a resend; with Redis back,
    the same draft (restored from Trash) is refused: the record taken before sending still holds it."""
    sender, bob, _ = _setup(chain)
    raw = _draft(chain.address(sender), [chain.address(bob)])
    _append(chain, sender, "Drafts", raw)
    received = _received(chain)
    with RedisServer(tmp_path / "redis") as redis, FaultProxy("127.0.0.1", redis.port) as proxy:
        config = Config.model_validate(
            {
                "accounts": {"default": _settings(chain, sender, chain.submission_port, "starttls")},
                "state": {"redis_url": f"redis://127.0.0.1:{proxy.address[1]}/0"},
            }
        )
        proxy.drop_when_sent(b"$4\r\nsent\r\n", then_refuse=True)  # the record's SET ... sent
        async for mcp in open_client(config, elicitation_callback=answering("accept"), mode="legacy"):
            data = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
        assert proxy.drops == 1
        assert (data["outcome"], data["status"]) == ("sent", "partial")
        assert [issue["code"] for issue in data["issues"]] == ["record_failed"]
        assert "do not send this draft again" in data["issues"][0]["message"]
        assert (data["sent_copy"], data["draft_moved_to_trash"]) == ("appended", True)
        proxy.pass_through()  # Redis is back
        _append(chain, sender, "Drafts", raw)
        async for mcp in open_client(config, elicitation_callback=answering("accept"), mode="legacy"):
            again = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "conflict")
    assert again["error"]["details"]["state"] in {"sending", "sent"}
    assert _received(chain) == received + 1 and len(await _delivered(chain, bob, 1)) == 1


async def test_a_login_secret_that_cannot_be_obtained_sends_nothing_and_records_nothing(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """The password file is gone by the time the user approved (the IMAP session was open before): the
    submission login is auth_failed, nothing is sent, and the draft is sent once the file is back."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    secret = tmp_path / "password"
    secret.write_text(chain.password + "\n")
    secret.chmod(0o600)
    settings = {**_settings(chain, sender, chain.submission_port, "starttls"), "password_file": str(secret)}
    del settings["password"]
    received = _received(chain)

    async def remove_then_accept(context: Any, params: Any) -> Any:
        secret.unlink()
        return await answering("accept")(context, params)

    async for mcp in _client(settings, "legacy", remove_then_accept):
        draft = await _draft_id(mcp)
        failed = await mcp.fail(TOOL, {"message_id": draft}, "auth_failed")
    assert "password_file" in failed["error"]["message"] and chain.password not in str(failed)
    assert _received(chain) == received and len(_files(chain, sender, "Drafts")) == 1
    secret.write_text(chain.password + "\n")
    secret.chmod(0o600)
    async for mcp in _client(settings):
        assert (await mcp.ok(TOOL, {"message_id": draft}))["outcome"] == "sent"
    assert _received(chain) == received + 1 and len(await _delivered(chain, bob, 1)) == 1


async def test_an_approval_page_that_expired_sends_nothing_and_says_so(chain: SubmissionDovecot) -> None:
    """The user presses "Send" in Chromium after the page's time ran out (on the clock it is timed by):
    the page says Expired, the call says the approval expired, nothing is sent."""
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    config = make_config({"default": _settings(chain, sender, chain.submission_port, "starttls")})
    app = AppContext.from_config(config)
    # A start where (start + 300) - start is 299.99999999999955: moved by exactly the page's 300 s, it was
    # not expired and the message went out (about 3% of starts from the monotonic clock did so).
    clock, pages = FakeClock(4055.0984759064563), []

    def late_user(url: str) -> bool:
        def away() -> None:
            clock.now += 300 + 1  # past the page's lifetime, never by exactly it

        pages.append(chromium.answer_approval(url, "send", before_press=away))
        return True

    app.approval_page = approval_page(late_user, timeout_s=300, clock=clock)
    before = _everywhere(chain, sender, [bob])
    async for mcp in open_client(config, app):  # no elicitation
        failed = await _refused(mcp, await mcp.call(TOOL, {"message_id": await _draft_id(mcp)}))
        assert failed["error"]["code"] == "confirmation_required", failed
    await _until(lambda: bool(pages))  # the call's answer may come before the browser closed
    ((_, answered),) = pages
    assert answered.startswith("Expired")
    assert failed["error"]["details"] == {"approval": "expired"} and "expired" in failed["error"]["message"]
    assert _everywhere(chain, sender, [bob]) == before


async def test_a_draft_replaced_while_its_page_was_open_is_not_sent(chain: SubmissionDovecot) -> None:
    """Another client replaces the draft (a Bcc added) while the user reads the page in Chromium; their
    "Send" approved the message they saw, which is no longer the draft: nothing is sent, the call says so."""
    sender, bob, _ = _setup(chain)
    raw = _draft(chain.address(sender), [chain.address(bob)])
    _append(chain, sender, "Drafts", raw)
    changed = raw.replace(b"Subject: Hello", b"Bcc: eve@mail.test\r\nSubject: Hello")
    config = make_config({"default": _settings(chain, sender, chain.submission_port, "starttls")})
    app = AppContext.from_config(config)
    pages = []

    def user(url: str) -> bool:
        pages.append(
            chromium.answer_approval(url, "send", before_press=lambda: _replace_draft(chain, sender, changed))
        )
        return True

    app.approval_page = approval_page(user, timeout_s=60)
    received = _received(chain)
    async for mcp in open_client(config, app):  # no elicitation
        failed = await _refused(mcp, await mcp.call(TOOL, {"message_id": await _draft_id(mcp)}))
        assert failed["error"]["code"] == "not_found", failed
    await _until(lambda: bool(pages))
    ((shown, answered),) = pages
    assert "eve@mail.test" not in shown and answered.startswith("Approved")
    assert failed["error"]["details"]["approval"] == "draft_changed"
    assert "nothing was sent" in failed["error"]["message"]
    assert _received(chain) == received and await _delivered(chain, bob, 0) == []
    (kept,) = _files(chain, sender, "Drafts")
    assert b"eve@mail.test" in kept.read_bytes()


@dataclass
class _LaterReader:
    """A draft from ``sender`` to ``bob`` in Drafts, and a server (``config``, ``app``) whose approval page
    opens in a browser the user reads later (:func:`_opened_later`: its address kept in ``urls``);
    ``before``: every mailbox's count before the send."""

    sender: str
    bob: str
    config: Config
    app: AppContext
    urls: list[str]
    before: dict[str, int]


def _draft_for_a_later_reader(chain: SubmissionDovecot) -> _LaterReader:
    sender, bob, _ = _setup(chain)
    _append(chain, sender, "Drafts", _draft(chain.address(sender), [chain.address(bob)]))
    settings = _settings(chain, sender, chain.submission_port, "starttls")
    config = make_config({"default": settings}, background_after_s=0)  # the call answers at once
    app = AppContext.from_config(config)
    urls: list[str] = []
    app.approval_page = approval_page(_opened_later(urls), timeout_s=60)
    return _LaterReader(sender, bob, config, app, urls, _everywhere(chain, sender, [bob]))


async def _send_to_the_background(mcp: EnvelopeClient, urls: list[str]) -> tuple[str, dict[str, Any], str]:
    """imap_send_draft on the one draft, by a client with neither elicitation nor a progressToken: the
    draft's id, the answer (an operation waiting for the page) and the operation's id, once the page
    opened (in the background: the answer may come first)."""
    draft = await _draft_id(mcp)
    waiting = await mcp.call(TOOL, {"message_id": draft})
    await _until(lambda: bool(urls))
    return draft, waiting, waiting["data"]["background"]["operation_id"]


@pytest.mark.parametrize("press", ["send", "decline"])
async def test_without_a_progress_token_the_page_is_waited_for_as_a_background_operation(
    chain: SubmissionDovecot, press: str
) -> None:
    """A client without elicitation and without a progressToken gets at once an operation to poll (nothing
    sent yet, never the page's address; with writes off, the tool it names is listed); the same draft sent again meanwhile is refused (conflict). The
    user answers later in Chromium: polled to its end, "Send" is the call's own answer (sent, once),
    "Don't send" its refusal."""
    later = _draft_for_a_later_reader(chain)
    sender, bob, urls, before = later.sender, later.bob, later.urls, later.before
    async for mcp in open_client(later.config, later.app):  # no elicitation, no progressToken
        draft, waiting, operation_id = await _send_to_the_background(mcp, urls)
        assert waiting["data"]["outcome"] == "waiting_for_approval" and waiting["data"]["next_action"] == {
            "instruction": waiting["data"]["next_action"]["instruction"],
            "tool": "imap_get_operation",
            "arguments": {"operation_id": operation_id},
        }
        # Writes are off here (sending alone): the tools that follow and stop the send are listed all the same.
        assert {"imap_get_operation", "imap_cancel_operation"} <= (await mcp.schemas()).keys()
        again = await mcp.fail(TOOL, {"message_id": draft}, "conflict")
        assert again["error"]["details"]["state"] == "approving"
        status = await mcp.ok("imap_get_operation", {"operation_id": operation_id})
        assert status["operation"]["state"] in ("accepted", "running")
        (url,) = urls
        _, answered = await anyio.to_thread.run_sync(chromium.answer_approval, url, press)
        answer = await _decided(mcp, waiting)
    path = urllib.parse.urlsplit(url).path
    assert path not in str(waiting) and path not in str(status) and path not in str(answer)
    if press == "decline":
        assert answered.startswith("Not sent") and answer["state"] == "failed"
        assert answer["error"]["code"] == "confirmation_required"
        assert answer["error"]["details"] == {"approval": "dont_send"}
        assert _everywhere(chain, sender, [bob]) == before
        return
    assert answered.startswith("Approved") and answer["state"] == "ok"
    assert answer["data"]["outcome"] == "sent" and answer["data"]["accepted"] == [chain.address(bob)]
    assert len(await _delivered(chain, bob, 1)) == 1
    assert _everywhere(chain, sender, [bob]) == {
        **before,
        f"{sender}/Drafts": 0,
        f"{sender}/Sent": 1,
        f"{sender}/Trash": 1,
        f"{bob}/INBOX": 1,
        "relayed": before["relayed"] + 1,
    }


async def test_cancelling_the_background_send_closes_the_page_and_sends_nothing(
    chain: SubmissionDovecot,
) -> None:
    """imap_cancel_operation while the user reads the page in Chromium: the operation ends canceled saying
    nothing was sent; the user's "Send" afterwards gets a page that says the request was cancelled; nothing
    is sent, and the draft can be sent later (asked anew)."""
    later = _draft_for_a_later_reader(chain)
    sender, bob, urls, before = later.sender, later.bob, later.urls, later.before
    async for mcp in open_client(later.config, later.app):  # no elicitation, no progressToken
        draft, waiting, operation_id = await _send_to_the_background(mcp, urls)

        def cancel_while_reading(mcp: EnvelopeClient = mcp, operation_id: str = operation_id) -> None:
            anyio.from_thread.run(mcp.ok, "imap_cancel_operation", {"operation_id": operation_id})
            anyio.from_thread.run(_decided, mcp, {"data": {"background": {"operation_id": operation_id}}})

        (url,) = urls
        shown, answered = await anyio.to_thread.run_sync(
            chromium.answer_approval, url, "send", cancel_while_reading
        )
        answer = await _decided(mcp, waiting)
        again = await mcp.call(TOOL, {"message_id": draft})  # no longer held: a new page is shown
        assert again["data"]["outcome"] == "waiting_for_approval"
        await mcp.ok("imap_cancel_operation", {"operation_id": again["data"]["background"]["operation_id"]})
    assert "Dear Bob," in shown and answered.startswith("Cancelled") and "Nothing was sent" in answered
    assert answer["state"] == "canceled" and answer["error"]["details"] == {"approval": "cancelled"}
    assert "nothing was sent" in answer["error"]["message"]
    assert await _delivered(chain, bob, 0) == [] and _everywhere(chain, sender, [bob]) == before
