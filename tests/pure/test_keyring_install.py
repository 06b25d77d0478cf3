"""The keyring extra in a locked install: requirements-keyring.lock is the runtime lock plus the extra at
the same versions, and the hint of a missing keyring library names this virtualenv's pip and that lock."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from mail_imap_mcp.config.keychain import KeychainUnavailable, read_password

ROOT = Path(__file__).resolve().parents[2]


def pins(lock: str) -> dict[str, str]:
    text = (ROOT / lock).read_text(encoding="utf-8")
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.MULTILINE))


def test_the_keyring_lock_is_the_runtime_lock_plus_the_keyring_extra() -> None:
    runtime, with_keyring = pins("requirements-runtime.lock"), pins("requirements-keyring.lock")
    assert {name: with_keyring.get(name) for name in runtime} == runtime
    assert "keyring" in with_keyring and "keyring" not in runtime
    assert "--hash=sha256:" in (ROOT / "requirements-keyring.lock").read_text(encoding="utf-8")


def test_without_keyring_the_hint_names_this_virtualenvs_pip_and_the_locked_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # import keyring raises ImportError
    with pytest.raises(KeychainUnavailable) as raised:
        read_password("mail-imap-mcp", "someone", "password_keyring")
    hint = str(raised.value)
    assert hint.startswith("the keyring library is not installed: ")
    assert f"{Path(sys.executable).parent}{os.sep}" in hint
    assert "install --require-hashes -r mail-imap-mcp/requirements-keyring.lock" in hint
