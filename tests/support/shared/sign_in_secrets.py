"""What tests/integration/sign_in/test_sign_in_secrets.py shares with other test modules."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.shared.sign_in_tokens import keychain as keychain


def files_under(*roots: Path, skip: Path) -> list[Path]:
    """Every regular file below ``roots``, except below ``skip`` (the keychain's own)."""
    found = []
    for root in roots:
        for directory, _, names in os.walk(root):
            if Path(directory).is_relative_to(skip):
                continue
            found += [Path(directory) / name for name in names if (Path(directory) / name).is_file()]
    return found


def holding(files: list[Path], secrets: dict[str, str]) -> list[str]:
    """``"<file>: <what>"`` for every secret (named by ``what``) found in a file."""
    found = []
    for path in files:
        data = path.read_bytes()
        found += [f"{path}: {what}" for what, secret in secrets.items() if secret.encode() in data]
    return found
