"""What tests/integration/setup/test_setup.py shares with other test modules."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.patience import NotYet, eventually, patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.secret_service import SecretService

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


NO_KEYCHAIN = "keyring.backends.fail.Keyring"


SENDING_QUESTION = (
    r"Allow changes to mail \(flags, moves, Trash, drafts\) and sending drafts, each sent only once you "
    r"approved it in your browser \(yes or no\) \[no\]: "
)


class Terminal:
    """A command in a pseudo-terminal of its own: ``expect`` what it prints, ``send`` what a person types."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the pty is its controlling terminal, as in a real one
            os.execve(argv[0], argv, env)
        self.seen = ""
        self.transcript = ""

    def expect(self, pattern: str, within: float = 30.0) -> re.Match[str]:
        def shown() -> re.Match[str] | None:
            while True:
                match = re.search(pattern, self.seen)
                if match:
                    self.seen = self.seen[match.end() :]
                    return match
                if not select.select([self.fd], [], [], 0.05)[0]:
                    return None
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the child ended
                    chunk = b""
                if not chunk:
                    raise AssertionError(
                        f"{pattern!r} did not come before the end; the terminal shows:\n{self.seen}"
                    )
                self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
                self.transcript += chunk.decode("utf-8", "replace")

        try:
            return eventually(shown, within=within, interval=0.01)
        except NotYet:
            raise AssertionError(f"{pattern!r} did not come; the terminal shows:\n{self.seen}") from None

    def send(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def answer(self, *steps: tuple[str, str]) -> None:
        """Each step: wait for its question (a pattern), then type its answer."""
        for question, typed in steps:
            self.expect(question)
            self.send(typed)

    def wait(self, within: float = 30.0) -> int:
        def ended() -> tuple[int] | None:
            try:  # drain, so a child blocked on a full terminal can end
                if select.select([self.fd], [], [], 0.1)[0]:
                    self.transcript += os.read(self.fd, 4096).decode("utf-8", "replace")
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            return (os.waitstatus_to_exitcode(status),) if pid else None

        with contextlib.suppress(NotYet):
            (code,) = eventually(ended, within=within, interval=0.01)
            os.close(self.fd)
            return code
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError(f"setup did not end; the terminal shows:\n{self.transcript}")


def environment(home: Path, keychain: SecretService | str) -> dict[str, str]:
    """A user's environment whose keychain is ``keychain``: a Secret Service, or a keyring backend's name
    (empty: keyring chooses)."""
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "dumb"}
    env["XDG_DATA_HOME"] = str(home / "keyring-data")  # where keyrings.alt would write its file
    if isinstance(keychain, SecretService):
        return env | {"DBUS_SESSION_BUS_ADDRESS": keychain.bus}
    return env | ({"PYTHON_KEYRING_BACKEND": keychain} if keychain else {})


def run_server(
    args: list[str], env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``mail-imap-mcp ARGS`` as a user runs it in a terminal's place: ``stdin`` typed (None: nothing to
    read, so ``serve`` ends rather than waits), its output kept."""
    typed: dict[str, Any] = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run(
        [SERVER, *args], env=env, capture_output=True, text=True, timeout=patient(60), check=False, **typed
    )


def user_home(tmp_path: Path) -> tuple[Path, Path]:
    """A user's empty home directory and the config file setup is told to write in it."""
    home = tmp_path / "home"
    home.mkdir()
    return home, home / "mail.toml"


def files_under(root: Path, but: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and but not in path.parents]


def script_setup(
    home: Path, keychain: SecretService | str, dovecot: Dovecot, user: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    """setup as a script runs it: every answer a flag, the password on standard input."""
    args = ["setup", "--address", f"{user}@example.org", "--host", dovecot.host]
    args += ["--port", str(dovecot.tls_port), "--username", user, "--ca-file", str(dovecot.ca_file)]
    return run_server(
        [*args, "--password-stdin", *flags], environment(home, keychain), dovecot.password + "\n"
    )


def check(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_server(["check", "--config", str(config)], env)
