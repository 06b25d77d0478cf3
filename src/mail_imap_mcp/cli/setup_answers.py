"""``setup``'s answers that must fit a rule (an address has an @, a security is one of three, a yes is yes
or no, a port is a number from 1 to 65535): one mistyped on a terminal is asked again, keeping every answer
before it; one given by a flag (or taken without a terminal) is refused. Part of the command line
(:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mail_imap_mcp.config import Security

#: The securities an answer may name, and what is said of one that names none.
SECURITIES = frozenset(item.value for item in Security)
NOT_A_SECURITY = "is none of the three"
NOT_A_PORT = "is no port (1 to 65535)"


def answered(
    ask: Any,
    say: Callable[[str], None],
    refused: Callable[[str], Exception],
    question: str,
    flag: str,
    given: Any,
    proposal: str | None,
    fits: Callable[[str], object],
    wrong: str,
) -> str:
    """The answer to ``question`` once it ``fits``; ``wrong`` says why one does not (after its value)."""
    while not fits(answer := str(ask.text(question, flag, given, proposal)).strip()):
        if given is not None or not ask.interactive:
            raise refused(f"{flag} {answer!r} {wrong}")
        say(f"{answer!r} {wrong}; try again.")
    return answer


def is_port(answer: str) -> bool:
    return answer.isdigit() and 1 <= int(answer) <= 65535
