"""The servers of the matrix: the session fixtures ``dovecot``, ``cyrus``, ``cyrus_altns`` and
``courier`` (tests/conftest.py), one password for all of them, ``on_matrix`` to mark one server's run of
a matrix test as a known product defect, and ``inbox_only`` (``INBOX_ONLY``) for a matrix test that names
no folder but INBOX (it skips Cyrus's second namespace)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest

from tests.support.servers.courier import Courier
from tests.support.servers.cyrus import Cyrus
from tests.support.servers.dovecot import Dovecot

#: The password of every user of every session-scoped server (the value of ``PASSWORD_ENV``).
SESSION_PASSWORD = secrets.token_hex(12)

#: The session fixtures of the servers of the matrix, in the order tests run on them.
MATRIX = ("dovecot", "cyrus", "cyrus_altns", "courier")
#: A server of the matrix (each has ``seed()``: Dovecot writes Maildir files, the others APPEND).
MatrixServer = Dovecot | Cyrus | Courier


def on_matrix(**xfail: str) -> pytest.MarkDecorator:
    """Run a test that requests ``imap_server`` on every server of ``MATRIX``, the servers named as
    keywords (``courier="reason"``) as ``xfail(strict=True)``: a product defect observed on that server
    only, kept visible until it is fixed (an XPASS then fails the run)."""
    unknown = set(xfail) - set(MATRIX)
    if unknown:
        raise ValueError(f"not servers of the matrix: {sorted(unknown)}")
    params = [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=xfail[name]))
        if name in xfail
        else name
        for name in MATRIX
    ]
    return pytest.mark.parametrize("imap_server", params, indirect=True)


#: The marker of a test that names no folder but INBOX (:func:`inbox_only`).
INBOX_ONLY_MARK = "inbox_only"

F = TypeVar("F", bound=Callable[..., Any])


def inbox_only(servers: Sequence[str] = MATRIX, fixture: str = "imap_server") -> Callable[[F], F]:
    """Run a test that names no folder but INBOX on ``servers`` (the parameters of its server
    ``fixture``) but Cyrus's second namespace, which differs from its default one (``cyrus``) only in how
    other folders are named. Its run on ``cyrus`` fails if it names another folder after all
    (tests/support/run/inbox_only.py), so the mark cannot keep a folder's name from the second namespace."""
    parametrize = pytest.mark.parametrize(
        fixture, [name for name in servers if name != "cyrus_altns"], indirect=True
    )

    def mark(test: F) -> F:
        marked: F = parametrize(getattr(pytest.mark, INBOX_ONLY_MARK)(test))
        return marked

    return mark


#: :func:`inbox_only` for a test that requests ``imap_server``.
INBOX_ONLY = inbox_only()


#: A test that requests ``imap_server`` narrowed to Dovecot: what it proves is the product's own logic,
#: the same on every server (a pure test on the in-memory backend and a contract case hold it for every
#: backend; each narrowed test names them), and Dovecot keeps it end to end.
ON_DOVECOT = pytest.mark.parametrize("imap_server", ["dovecot"], indirect=True)
