"""imap_list_accounts and imap_list_mailboxes end to end: MCP client -> server -> real Dovecot."""

from __future__ import annotations

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.tools.context import AppContext
from tests.conftest import AccountFactory, make_config, open_client
from tests.support.dovecot import Dovecot
from tests.support.envelope_client import EnvelopeClient
from tests.support.mailgen import plain_message

pytestmark = pytest.mark.anyio


async def test_list_accounts_shows_settings_but_never_the_password(
    mcp: EnvelopeClient, dovecot: Dovecot, user: str
) -> None:
    envelope = await mcp.call("imap_list_accounts")
    assert envelope["summary"] == "1 account(s) configured"
    (acct,) = envelope["data"]["accounts"]
    assert acct == {
        "account_id": "default",
        "host": dovecot.host,
        "port": dovecot.tls_port,
        "security": "tls",
        "secure": True,
        "username": user,
    }
    assert envelope["data"]["next_action"]["tool"] == "imap_list_mailboxes"
    assert dovecot.password not in str(envelope)


async def test_list_mailboxes_inbox_first_with_decoded_non_ascii_names_and_counts(
    dovecot: Dovecot, user: str, mcp: EnvelopeClient
) -> None:
    dovecot.seed(
        user, "INBOX", [plain_message(subject=f"m{i}", body="hi") for i in range(3)], flags=["\\Seen", "", ""]
    )
    dovecot.seed(user, "Entwürfe", [plain_message(subject="draft", body="x")])
    dovecot.seed(user, "Archive/2024", [])
    dovecot.seed(user, "Projects: Q1", [])
    data = await mcp.ok("imap_list_mailboxes", {"include_counts": True})
    names = [m["name"] for m in data["mailboxes"]]
    assert names[0] == "INBOX"
    assert {"Entwürfe", "Archive/2024", "Projects: Q1"} <= set(names)
    inbox = data["mailboxes"][0]
    assert (inbox["messages"], inbox["unseen"]) == (3, 2)
    assert inbox["uidvalidity"] and inbox["uidnext"] == 4
    drafts = next(m for m in data["mailboxes"] if m["name"] == "Entwürfe")
    assert drafts["messages"] == 1
    assert data["status"] == "ok" and data["issues"] == []
    assert data["next_action"]["arguments"] == {"account_id": "default", "mailbox": "INBOX"}


async def test_list_mailboxes_without_counts_omits_them(mcp: EnvelopeClient) -> None:
    data = await mcp.ok("imap_list_mailboxes")
    assert data["mailboxes"][0]["name"] == "INBOX"
    assert data["mailboxes"][0]["messages"] is None


async def test_special_use_roles_are_reported(dovecot: Dovecot, account: AccountFactory) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "Sent", [])
    dovecot.seed(user, "Trash", [])
    config = make_config({"default": account(user)})
    async for mcp in open_client(config):
        data = await mcp.ok("imap_list_mailboxes")
        roles = {m["name"]: m["special_use"] for m in data["mailboxes"]}
        # The harness's Dovecot declares these roles (special_use in its namespace config).
        assert roles["Sent"] == "\\Sent"
        assert roles["Trash"] == "\\Trash"
        assert roles["INBOX"] is None


async def test_mailbox_list_is_bounded_with_a_warning(dovecot: Dovecot, account: AccountFactory) -> None:
    user = dovecot.new_user()
    for i in range(5):
        dovecot.seed(user, f"F{i}", [])
    config = make_config({"default": account(user)}, max_mailboxes=3)
    async for mcp in open_client(config):
        envelope = await mcp.call("imap_list_mailboxes")
        assert envelope["data"]["returned"] == 3
        assert envelope["data"]["total"] == 6
        assert "cut to 3 of 6" in envelope["meta"]["warnings"][0]


async def test_unknown_account_is_not_found(mcp: EnvelopeClient) -> None:
    envelope = await mcp.fail("imap_list_mailboxes", {"account_id": "nope"}, "not_found")
    assert envelope["error"]["details"]["parameter"] == "account_id"
    assert envelope["data"]["status"] == "failed"


