"""imap_save_draft through an MCP client on the server matrix (Dovecot, Cyrus in both namespaces, Courier
via its drafts_mailbox setting: it has no SPECIAL-USE).

Every test counts the messages of every mailbox by Message-ID with an IMAP session of its own before and
after (``message_id_listing``): a saved draft is the one new message, in the Drafts folder, flagged ``\\Draft``,
and reads back with imap_get_message (headers, body, quoted reply, In-Reply-To/References); refused
input (header injection, malformed addresses, sizes) appends nothing; the id comes from APPENDUID, or on
a Dovecot without UIDPLUS from a search by Message-ID; a connection reset after the APPEND was sent is
``outcome_unknown`` and never replayed.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_listing
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.write_drafts import added, drafts_for, read

pytestmark = pytest.mark.anyio

TOOL = "imap_save_draft"

BUDGET = plain_message(
    "Budget plan",
    "Line one\nLine two\n\nLine four\n",
    message_id="<budget-1@example.com>",
    headers={"References": "<root-0@example.com>", "Reply-To": "Boss <boss@example.com>"},
)
LUNCH = plain_message(
    "RE: Lunch", "Noon?\n", from_="Carol <carol@example.net>", message_id="<lunch-2@example.net>"
)


async def message_id_of(mcp: EnvelopeClient, subject: str) -> str:
    data = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "subject": subject})
    (found,) = data["messages"]
    message_id: str = found["message_id"]
    return message_id


async def test_draft_and_quoted_replies_are_saved_and_read_back(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    server = imap_server
    server.seed(user, "INBOX", [BUDGET, LUNCH])
    drafts, settings = drafts_for(server, user)
    before = message_id_listing(server, user)
    config = make_config({"default": account(user, **settings)}, write_enabled=True)
    async for mcp in open_client(config):
        # A new draft: non-ASCII subject, names and body; two To, one Cc.
        data = await mcp.ok(
            TOOL,
            {
                "to": ["Zoë Ünal <zoe@example.com>", "bob@example.org"],
                "cc": ["Carol <carol@example.net>"],
                "subject": "Grüße – Plan für Q3",
                "body_text": "Hallo Zoë,\r\nanbei der Plan.\n\nBis bald\n",
            },
        )
        assert (data["saved"], data["dry_run"], data["mailbox"], data["located_by"]) == (
            True,
            False,
            drafts,
            "appenduid",
        )
        assert data["next_action"] == {
            "instruction": "Read the saved draft back",
            "tool": "imap_get_message",
            "arguments": {"message_id": data["message_id"]},
        }
        message = await read(mcp, data["message_id"])
        assert message["subject"] == "Grüße – Plan für Q3"
        assert message["to"] == "Zoë Ünal <zoe@example.com>, bob@example.org"
        assert message["cc"] == "Carol <carol@example.net>"
        assert message["flags"] == ["\\Draft"] and "unread" not in message  # \\Seen: not unread
        assert message["body_text"] == "Hallo Zoë,\nanbei der Plan.\n\nBis bald\n"
        assert message["headers"]["Message-ID"] == data["header_message_id"]
        raw_data = await mcp.ok("imap_get_message_raw", {"message_id": data["message_id"]})
        raw = (
            raw_data["raw_text"].encode()
            if raw_data["raw_base64"] is None
            else base64.b64decode(raw_data["raw_base64"])
        )
        assert b"Subject: =?utf-8?" in raw and raw.isascii(), "headers and body must be 7-bit (RFC 2047, QP)"
        assert raw.count(b"\n") == raw.count(b"\r\n"), "bare LF in the saved message"
        assert b"\nBcc:" not in raw and b"\nX-" not in raw
        new_draft = data["header_message_id"]

        # A reply: To from Reply-To, Re: subject, threading headers, the original quoted.
        budget = await message_id_of(mcp, "Budget plan")
        data = await mcp.ok(TOOL, {"in_reply_to": budget, "body_text": "Sounds good."})
        assert data["in_reply_to"] == budget
        message = await read(mcp, data["message_id"])
        assert (message["subject"], message["to"]) == ("Re: Budget plan", "Boss <boss@example.com>")
        assert message["headers"]["In-Reply-To"] == "<budget-1@example.com>"
        assert message["headers"]["References"] == "<root-0@example.com> <budget-1@example.com>"
        assert message["body_text"] == (
            "Sounds good.\n\nOn Thu, 14 Mar 2024 09:26:53 +0100, Alice Johnson <alice.johnson@example.com> "
            "wrote:\n> Line one\n> Line two\n>\n> Line four\n"
        )
        reply = data["header_message_id"]

        # One "Re:" for their "RE:", To from From (no Reply-To), an explicit Cc kept; a dry run saves nothing.
        lunch = await message_id_of(mcp, "Lunch")
        args = {"in_reply_to": lunch, "cc": ["dave@example.org"], "body_text": "Yes, noon."}
        preview = await mcp.ok(TOOL, {**args, "dry_run": True})
        assert (preview["saved"], preview["message_id"], preview["located_by"]) == (False, None, None)
        assert preview["draft"]["headers"]["Subject"] == "Re: Lunch"
        assert preview["draft"]["headers"]["To"] == "Carol <carol@example.net>"
        assert preview["draft"]["body_text"].startswith("Yes, noon.\n\nOn ")
        assert preview["untrusted_content"]["fields"] == ["draft.body_text", "draft.headers"]
        assert preview["next_action"]["tool"] == TOOL
        assert preview["next_action"]["arguments"] == {**args, "dry_run": False}
        assert added(before, message_id_listing(server, user)) == {drafts: sorted([new_draft, reply])}
        data = await mcp.ok(TOOL, preview["next_action"]["arguments"])
        message = await read(mcp, data["message_id"])
        assert (message["subject"], message["cc"]) == ("Re: Lunch", "dave@example.org")
        assert message["headers"]["In-Reply-To"] == "<lunch-2@example.net>"
        assert message["headers"]["References"] == "<lunch-2@example.net>"
    assert added(before, message_id_listing(server, user)) == {
        drafts: sorted([new_draft, reply, data["header_message_id"]])
    }


@pytest.fixture
def dovecot_drafts(dovecot: Dovecot, user: str, account: AccountFactory) -> Config:
    dovecot.seed(user, "Drafts", [])
    dovecot.seed(user, "INBOX", [BUDGET])
    return make_config({"default": account(user)}, write_enabled=True)


async def test_header_injection_and_malformed_input_append_nothing(
    dovecot: Dovecot, user: str, dovecot_drafts: Config
) -> None:
    before = message_id_listing(dovecot, user)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"to": ["a@example.com\r\nBcc: spy@evil.example"]}, "to"),
        ({"to": ["a@example.com\nBcc: spy@evil.example"]}, "to"),
        ({"cc": ["ok@example.com", "b@example.com\rX-Injected: 1"]}, "cc"),
        ({"subject": "Hi\r\nBcc: spy@evil.example"}, "subject"),
        ({"subject": "Hi\x00there"}, "subject"),
        ({"subject": "Hi\u2028Bcc: spy@evil.example"}, "subject"),
        ({"subject": "x" * 999}, "subject"),
        ({"to": ["not an address"]}, "to"),
        ({"to": ["a@"]}, "to"),
        ({"to": ["one@example.com, two@example.com"]}, "to"),
        ({"to": ["group: a@example.com;"]}, "to"),
        ({"to": ["zoë@exämple.com"]}, "to"),
        ({"to": [f"u{i}@example.com" for i in range(101)]}, "to"),
        (
            {"to": [f"u{i}@example.com" for i in range(60)], "cc": [f"c{i}@example.com" for i in range(41)]},
            "cc",
        ),
        ({"body_text": "a\x00b"}, "body_text"),
        ({"body_text": "é" * 600_000}, "body_text"),
        ({"in_reply_to": "imap:default:INBOX:notanumber:1"}, "in_reply_to"),
        ({"in_reply_to": "imap:other:INBOX:1:1"}, "in_reply_to"),
        ({"bcc": ["spy@evil.example\r\nX-Injected: 1"]}, "bcc"),  # bcc is an argument now: checked as to
    ]
    async for mcp in open_client(dovecot_drafts):
        for args, parameter in cases:
            envelope = await mcp.fail(TOOL, {"body_text": "hello", **args}, "invalid_input")
            assert envelope["error"]["details"]["parameter"] == parameter, (args, envelope["error"])
        stale = await mcp.fail(TOOL, {"in_reply_to": "imap:default:INBOX:1:1"}, "conflict")
        assert stale["data"]["next_action"]["tool"] == "imap_search_messages"
    assert message_id_listing(dovecot, user) == before


async def test_writes_off_or_no_drafts_folder_saves_nothing(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    """Writes off: permission_denied (dry runs too). No \\Drafts folder and no drafts_mailbox, or a
    drafts_mailbox that does not exist: not_found naming drafts_mailbox. Nothing is appended anywhere."""
    dovecot.seed(user, "INBOX", [BUDGET])
    dovecot.seed(user, "Entwürfe", [])
    before = message_id_listing(dovecot, user)
    draft = {"to": ["a@example.com"], "subject": "s", "body_text": "b"}
    configs = {
        "off": make_config(
            {"default": account(user, write_enabled=False), "other": account(dovecot.new_user())},
            write_enabled=True,
        ),
        "none": make_config({"default": account(user)}, write_enabled=True),
        "missing": make_config({"default": account(user, drafts_mailbox="Drafts")}, write_enabled=True),
    }
    for case, config in configs.items():
        async for mcp in open_client(config):
            if case == "off":
                for args in (draft, {**draft, "dry_run": True}):
                    envelope = await mcp.fail(TOOL, args, "permission_denied")
                    assert envelope["error"]["details"]["setting"] == "write_enabled"
            else:
                envelope = await mcp.fail(TOOL, draft, "not_found")
                assert envelope["error"]["details"]["parameter"] == "drafts_mailbox"
                assert "drafts_mailbox" in envelope["error"]["message"]
    assert message_id_listing(dovecot, user) == before
    # The configured folder, once it exists, is used (the server marks no \Drafts for it).
    config = make_config({"default": account(user, drafts_mailbox="Entwürfe")}, write_enabled=True)
    async for mcp in open_client(config):
        data = await mcp.ok(TOOL, draft)
        assert data["mailbox"] == "Entwürfe"
        assert data["message_id"].startswith("imap:default:Entwürfe:")
    assert added(before, message_id_listing(dovecot, user)) == {"Entwürfe": [data["header_message_id"]]}


# -------------------------------------------------------------------------- a server without UIDPLUS


async def test_without_uidplus_the_draft_is_found_by_its_message_id(dovecot_without_uidplus: Dovecot) -> None:
    server = dovecot_without_uidplus
    user = server.new_user()
    server.seed(user, "Drafts", [plain_message("older draft", "x")])
    before = message_id_listing(server, user)
    settings = account_settings(server, user, drafts_mailbox="Drafts")
    async for mcp in open_client(make_config({"default": settings}, write_enabled=True)):
        data = await mcp.ok(TOOL, {"to": ["a@example.com"], "subject": "found by search", "body_text": "b"})
        assert (data["saved"], data["located_by"]) == (True, "search")
        message = await read(mcp, data["message_id"])
        assert message["subject"] == "found by search"
        assert message["headers"]["Message-ID"] == data["header_message_id"]
    assert added(before, message_id_listing(server, user)) == {"Drafts": [data["header_message_id"]]}


# ------------------------------------------------------------------ a connection lost after the APPEND


async def test_connection_lost_after_append_is_outcome_unknown_never_replayed(
    dovecot: Dovecot, user: str
) -> None:
    """The reset comes when the whole message has reached Dovecot and before its answer: the draft is
    saved once, the tool says outcome_unknown (not saved, not an error to retry blindly) with a
    next_action that finds it, and never sends a second APPEND."""
    dovecot.seed(user, "Drafts", [])
    before = message_id_listing(dovecot, user)
    marker = b"unmistakable end of the draft body"
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        proxy.cut_after_sent(marker)
        settings = account_settings(
            dovecot, user, host="127.0.0.1", port=proxy.port, security="plain", ca_file=None
        )
        app = AppContext.from_config(make_config({"default": settings}, write_enabled=True))
        async for mcp in open_client(app.config, app):
            envelope = await mcp.call(
                TOOL, {"to": ["a@example.com"], "subject": "cut", "body_text": marker.decode()}
            )
            assert envelope["success"], envelope["error"]
            data = envelope["data"]
            assert (data["status"], data["saved"], data["message_id"]) == ("partial", False, None)
            (issue,) = data["issues"]
            assert (issue["code"], issue["retryable"]) == ("outcome_unknown", False)
            assert proxy.cuts == 1
            assert proxy.sent().count(b" APPEND ") == 1, "the APPEND was sent again"
            # The next_action finds the draft the server did save, on a new connection.
            assert data["next_action"]["tool"] == "imap_search_messages"
            found = await mcp.ok("imap_search_messages", data["next_action"]["arguments"])
            assert [m["subject"] for m in found["messages"]] == ["cut"]
            assert proxy.sent().count(b" APPEND ") == 1
    assert added(before, message_id_listing(dovecot, user)) == {"Drafts": [data["header_message_id"]]}
