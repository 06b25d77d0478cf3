"""tests/support/patience.py: the factor, and eventually's tries, pauses and failure (on a fake clock)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support import patience
from tests.support.fake_clock import FakeClock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """patience's monotonic clock and sleep, moved by the test: a sleep moves the clock and is kept."""
    fake = FakeClock(500.25)
    fake.slept = []  # type: ignore[attr-defined]

    def sleep(seconds: float) -> None:
        fake.slept.append(seconds)  # type: ignore[attr-defined]
        fake.now += seconds

    monkeypatch.setattr(patience, "time", SimpleNamespace(monotonic=fake, sleep=sleep))
    monkeypatch.setattr(patience, "FACTOR", 2.0)
    return fake


def test_eventually_returns_the_first_true_value_and_retries_only_what_it_is_told(clock: FakeClock) -> None:
    answers = iter([None, 0, KeyError("not yet"), "ready"])

    def condition() -> object:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert patience.eventually(condition, within=5, retry_on=(KeyError,)) == "ready"
    with pytest.raises(ValueError, match="broken"):
        patience.eventually(lambda: (_ for _ in ()).throw(ValueError("broken")), within=5)


def test_eventually_waits_its_patience_then_says_what_did_not_hold_and_the_last_value(
    clock: FakeClock,
) -> None:
    started = clock.now
    with pytest.raises(patience.NotYet) as failed:
        patience.eventually(list, within=3, what="the greeting")
    assert clock.now - started == pytest.approx(6.0)  # 3 s on an idle machine, twice on this run
    assert str(failed.value) == "the greeting did not hold within 6.0 s; last value: []"
    slept = clock.slept  # type: ignore[attr-defined]
    assert max(slept) <= patience.LONGEST_PAUSE and slept[0] == 0.05  # growing, capped
    assert slept[-1] < patience.LONGEST_PAUSE  # the last pause ends at the deadline, not past it


def test_the_factor_is_the_setting_else_workers_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patience, "_cores", lambda: 2)
    monkeypatch.delenv(patience.PATIENCE_ENV, raising=False)
    assert patience._factor(7) == 3.5 and patience._factor(1) == 1.0
    assert patience.describe(7) == "patience: x3.5 (7 xdist workers on 2 cores)"
    monkeypatch.setenv(patience.PATIENCE_ENV, "4")
    assert patience._factor(7) == 4.0
    for wrong in ("slow", "0", "-1"):
        monkeypatch.setenv(patience.PATIENCE_ENV, wrong)
        with pytest.raises(RuntimeError, match=patience.PATIENCE_ENV):
            patience._factor(7)


def test_regression_each_tests_timeout_is_scaled_by_the_runs_patience(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pytest-timeout's fixed 300 s (pyproject) killed, on a loaded machine, the README's install that
    allows itself ``patient(600)``: the limit of every test, the default's and a mark's, is scaled as its
    waits are; a test without a limit keeps none."""
    import pytest_timeout

    from tests.conftest import pytest_timeout_set_timer

    started: list[object] = []
    monkeypatch.setattr(
        pytest_timeout, "pytest_timeout_set_timer", lambda item, settings: started.append(settings)
    )
    monkeypatch.setattr(patience, "FACTOR", 2.5)
    item = SimpleNamespace(nodeid="tests/integration/setup/test_readme.py::test_x")
    pytest_timeout_set_timer(item, pytest_timeout.Settings(300, "signal", False, False))  # type: ignore[arg-type]
    pytest_timeout_set_timer(item, pytest_timeout.Settings(0, "thread", True, False))  # type: ignore[arg-type]
    assert started == [
        pytest_timeout.Settings(750.0, "signal", False, False),
        pytest_timeout.Settings(0, "thread", True, False),
    ]
