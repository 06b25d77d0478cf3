"""What tests/integration/sign_in/test_login_command.py shares with other test modules."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.accounts import config_toml
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import (
    OidcProvider,
    browser_signing_in_as,
)
from tests.support.servers.secret_service import SecretService
from tests.support.shared.sign_in_tokens import (
    ACCOUNT,
    SignInEntries,
    sign_in_account,
)
from tests.support.shared.sign_in_tokens import keychain as keychain

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


@dataclass
class Terminal:
    """A user at a terminal with ``user``'s browser and a keychain, and an account to sign in to."""

    directory: Path
    secret_service: SecretService
    keychain: SignInEntries
    user: str
    settings: dict[str, Any]

    def command(self, *args: str, **browser: str) -> tuple[list[str], dict[str, str]]:
        """``mail-imap-mcp <args> --config <the settings>`` and its environment."""
        config = self.directory / "config.toml"
        config.write_text(config_toml({ACCOUNT: self.settings}))
        env = {
            "PATH": os.environ["PATH"],
            **self.secret_service.environment(),
            **browser_signing_in_as(self.user),
            "OIDC_TEST_SEEN": str(self.directory / "authorization-url.txt"),
            **browser,
        }
        return [SERVER, *args, "--config", str(config)], env

    def authorization_url(self) -> str:
        """The authorization URL the browser was led to last (the listener's launch address forwards
        to it: it is on no command line and not printed)."""
        return (self.directory / "authorization-url.txt").read_text()

    def run(self, *args: str, **browser: str) -> subprocess.CompletedProcess[str]:
        argv, env = self.command(*args, **browser)
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=patient(120))


@pytest.fixture
def terminal(
    tmp_path: Path,
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    secret_service: SecretService,
    keychain: SignInEntries,
) -> Terminal:
    user = oidc_dovecot.new_user()
    return Terminal(tmp_path, secret_service, keychain, user, sign_in_account(oidc_dovecot, user, oidc))
