"""imap_list_accounts and imap_list_mailboxes end to end: MCP client -> server -> real IMAP server.

Tests that talk IMAP run on every server of the matrix (``imap_server``: Dovecot, Cyrus in both
namespaces, Courier). Tests that never reach a server (argument validation, unknown account, a closed
port, imap_list_accounts) run once, on the default Dovecot fixtures.
"""

from __future__ import annotations

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import ON_DOVECOT, MatrixServer

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
        "addresses": [],  # the login is not an address and none are configured
        "index": "off",
        "rules": "off (rules_enabled)",
        "usable": True,
        "problems": [],
    }
    assert envelope["data"]["next_action"]["tool"] == "imap_list_mailboxes"
    assert dovecot.password not in str(envelope)


async def test_list_mailboxes_inbox_first_with_decoded_non_ascii_names_and_counts(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    server = imap_server
    server.seed(
        user, "INBOX", [plain_message(subject=f"m{i}", body="hi") for i in range(3)], flags=["\\Seen", "", ""]
    )
    entwuerfe, archive, projects = (server.mailbox_name(n) for n in ("Entwürfe", "Archive", "Projects: Q1"))
    archive_2024 = server.mailbox_name("Archive", "2024")
    server.seed(user, entwuerfe, [plain_message(subject="draft", body="x")])
    server.seed(user, archive_2024, [])
    server.seed(user, projects, [])
    data = await mcp.ok("imap_list_mailboxes", {"include_counts": True})
    names = [m["name"] for m in data["mailboxes"]]
    assert names[0] == "INBOX"
    assert {entwuerfe, archive_2024, projects} <= set(names)
    by_name = {m["name"]: m for m in data["mailboxes"]}
    assert {m["delimiter"] for m in data["mailboxes"]} == {server.separator}
    inbox = data["mailboxes"][0]
    assert (inbox["messages"], inbox["unseen"]) == (3, 2)
    assert inbox["uidvalidity"] and inbox["uidnext"] == 4
    assert by_name[entwuerfe]["messages"] == 1
    assert (by_name[archive_2024]["messages"], by_name[projects]["messages"]) == (0, 0)
    # The implied parent of Archive/2024: \Noselect without counts on Dovecot and Courier; Cyrus makes
    # it a real (empty, selectable) mailbox, so it has counts there.
    parent = by_name[archive]
    if server.kind == "cyrus":
        assert "\\noselect" not in {a.lower() for a in parent["attributes"]}
        assert (parent["messages"], parent["unseen"]) == (0, 0)
    else:
        assert "\\noselect" in {a.lower() for a in parent["attributes"]}
        assert (parent["messages"], parent["uidvalidity"]) == (None, None)
    assert data["status"] == "ok" and data["issues"] == []
    assert data["next_action"]["arguments"] == {"account_id": "default", "mailbox": "INBOX"}


@ON_DOVECOT
async def test_list_mailboxes_without_counts_omits_them(
    imap_server: MatrixServer, mcp: EnvelopeClient
) -> None:
    # Dovecot alone: leaving the counts out is the presentation's, the same whatever server lists; the counts
    # on every server: test_list_mailboxes_inbox_first_with_decoded_non_ascii_names_and_counts,
    # mail_contract_cases.py::a_listing_with_counts_says_them.
    data = await mcp.ok("imap_list_mailboxes")
    assert data["mailboxes"][0]["name"] == "INBOX"
    assert data["mailboxes"][0]["messages"] is None


async def test_special_use_roles_are_reported(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    server = imap_server
    for name in ("Sent", "Trash", "Notes"):
        server.seed(user, server.mailbox_name(name), [])
    data = await mcp.ok("imap_list_mailboxes")
    roles = {m["name"]: m["special_use"] for m in data["mailboxes"]}
    expected: dict[str, str | None] = {"INBOX": None, server.mailbox_name("Notes"): None}
    if server.kind == "dovecot":
        # The harness's Dovecot declares roles for Drafts, Sent, Trash, Junk and Archive (special_use in
        # its namespace config); only the folders that exist are listed.
        expected |= {"Sent": "\\Sent", "Trash": "\\Trash"}
    elif server.kind == "cyrus":
        # Cyrus creates Drafts, Sent, Trash and Junk at the first login and reports their roles in lower
        # case (\\sent): the tool gives the RFC 6154 spelling.
        expected |= {server.mailbox_name(n): f"\\{n}" for n in ("Drafts", "Sent", "Trash", "Junk")}
    else:
        # Courier has no SPECIAL-USE: no role is reported, whatever a folder is called.
        expected |= {server.mailbox_name("Sent"): None, server.mailbox_name("Trash"): None}
    assert roles == expected


async def test_mailbox_list_is_bounded_with_a_warning(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    # Dovecot alone: the bound is the service's, the same whatever server lists; every server's listing:
    # test_list_mailboxes_inbox_first_with_decoded_non_ascii_names_and_counts,
    # test_special_use_roles_are_reported.
    for i in range(5):
        dovecot.seed(user, f"F{i}", [])
    total = 6  # INBOX and F0..F4
    config = make_config({"default": account(user)}, max_mailboxes=3)
    async for mcp in open_client(config):
        envelope = await mcp.call("imap_list_mailboxes")
        assert envelope["data"]["returned"] == 3
        assert envelope["data"]["total"] == total
        assert envelope["data"]["mailboxes"][0]["name"] == "INBOX"
        assert f"cut to 3 of {total}" in envelope["meta"]["warnings"][0]


async def test_unknown_account_is_not_found(mcp: EnvelopeClient) -> None:
    envelope = await mcp.fail("imap_list_mailboxes", {"account_id": "nope"}, "not_found")
    assert envelope["error"]["details"]["parameter"] == "account_id"
    assert envelope["data"]["status"] == "failed"


async def test_wrong_password_is_auth_failed_and_not_retryable(
    imap_server: MatrixServer, user: str, account: AccountFactory, monkeypatch: pytest.MonkeyPatch
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


async def test_untrusted_certificate_is_refused_with_a_hint(
    imap_server: MatrixServer, account: AccountFactory, user: str
) -> None:
    config = make_config({"default": account(user, ca_file=None)})
    async for mcp in open_client(config):
        envelope = await mcp.fail("imap_list_mailboxes", {}, "unavailable")
        assert "ca_file" in envelope["error"]["message"]
        assert envelope["error"]["retryable"] is False


async def test_starttls_account_works(imap_server: MatrixServer, user: str, account: AccountFactory) -> None:
    config = make_config({"default": account(user, security="starttls", port=imap_server.plain_port)})
    async for mcp in open_client(config):
        data = await mcp.ok("imap_list_mailboxes")
        assert data["mailboxes"][0]["name"] == "INBOX"


async def test_plain_account_on_loopback_works(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    config = make_config(
        {"default": account(user, security="plain", port=imap_server.plain_port, ca_file=None)}
    )
    async for mcp in open_client(config):
        await mcp.ok("imap_list_mailboxes")


async def test_env_only_account_works_end_to_end(
    imap_server: MatrixServer, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mail_imap_mcp.config import load_config
    from tests.support.accounts import env_account

    env = {**env_account(imap_server, user, "WORK"), "HOME": "/nonexistent"}
    config = load_config(None, env)
    monkeypatch.setenv("MAIL_IMAP_WORK_PASS", imap_server.password)
    async for mcp in open_client(config):
        accounts = (await mcp.ok("imap_list_accounts"))["accounts"]
        assert [a["account_id"] for a in accounts] == ["work"]
        # "default" resolves to the only account.
        data = await mcp.ok("imap_list_mailboxes")
        assert data["account_id"] == "work"


async def test_connection_is_reused_across_calls(imap_server: MatrixServer, config: Config) -> None:
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        for _ in range(3):
            await mcp.ok("imap_list_mailboxes")
        assert app.pool.get("default").logins == 1


async def test_dropped_connection_is_survived_by_the_next_call(
    dovecot: Dovecot, user: str, config: Config
) -> None:
    # Dovecot only: the session is dropped server-side with `doveadm kick`, which the Cyrus and Courier
    # harnesses have no equivalent of.
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        await mcp.ok("imap_list_mailboxes")
        dovecot.kick(user)
        data = await mcp.ok("imap_list_mailboxes")
        assert data["mailboxes"][0]["name"] == "INBOX"
        assert app.pool.get("default").logins == 2
