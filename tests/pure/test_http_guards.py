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
