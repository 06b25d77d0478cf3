"""Authentication-Results (RFC 8601) and sender warnings (mime.authentication) without a server: the
topmost header counts, or the configured authserv-id's; forged lower ones are ignored; each warning fires
on its case and none on ordinary mail."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.mime.authentication import (
    AuthenticationResults,
    authentication_results,
    parse_authentication_results,
    sender_warnings,
)

RECEIVED = (
    "mx.example.org; spf=pass (sender IP is 192.0.2.1) smtp.mailfrom=bank.example; "
    "dkim=fail header.d=other.example; dkim=pass header.d=bank.example; dmarc=pass header.from=bank.example"
)
FORGED = "mx.example.org; spf=pass; dkim=pass; dmarc=pass"


def test_the_topmost_header_counts_and_a_forged_lower_one_is_ignored() -> None:
    real = (
        "mx.example.org; spf=fail smtp.mailfrom=evil.example; dkim=none; dmarc=fail header.from=bank.example"
    )
    assert authentication_results([real, FORGED]) == AuthenticationResults(
        "mx.example.org", spf="fail", dkim="none", dmarc="fail"
    )


def test_the_configured_authserv_id_picks_its_header_below_a_relay() -> None:
    relay = "relay.example.net; spf=none"
    found = authentication_results([relay, RECEIVED], "MX.example.org")
    assert found == AuthenticationResults("mx.example.org", spf="pass", dkim="pass", dmarc="pass")
    assert authentication_results([relay], "mx.example.org") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "mx.google.com;\r\n       dkim=pass header.i=@a.example",
            AuthenticationResults("mx.google.com", dkim="pass"),
        ),
        ("example.org 1; none", AuthenticationResults("example.org")),
        (
            "spf=pass (sender IP is 192.0.2.1) smtp.mailfrom=a.example; dkim=pass header.d=a.example;dmarc=pass "
            "action=none header.from=a.example;compauth=pass reason=100",
            AuthenticationResults(None, spf="pass", dkim="pass", dmarc="pass"),
        ),
        (
            "mx.example.org (a (nested) comment); spf=PASS; dmarc=bogus",
            AuthenticationResults("mx.example.org", spf="pass", dmarc="unknown"),
        ),
        ("", None),
        ("; spf=pass", None),
    ],
)
def test_header_values_parse(value: str, expected: AuthenticationResults | None) -> None:
    assert parse_authentication_results(value) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_header_text_parses_or_is_refused_without_raising(value: str) -> None:
    found = parse_authentication_results(value)
    if found is not None:
        for result in (found.spf, found.dkim, found.dmarc):
            assert result is None or result.isalpha()


def codes(from_: str, reply_to: str | None = None, dmarc: str | None = None) -> list[str]:
    results = AuthenticationResults("mx.example.org", dmarc=dmarc) if dmarc else None
    return [w.code for w in sender_warnings([from_], [reply_to] if reply_to else [], results)]


@pytest.mark.parametrize(
    ("from_", "reply_to", "dmarc", "expected"),
    [
        # Ordinary mail: nothing to say.
        ("Alice <alice@example.com>", None, "pass", []),
        ("alice@example.com", "Alice <alice@EXAMPLE.com>", None, []),
        ("Alice <alice@example.com>", "help@support.example.com", None, []),
        ('"alice@example.com" <ALICE@example.com>', None, None, []),
        ("Zoë Ünal <zoe@example.de>", None, None, []),
        # The cases.
        ('"support@paypal.com" <help@evil.example>', None, None, ["display_name_is_other_address"]),
        ("Bank <bank@bank.example>", None, "fail", ["dmarc_fail"]),
        ("Bank <bank@xn--bnk-qla.example>", None, None, ["punycode_domain"]),
        ("Bank <bank@xn--pple-43d.com>", None, None, ["punycode_domain", "mixed_script_domain"]),
        ("Alice <alice@example.com>", "Alice <alice@elsewhere.example>", None, ["reply_to_other_domain"]),
    ],
)
def test_sender_warnings_fire_on_their_case_only(
    from_: str, reply_to: str | None, dmarc: str | None, expected: list[str]
) -> None:
    assert codes(from_, reply_to, dmarc) == expected


def test_a_warning_states_the_facts() -> None:
    (warning,) = sender_warnings(['"support@paypal.com" <help@evil.example>'], [], None)
    assert "support@paypal.com" in warning.message and "help@evil.example" in warning.message
    (warning,) = sender_warnings(["bank@xn--pple-43d.com"], [], None)[:1]
    assert "аpple.com" in warning.message  # the Cyrillic а, as it reads
