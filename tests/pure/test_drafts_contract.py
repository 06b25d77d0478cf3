"""The drafts family of the mail backend (``mail/drafts.py``) under contract on the in-memory backend: the
cases of ``tests/support/shared/drafts_contract.py`` that the servers keep in
``tests/integration/backends/test_drafts_contract.py``, here without a server."""

from __future__ import annotations

import pytest

from tests.support.shared.drafts_contract import CASES, Drafts, memory_drafts
from tests.support.shared.mail_contract import Case


@pytest.mark.parametrize(("case", "backend"), CASES.rows(memory=True))
def test_the_memory_backend_keeps_the_drafts_contract(case: Case[Drafts], backend: str) -> None:
    case.run(memory_drafts(backend))
