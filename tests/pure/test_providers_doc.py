"""docs/providers.md: every provider's config block loads, with the settings its table row gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mail_imap_mcp.config import AuthMethod, Security, load_config
from mail_imap_mcp.imap.providers import GENERIC_LOGIN_HINT, login_hint, oauth2_scope_hint

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"

EXPECTED = {
    "gmail": ("imap.gmail.com", 993, Security.TLS, "app password"),
    "gmail-oauth2": ("imap.gmail.com", 993, Security.TLS, "OAuth2"),
    "gmail-sign-in": ("imap.gmail.com", 993, Security.TLS, "OAuth2"),
    "icloud": ("imap.mail.me.com", 993, Security.TLS, "app-specific password"),
    "fastmail": ("imap.fastmail.com", 993, Security.TLS, "app password"),
    "yahoo": ("imap.mail.yahoo.com", 993, Security.TLS, "app password"),
    "microsoft": ("outlook.office365.com", 993, Security.TLS, "OAuth2"),
    "microsoft-sign-in": ("outlook.office365.com", 993, Security.TLS, "OAuth2"),
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


@pytest.mark.parametrize(
    ("provider", "scope"),
    [
        ("gmail-oauth2", "https://mail.google.com/"),
        ("microsoft", "https://outlook.office.com/IMAP.AccessAsUser.All"),
    ],
)
def test_oauth2_blocks_use_a_token_helper_and_the_doc_names_their_scopes(
    provider: str, scope: str, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(provider_blocks()[provider])
    (account,) = load_config(path, env={}).accounts.values()
    assert account.auth is AuthMethod.XOAUTH2
    assert account.oauth2_token_command and account.password_source == "oauth2_token_command"
    assert scope in (oauth2_scope_hint(account.host) or "")
    assert scope in DOC.read_text()


@pytest.mark.parametrize(
    ("provider", "preset"), [("gmail-sign-in", "google"), ("microsoft-sign-in", "microsoft")]
)
def test_gmail_and_microsoft_lead_with_the_built_in_sign_in(
    provider: str, preset: str, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(provider_blocks()[provider])
    (account,) = load_config(path, env={}).accounts.values()
    assert account.auth is AuthMethod.XOAUTH2 and account.oauth2_token_command is None
    assert account.oauth2_provider == preset and account.oauth2_client_id
    text = DOC.read_text()
    section = text[text.index("## Gmail" if preset == "google" else "## Microsoft 365") :]
    first_block = re.search(r"<!-- provider: ([\w-]+) -->", section)
    assert first_block is not None and first_block.group(1) == provider  # the sign-in comes first
