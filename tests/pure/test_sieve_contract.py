"""The Sieve scripts' contract (tests/support/mail/sieve_contract.py) on the in-memory ManageSieve of the
tests; tests/integration/backends/test_sieve_contract.py runs the same cases on Dovecot's Pigeonhole."""

from __future__ import annotations

import pytest

from tests.support.mail.memory_sieve import MemorySieve
from tests.support.mail.sieve_contract import CASES, LIMITS, PIGEONHOLE


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fake_keeps_the_contract(case: str) -> None:
    CASES[case](MemorySieve(**LIMITS), PIGEONHOLE)
