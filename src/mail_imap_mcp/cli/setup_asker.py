"""``setup``'s questions on a terminal (a proposal in brackets, Enter takes it; a password read without
echo) and, without a terminal, the flag's value or :class:`SetupRefused` naming the flag. Part of the
command line (:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any


class SetupRefused(Exception):
    """What the user must change before setup can go on; the message says it."""


def say(text: str) -> None:
    print(text, flush=True)


class Asker:
    """Questions on a terminal (a proposal in brackets, Enter takes it); without one, the flag's value or
    :class:`SetupRefused` naming the flag."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.interactive = sys.stdin.isatty() and not args.password_stdin
        self.accept_proposals = bool(args.yes)

    def text(self, question: str, flag: str, given: Any, proposal: str | None = None) -> str:
        if given is not None:
            return str(given)
        if proposal is not None and (self.accept_proposals or not self.interactive):
            return proposal
        if not self.interactive:
            raise SetupRefused(f"{flag} is needed when standard input is not a terminal")
        shown = f" [{proposal}]" if proposal else ""
        while True:
            answer = input(f"{question}{shown}: ").strip()
            if answer or proposal:
                return answer or str(proposal)

    def again(self, question: str, previous: str) -> str:
        """Asked again on a terminal after a failed login: the earlier answer is the proposal."""
        answer = input(f"{question} [{previous}]: ").strip()
        return answer or previous

    def secret(self, question: str) -> str:
        if not self.interactive:
            line = sys.stdin.readline().rstrip("\r\n")
            if not line:
                raise SetupRefused("--password-stdin: standard input held no password")
            return line
        while not (answer := getpass.getpass(f"{question} (not shown): ")):
            pass
        return answer
