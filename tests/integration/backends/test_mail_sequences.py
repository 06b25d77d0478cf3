"""Seeded sequences of random operations (``tests/support/shared/mail_sequences.py``) on the in-memory
backend and on each server of the matrix at once, every step's answer compared: what a contract case
does not think of, a sequence finds. A few seeds run here; ``MIM_MAIL_SEQUENCE_SEEDS`` runs more (the
differential run of issue 89 was 50 seeds of 41 steps)."""

from __future__ import annotations

import os

import pytest

from tests.support.shared.mail_contract import Mail, memory_mail
from tests.support.shared.mail_sequences import compare

SEEDS = range(int(os.environ.get("MIM_MAIL_SEQUENCE_SEEDS", "3")))
STEPS = 40


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mail", ["dovecot", "cyrus", "courier"], indirect=True)
def test_a_server_answers_each_step_of_a_random_sequence_as_the_memory_backend(
    request: pytest.FixtureRequest, mail: Mail, seed: int
) -> None:
    twin = "memory-as-courier" if request.node.callspec.params["mail"] == "courier" else "memory"
    compare(memory_mail(twin), mail, seed, STEPS)
