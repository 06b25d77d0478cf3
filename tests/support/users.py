"""Pure tests' calls made as a given team user."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from typing import TypeVar

from mail_imap_mcp.imap.ids import bind_to_user
from mail_imap_mcp.state import current_user

T = TypeVar("T")


def as_user(user: str, run: Callable[[], T], per_user: Iterable[str] = ()) -> T:
    """``run()`` as a call of ``user`` (:data:`~mail_imap_mcp.state.current_user`) whose accounts
    ``per_user`` are served per user, in a context of its own so the test's stays as it was."""

    def call() -> T:
        current_user.set(user)
        bind_to_user(per_user)
        return run()

    return contextvars.copy_context().run(call)
