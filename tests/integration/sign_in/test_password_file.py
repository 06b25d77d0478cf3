"""password_file through a real MCP client against Dovecot: a file of the user's alone logs in; one open
to others is refused before any login, and every refusal names password_file, the setting the user set."""

from __future__ import annotations

from pathlib import Path

import pytest

from mail_imap_mcp.config import load_config
from tests.support.accounts import account_settings, config_toml
from tests.support.clients.in_process import open_client
from tests.support.servers.dovecot import Dovecot


def password_file(tmp_path: Path, name: str, password: str, mode: int) -> Path:
    path = tmp_path / f"{name}.password"
    path.write_text(password + "\n")
    path.chmod(mode)
    return path


@pytest.mark.anyio
async def test_regression_a_password_file_refusal_names_password_file_not_password(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    """auth_failed named the setting "password" for a password in a file or the keychain."""
    open_to_others = password_file(tmp_path, "open", dovecot.password, 0o644)
    wrong = password_file(tmp_path, "wrong", "not-the-password", 0o600)
    right = password_file(tmp_path, "right", dovecot.password, 0o600)
    accounts = {
        name: account_settings(dovecot, user, password_env=None, password_file=path)
        for name, path in (("open", open_to_others), ("wrong", wrong), ("right", right))
    }
    path = tmp_path / "config.toml"
    path.write_text(config_toml(accounts))
    async for mcp in open_client(load_config(path, env={})):
        refused = (await mcp.fail("imap_list_mailboxes", {"account_id": "open"}, "auth_failed"))["error"]
        assert refused["details"]["setting"] == "password_file in [accounts.open]"
        assert f"{open_to_others} must be yours alone" in refused["message"]
        assert f"chmod 600 {open_to_others}" in refused["message"]
        assert dovecot.password not in str(refused)
        login = (await mcp.fail("imap_list_mailboxes", {"account_id": "wrong"}, "auth_failed"))["error"]
        assert login["details"]["setting"] == "password_file in [accounts.wrong]"
        assert "password_file in [accounts.wrong]" in login["message"]
        listed = await mcp.ok("imap_list_mailboxes", {"account_id": "right"})
        assert "INBOX" in str(listed)
