"""Sender authentication and warnings in imap_get_message on the server matrix: results come from the
topmost Authentication-Results header (a forged lower one is ignored) or from the account's
authserv_id; warnings fire on a lookalike sender and not on ordinary mail; both are marked untrusted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.clients import AccountFactory, make_config, open_client
from tests.support.envelope_client import EnvelopeClient
from tests.support.mailgen import plain_message
from tests.support.matrix import MatrixServer

pytestmark = pytest.mark.anyio


def with_results(message: bytes, *values: str) -> bytes:
    """``message`` with Authentication-Results headers on top, in this order (the first is topmost)."""
    return b"".join(f"Authentication-Results: {v}\r\n".encode() for v in values) + message


PHISH = with_results(
    plain_message(
        "Your account",
        "Verify now.\n",
        from_='"support@paypal.com" <help@xn--pple-43d.com>',
        headers={"Reply-To": "desk@collector.example"},
    ),
    "mx.example.org; spf=softfail smtp.mailfrom=xn--pple-43d.com; dkim=none; dmarc=fail header.from=xn--pple-43d.com",
    "mx.example.org; spf=pass; dkim=pass; dmarc=pass",  # written by the sender: ignored
)
ORDINARY = with_results(
    plain_message(
        "Lunch", "Noon?\n", from_="Carol <carol@example.net>", headers={"Reply-To": "carol@mail.example.net"}
    ),
    "relay.example.net; spf=none",
    "mx.example.org; spf=pass smtp.mailfrom=example.net; dkim=pass header.d=example.net; dmarc=pass",
)
PLAIN = plain_message("No results", "Hi\n", from_="Dan <dan@example.net>")


async def message(mcp: EnvelopeClient, subject: str, **args: Any) -> dict[str, Any]:
    found = await mcp.ok("imap_search_messages", {"subject": subject})
    return await mcp.ok("imap_get_message", {"message_id": found["messages"][0]["message_id"], **args})


async def test_authentication_and_sender_warnings(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    imap_server.seed(user, "INBOX", [PHISH, ORDINARY, PLAIN])
    async for mcp in open_client(make_config({"default": account(user)})):
        data = await message(mcp, "Your account")
        read = data["message"]
        assert read["authentication"] == {
            "authserv_id": "mx.example.org",
            "spf": "softfail",
            "dkim": "none",
            "dmarc": "fail",
        }
        assert [w["code"] for w in read["sender_warnings"]] == [
            "display_name_is_other_address",
            "dmarc_fail",
            "punycode_domain",
            "mixed_script_domain",
            "reply_to_other_domain",
        ]
        assert (
            "authentication" in data["untrusted_content"] and "sender_warnings" in data["untrusted_content"]
        )
        full = await message(mcp, "Your account", fields="full")
        assert full["message"]["authentication"]["dmarc"] == "fail"
        assert {"message.authentication", "message.sender_warnings"} <= set(
            full["untrusted_content"]["fields"]
        )

        read = (await message(mcp, "Lunch"))["message"]
        assert read["authentication"] == {"authserv_id": "relay.example.net", "spf": "none"}
        assert "sender_warnings" not in read
        read = (await message(mcp, "No results"))["message"]
        assert "authentication" not in read and "sender_warnings" not in read
        full = (await message(mcp, "No results", fields="full"))["message"]
        assert "authentication" not in full and "sender_warnings" not in full

    # The account's receiving server is named: its header counts, below a relay's.
    async for mcp in open_client(make_config({"default": account(user, authserv_id="MX.example.org")})):
        read = (await message(mcp, "Lunch"))["message"]
        assert read["authentication"] == {
            "authserv_id": "mx.example.org",
            "spf": "pass",
            "dkim": "pass",
            "dmarc": "pass",
        }