async def test_wrong_password_is_auth_failed_and_not_retryable(
    dovecot: Dovecot, user: str, account: AccountFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WRONG_PW", "not-the-password")
    config = make_config({"default": account(user, password_env="WRONG_PW")})
    async for mcp in open_client(config):
        envelope = await mcp.fail("imap_list_mailboxes", {}, "auth_failed")
        assert envelope["error"]["retryable"] is False
        assert "not-the-password" not in str(envelope)


async def test_server_down_is_unavailable_and_retryable(account: AccountFactory, user: str) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    config = make_config({"default": account(user, port=closed_port)})
    async for mcp in open_client(config):
        envelope = await mcp.fail("imap_list_mailboxes", {}, "unavailable")
        assert envelope["error"]["retryable"] is True


async def test_untrusted_certificate_is_refused_with_a_hint(account: AccountFactory, user: str) -> None:
    config = make_config({"default": account(user, ca_file=None)})
    async for mcp in open_client(config):
        envelope = await mcp.fail("imap_list_mailboxes", {}, "unavailable")
        assert "ca_file" in envelope["error"]["message"]
        assert envelope["error"]["retryable"] is False


async def test_starttls_account_works(dovecot: Dovecot, user: str, account: AccountFactory) -> None:
    config = make_config({"default": account(user, security="starttls", port=dovecot.plain_port)})
    async for mcp in open_client(config):
        data = await mcp.ok("imap_list_mailboxes")
        assert data["mailboxes"][0]["name"] == "INBOX"


async def test_plain_account_on_loopback_works(dovecot: Dovecot, user: str, account: AccountFactory) -> None:
    config = make_config({"default": account(user, security="plain", port=dovecot.plain_port, ca_file=None)})
    async for mcp in open_client(config):
        await mcp.ok("imap_list_mailboxes")


async def test_env_only_account_works_end_to_end(
    dovecot: Dovecot, user: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from mail_imap_mcp.config import load_config

    env = {
        "MAIL_IMAP_WORK_HOST": dovecot.host,
        "MAIL_IMAP_WORK_PORT": str(dovecot.tls_port),
        "MAIL_IMAP_WORK_USER": user,
        "MAIL_IMAP_WORK_PASS": dovecot.password,
        "MAIL_IMAP_WORK_SECURE": "true",
        "MAIL_IMAP_WORK_CA_FILE": str(dovecot.ca_file),
        "HOME": "/nonexistent",
    }
    config = load_config(None, env)
    monkeypatch.setenv("MAIL_IMAP_WORK_PASS", dovecot.password)
    async for mcp in open_client(config):
        accounts = (await mcp.ok("imap_list_accounts"))["accounts"]
        assert [a["account_id"] for a in accounts] == ["work"]
        # "default" resolves to the only account.
        data = await mcp.ok("imap_list_mailboxes")
        assert data["account_id"] == "work"


async def test_connection_is_reused_across_calls(config: Config) -> None:
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        for _ in range(3):
            await mcp.ok("imap_list_mailboxes")
        assert app.pool.get("default").logins == 1


async def test_dropped_connection_is_survived_by_the_next_call(
    dovecot: Dovecot, user: str, config: Config
) -> None:
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        await mcp.ok("imap_list_mailboxes")
        dovecot.kick(user)
        data = await mcp.ok("imap_list_mailboxes")
        assert data["mailboxes"][0]["name"] == "INBOX"
        assert app.pool.get("default").logins == 2


async def test_invalid_arguments_become_invalid_input_envelopes(mcp: EnvelopeClient) -> None:
    wrong_type = await mcp.fail("imap_list_mailboxes", {"include_counts": "maybe"}, "invalid_input")
    assert wrong_type["error"]["details"]["parameter"] == "include_counts"
    assert "boolean" in wrong_type["error"]["message"]
    unknown = await mcp.fail("imap_list_mailboxes", {"acount_id": "x"}, "invalid_input")
    assert unknown["error"]["details"]["parameter"] == "acount_id"
    assert "account_id" in unknown["error"]["message"]
    bad_id = await mcp.fail("imap_list_mailboxes", {"account_id": "a b"}, "invalid_input")
    assert "pattern" in bad_id["error"]["message"] or "matching" in bad_id["error"]["message"]
