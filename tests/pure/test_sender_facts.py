"""Authentication-Results (RFC 8601) and sender warnings (mime.authentication) without a server: only a
trusted server's header counts (the configured authserv-id, or the provider's); one the sender may have
written is never reported, and its claimed pass is a warning; each warning fires on its case and none on
ordinary mail."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.mime.authentication import (
    AuthenticationResults,
    AuthenticationVerdict,
    TrustedServers,
    authentication_results,
    parse_authentication_results,
    sender_warnings,
)

RECEIVED = (
    "mx.example.org; spf=pass (sender IP is 192.0.2.1) smtp.mailfrom=bank.example; "
    "dkim=fail header.d=other.example; dkim=pass header.d=bank.example; dmarc=pass header.from=bank.example"
)
FORGED = "mx.example.org; spf=pass; dkim=pass; dmarc=pass"


MX = TrustedServers(frozenset({"mx.example.org"}))
MICROSOFT = TrustedServers(unnamed=True)


def test_the_trusted_servers_first_header_counts_and_a_forged_lower_one_is_ignored() -> None:
    real = (
        "mx.example.org; spf=fail smtp.mailfrom=evil.example; dkim=none; dmarc=fail header.from=bank.example"
    )
    assert authentication_results([real, FORGED], MX) == AuthenticationVerdict(
        AuthenticationResults("mx.example.org", spf="fail", dkim="none", dmarc="fail")
    )


def test_the_trusted_servers_header_counts_below_a_relay() -> None:
    relay = "relay.example.net; spf=none"
    found = authentication_results([relay, RECEIVED], MX)
    assert found.trusted == AuthenticationResults("mx.example.org", spf="pass", dkim="pass", dmarc="pass")
    assert authentication_results([relay], MX) == AuthenticationVerdict(None)


def test_regression_m1_a_sender_written_pass_is_never_reported_as_verified() -> None:
    # Issue 33 M1: with no authserv_id configured the topmost header counted, and where the receiving
    # server adds none (APPENDed or imported mail, a server without a milter) that is the sender's own.
    google = "mx.google.com; spf=pass; dkim=pass; dmarc=pass"
    unnamed = "spf=pass smtp.mailfrom=bank.example; dkim=pass; dmarc=pass header.from=bank.example"
    for forged in (google, unnamed):
        verdict = authentication_results([forged], TrustedServers())
        assert verdict.trusted is None and verdict.unverified_pass == parse_authentication_results(forged)
    # Another server's header is no more trusted than the sender's, and a header without an id counts
    # only where trusted, and only on top: below one it is the sender's.
    assert authentication_results([google], MX).trusted is None
    assert authentication_results([unnamed], MX).trusted is None
    assert authentication_results([unnamed], MICROSOFT).trusted == parse_authentication_results(unnamed)
    verdict = authentication_results(["spf=fail; dmarc=fail", unnamed], MICROSOFT)
    assert verdict.trusted == AuthenticationResults(None, spf="fail", dmarc="fail")
    verdict = authentication_results([RECEIVED, unnamed], MICROSOFT)
    assert verdict.trusted is None and verdict.unverified_pass is not None


def test_a_claimed_pass_from_an_untrusted_header_is_a_warning() -> None:
    verdict = authentication_results(["mx.google.com; dmarc=pass; spf=fail"], TrustedServers())
    (warning,) = sender_warnings({"from": ["Bank <bank@bank.example>"]}, verdict)
    assert warning.code == "unverified_authentication"
    assert "mx.google.com claims dmarc=pass" in warning.message
    assert (
        sender_warnings({"from": ["a@b.example"]}, authentication_results(["x; spf=fail"], TrustedServers()))
        == []
    )


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


def codes(
    from_: str, reply_to: str | None = None, dmarc: str | None = None, sender: str | None = None
) -> list[str]:
    verdict = AuthenticationVerdict(AuthenticationResults("mx.example.org", dmarc=dmarc) if dmarc else None)
    headers = {
        "from": [from_],
        "reply-to": [reply_to] if reply_to else [],
        "sender": [sender] if sender else [],
    }
    return [w.code for w in sender_warnings(headers, verdict)]


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


@pytest.mark.parametrize(
    ("from_", "sender", "expected"),
    [
        # Issue 33 L4: a full-width at sign (U+FF20) in the display name, NFKC-folded first.
        ("service\uff20paypal.com <help@evil.example>", None, ["display_name_is_other_address"]),
        (
            '"Service ｐａｙｐａｌ＠ｐａｙｐａｌ．ｃｏｍ" <help@evil.example>',
            None,
            ["display_name_is_other_address"],
        ),
        ("service\uff20example.com <service@example.com>", None, []),
        # Two From addresses (RFC 5322 then requires Sender); a Sender that is not the From.
        ("Bank <bank@bank.example>, Evil <evil@evil.example>", None, ["multiple_from_addresses"]),
        (
            "Bank <bank@bank.example>, Evil <evil@evil.example>",
            "evil@evil.example",
            ["multiple_from_addresses"],
        ),
        ("Bank <bank@bank.example>", "mailer@evil.example", ["sender_differs_from_from"]),
        ("Bank <bank@bank.example>", "BANK@bank.example", []),
    ],
)
def test_regression_l4_sender_warnings_see_folded_names_several_senders_and_sender(
    from_: str, sender: str | None, expected: list[str]
) -> None:
    assert codes(from_, sender=sender) == expected


def test_a_warning_states_the_facts() -> None:
    (warning,) = sender_warnings({"from": ['"support@paypal.com" <help@evil.example>']})
    assert "support@paypal.com" in warning.message and "help@evil.example" in warning.message
    (warning,) = sender_warnings({"from": ["bank@xn--pple-43d.com"]})[:1]
    assert "аpple.com" in warning.message  # the Cyrillic а, as it reads
