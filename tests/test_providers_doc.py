"""docs/providers.md: every provider's config block loads, with the settings its table row gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mail_imap_mcp.config import Security, load_config
from mail_imap_mcp.imap.providers import GENERIC_LOGIN_HINT, login_hint

DOC = Path(__file__).resolve().parent.parent / "docs" / "providers.md"

EXPECTED = {
    "gmail": ("imap.gmail.com", 993, Security.TLS, "app password"),
    "icloud": ("imap.mail.me.com", 993, Security.TLS, "app-specific password"),
    "fastmail": ("imap.fastmail.com", 993, Security.TLS, "app password"),
    "yahoo": ("imap.mail.yahoo.com", 993, Security.TLS, "app password"),
    "microsoft": ("outlook.office365.com", 993, Security.TLS, "OAuth2"),
    "proton-bridge": ("127.0.0.1", 1143, Security.STARTTLS, None),
    "own-server": ("mail.example.org", 143, Security.STARTTLS, None),
}


def provider_blocks() -> dict[str, str]:
    found = re.findall(r"<!-- provider: ([\w-]+) -->\n```toml\n(.*?)```", DOC.read_text(), re.DOTALL)
    return dict(found)


def test_every_provider_section_has_a_config_block() -> None:
    assert sorted(provider_blocks()) == sorted(EXPECTED)


@pytest.mark.parametrize("provider", sorted(EXPECTED))
def test_provider_block_loads_with_the_documented_settings(provider: str, tmp_path: Path) -> None:
    text = provider_blocks()[provider]
    cert = tmp_path / "cert.pem"
    cert.write_text("placeholder: only its existence is checked when loading\n")
    text = re.sub(r'ca_file = ".*"', f'ca_file = "{cert}"', text)
    path = tmp_path / "config.toml"
    path.write_text(text)
    (account,) = load_config(path, env={}).accounts.values()
    host, port, security, hint = EXPECTED[provider]
    assert (account.host, account.effective_port, account.security) == (host, port, security)
    if hint is None:
        assert login_hint(account.host) == GENERIC_LOGIN_HINT
    else:
        assert hint in login_hint(account.host)
