"""Pure tests' calls made as a given team user."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from typing import TypeVar

from mail_imap_mcp.state import Caller, sealing_caller

T = TypeVar("T")


def as_user(user: str, run: Callable[[], T], per_user: Iterable[str] = ()) -> T:
    """``run()`` as the IMAP layer sees a call of ``user`` whose accounts ``per_user`` are served per
    user (:data:`~mail_imap_mcp.state.sealing_caller`: its seals and message ids), in a context of its
    own so the test's stays as it was."""

    def call() -> T:
        sealing_caller.set(Caller(user, frozenset(per_user)))
        return run()

    return contextvars.copy_context().run(call)
