"""One access token per account, shared by its connections (credentials/tokens.py): fetched once, anew only near
its expiry or after a refusal, never twice for one refusal however many connections met it."""

from __future__ import annotations

import threading
import time

import pytest

from mail_imap_mcp.credentials.tokens import SharedToken
from mail_imap_mcp.net.tokens import AccessToken, TokenUnavailable
from tests.support.patience import patient


class CountingFetch:
    """Hands out token-1, token-2, ... valid for ``lifetime`` seconds, counting the fetches; ``hold``
    keeps a fetch waiting (as a token endpoint or a helper command takes time)."""

    def __init__(self, lifetime: float = 3600.0) -> None:
        self.lifetime = lifetime
        self.fetched = 0
        self.hold = threading.Event()
        self.hold.set()

    def __call__(self, time_left: float) -> AccessToken:
        self.hold.wait(patient(5))
        self.fetched += 1
        return AccessToken(f"token-{self.fetched}", time.monotonic() + self.lifetime)


def test_every_connection_gets_the_one_token_fetched_once() -> None:
    fetch = CountingFetch()
    shared = SharedToken(fetch)
    tokens = {shared.token(10).value for _ in range(5)}
    assert tokens == {"token-1"} and fetch.fetched == 1


def test_a_token_near_its_expiry_is_fetched_anew() -> None:
    fetch = CountingFetch(lifetime=20.0)
    shared = SharedToken(fetch)
    assert shared.token(10, min_valid_s=5).value == "token-1"
    assert shared.token(10, min_valid_s=30).value == "token-2"  # 20 s left is too little for 30


def test_a_refusal_met_by_many_connections_fetches_one_new_token() -> None:
    fetch = CountingFetch()
    shared = SharedToken(fetch)
    refused = shared.token(10)
    fetch.hold.clear()
    answers: list[str] = []

    def connection() -> None:
        shared.invalidate(refused)
        answers.append(shared.token(10).value)

    threads = [threading.Thread(target=connection) for _ in range(4)]
    for thread in threads:
        thread.start()
    fetch.hold.set()
    for thread in threads:
        thread.join(patient(10))
    assert answers == ["token-2"] * 4 and fetch.fetched == 2


def test_an_old_refusal_does_not_drop_the_newer_token() -> None:
    fetch = CountingFetch()
    shared = SharedToken(fetch)
    first = shared.token(10)
    shared.invalidate(first)
    second = shared.token(10)
    shared.invalidate(first)  # a slower connection reports the same refusal late
    assert shared.token(10) == second and fetch.fetched == 2


def test_a_failed_fetch_is_said_and_tried_again_next_time() -> None:
    calls = 0

    def failing(time_left: float) -> AccessToken:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise TokenUnavailable("the command exited with status 1")
        return AccessToken("token", time.monotonic() + 60)

    shared = SharedToken(failing)
    with pytest.raises(TokenUnavailable, match="status 1"):
        shared.token(10)
    assert shared.token(10).value == "token" and calls == 2


def test_the_token_never_shows_in_its_repr() -> None:
    assert "secret-value" not in repr(AccessToken("secret-value", 0.0))


def test_no_deadline_waits_as_long_as_the_fetch_takes() -> None:
    # Outside a call the budget's deadline is infinite (a command-line check): a lock's timeout of inf
    # raised OverflowError.
    assert SharedToken(CountingFetch()).token(float("inf")).value == "token-1"
