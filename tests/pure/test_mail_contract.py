"""The mail backend contract (``mail/backend.py``) on the in-memory backend of the tests
(``tests/support/mail/memory_mail.py``): the cases of ``tests/support/shared/mail_contract*.py`` that the
servers keep in ``tests/integration/backends/test_mail_contract.py``, here without a server, so a change
of the memory backend that a server would not make fails the pure tier."""

from __future__ import annotations

import pytest

from tests.support.shared.mail_contract import Case, Mail, memory_mail, rows


@pytest.mark.parametrize(("case", "backend"), rows(memory=True))
def test_the_memory_backend_keeps_the_mail_contract(case: Case[Mail], backend: str) -> None:
    case.run(memory_mail(backend))
