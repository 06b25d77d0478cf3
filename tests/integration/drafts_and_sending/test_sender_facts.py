"""Sender authentication and warnings in imap_get_message on the server matrix: results come only from the
Authentication-Results header of the account's authserv_id (a forged one from anyone else is never
reported, and its claimed pass is a warning); warnings fire on a lookalike sender and not on ordinary
mail; both are marked untrusted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import INBOX_ONLY, MatrixServer

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


FORGED_GOOGLE = with_results(
    plain_message("Invoice", "Pay now.\n", from_="Bank <bank@bank.example>"),
    "mx.google.com; spf=pass smtp.mailfrom=bank.example; dkim=pass header.d=bank.example; dmarc=pass",
)

DISGUISED = plain_message(
    "Refund",
    "Click.\n",
    from_="service\uff20paypal.com <help@evil.example>, Bank <bank@bank.example>",
    headers={"Sender": "bulk@mailer.example"},
)


@INBOX_ONLY
async def test_authentication_and_sender_warnings(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    imap_server.seed(user, "INBOX", [PHISH, ORDINARY, PLAIN])
    async for mcp in open_client(make_config({"default": account(user, authserv_id="MX.example.org")})):
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
        # The account's receiving server counts, below a relay's.
        read = (await message(mcp, "Lunch"))["message"]
        assert read["authentication"] == {
            "authserv_id": "mx.example.org",
            "spf": "pass",
            "dkim": "pass",
            "dmarc": "pass",
        }
        assert "sender_warnings" not in read
        read = (await message(mcp, "No results"))["message"]
        assert "authentication" not in read and "sender_warnings" not in read
        full = (await message(mcp, "No results", fields="full"))["message"]
        assert "authentication" not in full and "sender_warnings" not in full


async def test_regression_m1_a_pass_the_sender_wrote_is_never_reported_as_authentication(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    # Issue 33 M1: a server that adds no Authentication-Results (here: mail APPENDed to Dovecot) left the
    # sender's own header topmost, and with no authserv_id configured it came back as a verified pass.
    dovecot.seed(user, "INBOX", [FORGED_GOOGLE, ORDINARY, DISGUISED])
    async for mcp in open_client(make_config({"default": account(user)})):
        read = (await message(mcp, "Invoice"))["message"]
        assert "authentication" not in read
        (warning,) = read["sender_warnings"]
        assert warning["code"] == "unverified_authentication"
        assert "mx.google.com claims spf=pass, dkim=pass, dmarc=pass" in warning["message"]
        read = (await message(mcp, "Lunch"))["message"]
        assert "authentication" not in read
        assert [w["code"] for w in read["sender_warnings"]] == ["unverified_authentication"]
        # Issue 33 L4, end to end: the Sender header is read, display names are NFKC-folded.
        read = (await message(mcp, "Refund"))["message"]
        assert [w["code"] for w in read["sender_warnings"]] == [
            "display_name_is_other_address",
            "multiple_from_addresses",
            "sender_differs_from_from",
        ]
