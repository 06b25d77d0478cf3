"""The scopes of team users (app.py): each user's accounts, connections and watches, made at their first
call and bounded: the least recently used past the cap and those unused for a while are closed (their
Dovecot sessions end), never one in use, and a user whose scope was closed gets a new one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.operations import Operation, OperationState
from tests.support.clients.in_process import AccountFactory, make_config
from tests.support.patience import eventually, patient
from tests.support.servers.dovecot import Dovecot

USERS = [f"user{number}@corp.example" for number in range(8)]


def nothing(session: ImapSession) -> None:
    """A call's first step: the connection logs in (or is found alive)."""


def sessions(dovecot: Dovecot, user: str) -> int:
    """The IMAP sessions Dovecot holds for ``user`` now."""
    listed = dovecot.doveadm("who", "-1", user.lower(), check=False).stdout.splitlines()
    return sum(1 for line in listed if line.split()[:1] == [user.lower()] and "imap" in line)


def until(condition: Callable[[], Any], within: float = 10.0) -> None:
    eventually(condition, within=within)


def test_team_users_scopes_are_bounded_closed_when_evicted_and_never_under_a_call(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    """Regression: every team user's scope (and its logged-in connection) was kept for the life of the
    process, so a long-running server with many users grew without bound."""
    app = AppContext.from_config(make_config({"support": {**account(user), "users": USERS}}))
    app.scopes.max_count, app.scopes.min_idle_s = 3, 0.0
    try:
        with app.holding(USERS[0]) as held:  # a call under way all along
            mine = held.pool.get("support")
            mine.run(nothing)
            for who in USERS[1:]:
                app.scope(who).pool.get("support").run(nothing)
            assert app.scopes.team_count() == 3  # the held user and the two most recent ones
            until(lambda: sessions(dovecot, user) == 3)  # the others were logged out
            mine.run(nothing)  # the held call goes on, on the connection it had
            assert mine.logins == 1
        app.scopes.idle_s = 0.2
        time.sleep(0.3)
        again = app.scope(USERS[1]).pool.get("support")  # closed before: made again
        again.run(nothing)
        assert app.scopes.team_count() == 1  # the others were idle past scopes.idle_s
        until(lambda: sessions(dovecot, user) == 1)
    finally:
        app.close()
    until(lambda: sessions(dovecot, user) == 0)


def test_a_users_scope_stays_open_while_their_background_write_runs(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    config = make_config({"support": {**account(user), "users": USERS}}, background_after_s=0)
    app = AppContext.from_config(config)
    app.scopes.max_count, app.scopes.min_idle_s = 1, 0.0
    writing, release = USERS[0], threading.Event()
    connection = app.scope(writing).pool.get("support")

    def work(progress: Any) -> str:  # between two batches, holding the user's connection
        connection.run(nothing)
        release.wait(patient(20))
        connection.run(nothing)
        return "done"

    try:
        operation = app.operations.run(
            "t", "support", 2, work, lambda result: OperationState.OK, user=writing
        )
        assert isinstance(operation, Operation)
        until(lambda: connection.logins == 1 and not connection.busy)
        for who in USERS[1:4]:
            app.scope(who).pool.get("support").run(nothing)
        assert app.scopes.team_count() == 2  # the writer's and the most recent: past the cap, but in use
        release.set()
        until(operation.finished.is_set)
        assert operation.result == "done" and connection.logins == 1  # never closed under it
    finally:
        release.set()
        app.close()
