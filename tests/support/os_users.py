"""Other OS users of this machine, for the tests of what another local user can do (issue 56 item 1): made
with ``useradd`` by a test run as root, removed with ``userdel`` after it. Where that cannot be done (not
root, no ``useradd``), the test is skipped, saying why.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: The system's Python (a user of no venv can run it): the other user's programs use the standard library.
PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class OsUser:
    name: str
    uid: int
    gid: int

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run as this user, with no supplementary group of the caller's."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *argv]

    def popen(
        self, argv: Sequence[str], extra: dict[str, str] | None = None, **options: object
    ) -> subprocess.Popen[str]:
        """``argv`` started as this user, in an environment of its own (``extra`` added)."""
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8", **(extra or {})}
        return subprocess.Popen(self.command(argv), env=env, text=True, **options)  # type: ignore[call-overload,no-any-return]


def why_no_os_users() -> str | None:
    """Why this run cannot make OS users, or None when it can."""
    if sys.platform != "linux":
        return f"another OS user is made on Linux only (this is {sys.platform})"
    if os.geteuid() != 0:
        return "making another OS user (useradd) needs root; this run is not root"
    missing = [tool for tool in ("useradd", "userdel", "setpriv") if shutil.which(tool) is None]
    if missing or not Path(PYTHON).is_file():
        return f"{', '.join(missing) or PYTHON} not installed"
    return None


@contextmanager
def os_user(prefix: str = "mimt") -> Iterator[OsUser]:
    """A new unprivileged OS user (no home, no login shell), removed on exit."""
    name = f"{prefix}{secrets.token_hex(4)}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
        check=True,
        capture_output=True,
    )
    try:
        ids = subprocess.run(["id", "-u", name], check=True, capture_output=True, text=True).stdout
        gid = subprocess.run(["id", "-g", name], check=True, capture_output=True, text=True).stdout
        yield OsUser(name, int(ids), int(gid))
    finally:
        subprocess.run(["userdel", name], capture_output=True)
