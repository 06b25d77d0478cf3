"""The check behind ``INBOX_ONLY`` (tests/support/servers/matrix.py): the folders a test names over IMAP, in
every command imaplib sends to the server under test from the test's process (the product's and the
test's own), and those other than INBOX among them. A test marked so runs on Cyrus's default namespace
under this check, which fails it when it named another folder (then it belongs on Cyrus's second
namespace too) or sent nothing that could tell."""

from __future__ import annotations

import imaplib
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: The commands whose arguments name a folder (``UID COPY``/``UID MOVE`` as ``UID``'s first argument).
NAMING = frozenset(
    [
        "SELECT",
        "EXAMINE",
        "STATUS",
        "CREATE",
        "DELETE",
        "RENAME",
        "APPEND",
        "COPY",
        "MOVE",
        "SUBSCRIBE",
        "UNSUBSCRIBE",
        "GETACL",
        "SETACL",
        "MYRIGHTS",
        "GETQUOTAROOT",
        "LIST",
        "LSUB",
    ]
)
#: The method of imaplib's that sends every command (private: imaplib has no hook for this).
_SEND = "_command"
#: LIST and LSUB patterns that name no folder (every folder, the top level, or INBOX).
EVERY = frozenset(("*", "%", "", "INBOX"))


def _text(argument: Any) -> str:
    return (argument.decode("latin-1") if isinstance(argument, bytes) else str(argument)).strip('"')


def folders_named(command: str, arguments: tuple[Any, ...]) -> set[str]:
    """The folders other than INBOX that one command names, as sent (modified UTF-7)."""
    if command == "UID" and arguments:
        command, arguments = _text(arguments[0]).upper(), arguments[1:]
    if command not in NAMING or not arguments:
        return set()
    if command in ("LIST", "LSUB"):
        names = [arguments[1]] if len(arguments) > 1 else []
        return {_text(name) for name in names} - EVERY
    named = {"COPY": arguments[-1:], "MOVE": arguments[-1:], "RENAME": arguments[:2]}.get(
        command, arguments[:1]
    )
    return {name for name in map(_text, named) if name.upper() != "INBOX"}


@dataclass
class Seen:
    """What a test sent: how many commands, and the folders other than INBOX they named."""

    commands: int = 0
    folders: set[str] = field(default_factory=set)


@contextmanager
def folders_seen(ports: Collection[int]) -> Iterator[Seen]:
    """Record every IMAP command imaplib sends meanwhile to ``ports`` (the server under test's), from
    any thread of this process."""
    seen = Seen()
    original = getattr(imaplib.IMAP4, _SEND)

    def recording(self: imaplib.IMAP4, name: str, *arguments: Any) -> Any:
        if getattr(self, "port", None) in ports:
            seen.commands += 1
            seen.folders |= folders_named(name, arguments)
        return original(self, name, *arguments)

    setattr(imaplib.IMAP4, _SEND, recording)
    try:
        yield seen
    finally:
        setattr(imaplib.IMAP4, _SEND, original)


def verdict(seen: Seen) -> str | None:
    """Why a test marked ``INBOX_ONLY`` is not (None: it is)."""
    if seen.commands == 0:
        return "INBOX_ONLY, yet it sent no IMAP command in this process: nothing tells which folders it names"
    if seen.folders:
        return (
            f"INBOX_ONLY, yet it named {sorted(seen.folders)}: remove the mark, so that it runs on "
            "Cyrus's second namespace (cyrus_altns) too"
        )
    return None
