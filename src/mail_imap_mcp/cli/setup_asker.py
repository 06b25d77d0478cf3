"""``setup``'s questions on a terminal (a proposal in brackets, Enter takes it; a password read without
echo, and nothing typed between questions echoed) and, without a terminal, the flag's value or :class:`SetupRefused` naming the flag. Part of the
command line (:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import sys
from collections.abc import Callable, Iterator
from typing import Any


class SetupRefused(Exception):
    """What the user must change before setup can go on; the message says it."""


#: How a script's run that stops at the submission check begins its message (exit status 1, as a failed
#: login; the check: ``setup_submission.py``).
CHECK_FAILED = "the submission check failed"


def say(text: str) -> None:
    print(text, flush=True)


class _Typing:
    """A terminal that echoes what is typed only while a visible question waits for it. Typed between
    questions (during a login, after a hidden password) nothing is echoed, and it is dropped before the
    next visible question: a password typed ahead is never shown, nor taken as another answer."""

    def __init__(self, fd: int) -> None:
        import termios  # here, not at the top: Windows has none, and ``serve`` imports this package

        self._termios = termios
        self._fd = fd
        self._saved = termios.tcgetattr(fd)
        self._quiet = [*self._saved[:3], self._saved[3] & ~self._termios.ECHO, *self._saved[4:]]
        self._termios.tcsetattr(fd, self._termios.TCSANOW, self._quiet)

    @contextlib.contextmanager
    def echoed(self) -> Iterator[None]:
        self._termios.tcflush(self._fd, self._termios.TCIFLUSH)
        self._termios.tcsetattr(self._fd, self._termios.TCSANOW, self._saved)
        try:
            yield
        finally:
            self._termios.tcsetattr(self._fd, self._termios.TCSANOW, self._quiet)

    def close(self) -> None:
        """The terminal as it was, what was typed ahead dropped (the shell does not get it either)."""
        self._termios.tcsetattr(self._fd, self._termios.TCSAFLUSH, self._saved)


def _has_terminal_modes() -> bool:
    try:
        import termios  # noqa: F401
    except ImportError:
        return False
    return True


class Asker:
    """Questions on a terminal (a proposal in brackets, Enter takes it; nothing typed ahead echoed: see
    :class:`_Typing`); without one, the flag's value or :class:`SetupRefused` naming the flag. ``close``
    gives the terminal back as it was."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.interactive = sys.stdin.isatty() and not args.password_stdin
        self.accept_proposals = bool(args.yes)
        self._typing = _Typing(sys.stdin.fileno()) if self.interactive and _has_terminal_modes() else None

    def close(self) -> None:
        if self._typing is not None:
            self._typing.close()

    def _input(self, prompt: str) -> str:
        if self._typing is None:
            return input(prompt)
        with self._typing.echoed():
            return input(prompt)

    def text(self, question: str, flag: str, given: Any, proposal: str | None = None) -> str:
        if given is not None:
            return str(given)
        if proposal is not None and (self.accept_proposals or not self.interactive):
            return proposal
        if not self.interactive:
            raise SetupRefused(f"{flag} is needed when standard input is not a terminal")
        shown = f" [{proposal}]" if proposal else ""
        while True:
            answer = self._input(f"{question}{shown}: ").strip()
            if answer or proposal:
                return answer or str(proposal)

    def again(
        self, question: str, previous: str, fits: Callable[[str], object] = bool, wrong: str = ""
    ) -> str:
        """Asked again on a terminal after a failed login: the earlier answer is the proposal; one that
        does not ``fits`` is asked again, ``wrong`` saying why."""
        while not fits(answer := self._input(f"{question} [{previous}]: ").strip() or previous):
            say(f"{answer!r} {wrong}; try again.")
        return answer

    def secret(self, question: str) -> str:
        if not self.interactive:
            line = sys.stdin.readline().rstrip("\r\n")
            if not line:
                raise SetupRefused("--password-stdin: standard input held no password")
            return line
        while not (answer := getpass.getpass(f"{question} (not shown): ")):
            pass
        return answer
