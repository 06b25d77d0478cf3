"""The servers of the matrix: the session fixtures ``dovecot``, ``cyrus``, ``cyrus_altns`` and
``courier`` (tests/conftest.py), one password for all of them, and ``on_matrix`` to mark one server's
run of a matrix test as a known product defect."""

from __future__ import annotations

import secrets

import pytest

from tests.support.courier import Courier
from tests.support.cyrus import Cyrus
from tests.support.dovecot import Dovecot

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
