"""The mail backend contract (``mail/backend.py``), shared by the tiers that run it: each case is a
function of a :class:`Mail` registered with the backends it holds on (:func:`case`); the in-memory
backend's rows run in the pure tier (``tests/pure/test_mail_contract.py``), the servers' rows in
``tests/integration/backends/test_mail_contract.py``, so the memory backend cannot drift from what a server
does and a change to it is caught by ``scripts/test --pure``. The cases are
``tests/support/shared/mail_contract_cases.py`` and ``mail_contract_changes.py``; :func:`rows` gives them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import pytest

from mail_imap_mcp.mail.backend import MailBackend
from mail_imap_mcp.mail.roles import TRASH
from tests.support.mail.memory_mail import MemoryMail

EVERY_SERVER = ("memory", "dovecot", "cyrus", "courier")
MODSEQ_KEEPERS = ("memory", "dovecot", "cyrus")
B = TypeVar("B")
#: Where a case holds when it names no backend: the memory backend and Dovecot.
DEFAULT_BACKENDS = ("memory", "dovecot")


def message(subject: str, *, sender: str = "ann@example.org", body: str = "Hello.", extra: str = "") -> bytes:
    head = f"From: <{sender}>\r\nTo: <bob@example.org>\r\nSubject: {subject}\r\n{extra}"
    return f"{head}Message-ID: <{subject.replace(' ', '.')}@example.org>\r\n\r\n{body}\r\n".encode()


@dataclass
class Mail:
    """A backend under contract and its account's names: ``trash`` and ``archive`` exist."""

    backend: MailBackend
    trash: str
    archive: str
    missing: str
    #: Delete a mailbox and make it again, as another client would.
    recreate: Callable[[str], None]
    #: The APPENDLIMIT the server advertises (RFC 7889), None where it names none.
    advertised_append_limit: int | None
    #: The account's name of a personal mailbox given by its levels (``INBOX.A.b`` on Cyrus and Courier).
    named: Callable[..., str]


@dataclass(frozen=True)
class Case(Generic[B]):
    """One case of a contract and the backends it holds on."""

    name: str
    run: Callable[[B], None]
    backends: tuple[str, ...]


class Cases(Generic[B]):
    """A contract's cases, each registered with the backends it holds on (:meth:`case`)."""

    def __init__(self, default: tuple[str, ...]) -> None:
        self.default = default
        self.cases: list[Case[B]] = []

    def case(self, *backends: str) -> Callable[[Callable[[B], None]], Callable[[B], None]]:
        """Register a case holding on ``backends`` (the default ones where none are named)."""

        def register(run: Callable[[B], None]) -> Callable[[B], None]:
            self.cases.append(Case(run.__name__, run, backends or self.default))
            return run

        return register

    def rows(self, *, memory: bool) -> list[object]:
        """Every case's ``(case, backend)`` parameters, of the memory backends or of the servers."""
        return [
            pytest.param(each, backend, id=f"{each.name}[{backend}]")
            for each in self.cases
            for backend in each.backends
            if backend.startswith("memory") == memory
        ]


#: The mail contract's cases (``mail_contract_cases.py``, ``mail_contract_changes.py``).
CASES: Cases[Mail] = Cases(DEFAULT_BACKENDS)
case = CASES.case


def memory_mail(name: str) -> Mail:
    """The in-memory backend as the contract runs it: ``memory`` (as Dovecot and Cyrus), or
    ``memory-as-courier`` (no keyword is set once, a renamed mailbox is another UIDVALIDITY)."""
    courier = name == "memory-as-courier"
    memory = MemoryMail(
        {"Trash": TRASH, "Archive": None},
        exclusive=not courier,
        append_limit=70_000,
        rename_keeps_uidvalidity=not courier,
    )

    def made_again(mailbox: str) -> None:
        memory.delete(mailbox)
        memory.create(mailbox)

    return Mail(memory, "Trash", "Archive", "Nowhere", made_again, 70_000, lambda *levels: "/".join(levels))


def rows(*, memory: bool) -> list[object]:
    """Every mail contract case's ``(case, backend)`` parameters, of the memory backends or of the servers."""
    from tests.support.shared import mail_contract_cases, mail_contract_changes  # noqa: F401  (they register)

    return CASES.rows(memory=memory)
