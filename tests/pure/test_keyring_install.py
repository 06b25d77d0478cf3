"""keyring is a runtime dependency: requirements-runtime.lock (what the README's install and the bundle's
constraints take) holds it with each platform's backend under that platform's marker, and the hint of a
missing keyring library names this virtualenv's pip and that lock."""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

import pytest

from mail_imap_mcp.credentials.keychain import KeychainUnavailable, read_password

ROOT = Path(__file__).resolve().parents[2]


def markers(lock: str) -> dict[str, str]:
    """Each pinned package of ``lock`` and its environment marker ("" for every platform)."""
    text = (ROOT / lock).read_text(encoding="utf-8")
    found = re.findall(r"^([A-Za-z0-9_.-]+)==[^\s;]+(?: ; ([^\\\n]+?))? \\$", text, re.MULTILINE)
    return {name.lower(): marker for name, marker in found}


def test_the_runtime_lock_holds_keyring_and_every_platforms_backend() -> None:
    pinned = markers("requirements-runtime.lock")
    assert pinned["keyring"] == ""
    assert pinned["pywin32-ctypes"] == "sys_platform == 'win32'"  # Windows Credential Manager
    assert pinned["secretstorage"] == "sys_platform == 'linux'"  # the Secret Service
    assert pinned["jeepney"] == "sys_platform == 'linux'"
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "keyring>=25" in dependencies["dependencies"]
    assert "--hash=sha256:" in (ROOT / "requirements-runtime.lock").read_text(encoding="utf-8")


def test_without_keyring_the_hint_names_this_virtualenvs_pip_and_the_runtime_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # import keyring raises ImportError
    with pytest.raises(KeychainUnavailable) as raised:
        read_password("mail-imap-mcp", "someone", "password_keyring")
    hint = str(raised.value)
    assert hint.startswith("the keyring library is not installed: it is a dependency of mail-imap-mcp")
    assert f"{Path(sys.executable).parent}{os.sep}" in hint
    assert "install --require-hashes -r mail-imap-mcp/requirements-runtime.lock" in hint
