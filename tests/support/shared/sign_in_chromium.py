"""What tests/integration/sign_in/test_sign_in_chromium.py shares with other test modules."""

from __future__ import annotations

from tests.support.clients import chromium
from tests.support.shared.login_command import terminal as terminal
from tests.support.shared.sign_in_tokens import keychain as keychain

CHROMIUM_BROWSER = chromium.relayed_browser()
