"""A call's time budget: how long the current call may still wait on the network (see
docs/reliability.md). Every blocking socket operation of a protocol client takes its timeout from it."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager


class CallBudget:
    """How long the current call may still wait on the network; read before every blocking socket operation.

    A call runs until its ``deadline`` (``math.inf`` between calls). Inside it, the connect phase (TCP
    connect, TLS handshake, greeting, STARTTLS) gets ``connect_timeout_s`` in total, and every later
    wait for the server (login, each command's reads and sends) at most ``command_timeout_s``, never
    past the deadline. Used only by the thread holding the account's lock.
    """

    def __init__(self, command_timeout_s: float) -> None:
        self.command_timeout_s = command_timeout_s
        self.deadline = math.inf
        self._connect_deadline: float | None = None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    @contextmanager
    def connecting(self, until: float) -> Iterator[None]:
        """Bound everything inside (a part of the connect phase) by the monotonic time ``until``."""
        self._connect_deadline = until
        try:
            yield
        finally:
            self._connect_deadline = None

    def timeout(self, *, strict: bool = True) -> float:
        """Socket timeout for the next operation; with ``strict`` raise ``TimeoutError`` once spent."""
        now = time.monotonic()
        if self._connect_deadline is not None:
            left = min(self.deadline, self._connect_deadline) - now
        else:
            left = min(self.deadline - now, self.command_timeout_s)
        if left <= 0:
            if strict:
                raise TimeoutError("the call's time budget is used up")
            return 0.001
        return left
