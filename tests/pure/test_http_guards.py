"""Host/Origin parsing and the accept-failure log limit of the HTTP transport (pure logic)."""

from __future__ import annotations

import logging

import pytest

from mail_imap_mcp.transport.guards import (
    ANY_PORT,
    REFUSED,
    AllowedOrigins,
    Authority,
    RateLimitedLog,
    loggable_path,
)
from tests.support.fake_clock import FakeClock


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("localhost", Authority("localhost", None)),
        ("LocalHost:8000", Authority("localhost", 8000)),
        ("[::1]:8000", Authority("[::1]", 8000)),
        ("127.0.0.1", Authority("127.0.0.1", None)),
        ("localhost:80@evil.example", None),
        ("localhost:abc", None),
        ("localhost:", None),
        ("localhost:0", None),
        ("localhost:65536", None),
        ("localhost:*", None),
        ("evil.example/localhost", None),
        ("", None),
        (" localhost", None),
    ],
)
def test_authority_is_host_and_digits_only(value: str, parsed: Authority | None) -> None:
    assert Authority.parse(value) == parsed


def test_patterns_without_a_port_or_with_a_star_admit_any_port() -> None:
    given = Authority("localhost", 8000)
    assert Authority.parse("localhost", pattern=True).admits(given)  # type: ignore[union-attr]
    assert Authority("localhost", ANY_PORT).admits(given)
    assert not Authority("localhost", 9000).admits(given)
    assert not Authority("localhost.evil", None).admits(given)


def test_origins_match_scheme_host_and_port_exactly_unless_the_port_is_a_star() -> None:
    allowed = AllowedOrigins.of(["https://agent.example.com", "http://localhost:*"])
    assert allowed.admit("https://agent.example.com")
    assert not allowed.admit("https://agent.example.com:8443")
    assert not allowed.admit("http://agent.example.com")
    assert not allowed.admit("https://agent.example.com.attacker.example")
    assert allowed.admit("http://localhost:3000")
    assert not allowed.admit("http://localhost:80@evil.example")
    assert not allowed.admit("http://localhost/path")
    assert not allowed.admit("null")


def test_accept_failures_are_logged_once_per_interval_with_a_count() -> None:
    limit = RateLimitedLog("socket.accept() out of system resource", interval_s=3600)

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)

    assert limit.filter(record("socket.accept() out of system resource"))
    assert not any(limit.filter(record("socket.accept() out of system resource")) for _ in range(1000))
    assert limit.suppressed == 1000
    assert limit.filter(record("something else"))
    limit.interval_s = 0
    passed = record("socket.accept() out of system resource")
    assert limit.filter(passed)
    assert "(1000 more suppressed)" in passed.getMessage()


def test_a_flood_over_several_intervals_logs_one_line_each_and_counts_every_other() -> None:
    # Issue 47 item 20: the HTTP test counted the lines a real flood left per interval of the wall
    # clock, which a loaded machine stretched; here the interval's clock is the test's.
    clock = FakeClock(7_000.123)
    limit = RateLimitedLog(REFUSED, interval_s=5.0, clock=clock)
    passed = []
    for index in range(77):  # a refusal every 0.3 s for 23 s: never exactly an interval after a line
        clock.now = 7_000.123 + index * 0.3
        record = logging.LogRecord("http", logging.WARNING, __file__, 1, f"{REFUSED}401 x", None, None)
        if limit.filter(record):
            passed.append(record.getMessage())
    assert len(passed) == 5  # at 0, 5.1, 10.2, 15.3 and 20.4 s
    assert passed[0] == f"{REFUSED}401 x" and all("(16 more suppressed)" in line for line in passed[1:])
    assert limit.suppressed == 8  # the last interval's, told with the next line
    clock.now += 5.0 + 0.5  # past the interval, never by exactly it
    late = logging.LogRecord("http", logging.WARNING, __file__, 1, f"{REFUSED}401 x", None, None)
    assert limit.filter(late) and "(8 more suppressed)" in late.getMessage()


def test_refusals_are_rate_limited_per_status_and_their_paths_cut() -> None:
    limit = RateLimitedLog(REFUSED, interval_s=3600)

    def refusal(status: int) -> logging.LogRecord:
        record = logging.LogRecord(
            "mail_imap_mcp.http", logging.WARNING, __file__, 1, "%s", (f"{REFUSED}{status} x",), None
        )
        record.rate_key = status
        return record

    assert limit.filter(refusal(401)) and limit.filter(refusal(421))
    assert not any(limit.filter(refusal(401)) for _ in range(50))
    assert limit.suppressed == 50
    assert loggable_path("/mcp") == "'/mcp'"
    cut = loggable_path("/" + "\x1b" * 5000)
    assert cut.endswith("... (5001 characters)") and "\x1b" not in cut and len(cut) < 500
