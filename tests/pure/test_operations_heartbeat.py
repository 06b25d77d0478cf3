"""The heartbeat of background operations in a shared store (operations/shared.py): it writes each
running operation's view every HEARTBEAT_S, and outlives any failure of one beat."""

from __future__ import annotations

import contextlib
import logging

import pytest

from mail_imap_mcp.operations import shared
from mail_imap_mcp.operations.shared import OperationView, SharedOperations
from mail_imap_mcp.state import MemoryStore, StateUnavailable, user_key
from tests.support.patience import NotYet, eventually

VIEW = OperationView(
    operation_id="op_1_abc", tool="t", account_id="a", state="running", done=1, total=9, started_utc="x"
)


class FlakyStore(MemoryStore):
    """A shared store whose writes number ``failing`` fail, each with its own kind of error."""

    shared = True

    def __init__(self, failing: dict[int, Exception]) -> None:
        super().__init__()
        self.failing = failing
        self.writes = 0

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        self.writes += 1
        failure = self.failing.get(self.writes)
        if failure is not None:
            raise failure
        super().set(key, value, ttl_s)


def test_the_heartbeat_goes_on_after_any_failure_of_a_beat(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: an error other than StateUnavailable ended the heartbeat's thread for good, and every
    other instance then answered the operation, still running, as stopped with its outcome unknown."""
    monkeypatch.setattr(shared, "HEARTBEAT_S", 0.01)
    store = FlakyStore({2: RuntimeError("a bug of the store"), 3: StateUnavailable("Redis away")})
    operations = SharedOperations(store, 60, lambda: [(VIEW, "alice")])
    try:
        with caplog.at_level(logging.WARNING, "mail_imap_mcp.operations"):
            operations.publish(VIEW, "alice")
            with contextlib.suppress(NotYet):  # asserted below, once closed
                eventually(lambda: store.writes >= 6, within=5, interval=0.01)
    finally:
        operations.close()
    assert store.writes >= 6
    assert store.get(user_key("op", VIEW.operation_id, user="alice")) is not None
    assert any("a bug of the store" in record.getMessage() or record.exc_info for record in caplog.records)
