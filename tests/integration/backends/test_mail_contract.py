"""The mail backend contract (``mail/backend.py``) on real servers through ``imap/backend.py``: the cases
of ``tests/support/shared/mail_contract*.py``, whose rows on the in-memory backend run in the pure tier
(``tests/pure/test_mail_contract.py``), here on each server they name (the ``mail`` fixture: conftest.py).
"""

from __future__ import annotations

import pytest

from tests.support.shared.mail_contract import Case, Mail, rows


@pytest.mark.parametrize(("case", "mail"), rows(memory=False), indirect=["mail"])
def test_a_server_keeps_the_mail_contract(case: Case[Mail], mail: Mail) -> None:
    case.run(mail)
