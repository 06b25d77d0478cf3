"""The compact summary's few words: recipients with 'me', the date to the minute, the message size."""

from __future__ import annotations

from pathlib import Path

import pytest

from mail_imap_mcp.config import AccountConfig, ConfigError, load_config
from mail_imap_mcp.mime.summary import short_recipients
from mail_imap_mcp.presentation.shapes import MessageSummary, compact_summary, summary_shape, to_the_minute
from tests.support.mail.summaries import make_summary

OWN = frozenset({"ana@example.org", "ana.lima@work.example"})


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (["Ana <ana@example.org>"], ""),
        (["ANA@EXAMPLE.ORG"], ""),
        (["Bob <bob@example.org>, Ana <ana@example.org>"], "me +1"),
        (["Bob <bob@example.org>", "Ana Lima <ana.lima@work.example>, cy@example.org"], "me +2"),
        (["Bob <bob@example.org>", "cy@example.org"], "Bob +1"),
        (["cy@example.org"], "cy@example.org"),
        (["team: Bob <bob@example.org>, Cy <cy@example.org>;"], "Bob +1"),
        # A stranger whose display name is "me" is shown by address, never as this account.
        (["me <mallory@evil.example>"], "mallory@evil.example"),
        (["ME <mallory@evil.example>, Ana <ana@example.org>"], "me +1"),
        (["undisclosed-recipients:;"], "undisclosed-recipients:;"),
        # Named twice (To and Cc), or under two of the account's addresses: counted once.
        (["Ana <ana@example.org>", "ana@example.org, Ana Lima <ana.lima@work.example>"], ""),
        (["Bob <bob@example.org>, Ana <ana@example.org>", "BOB@example.org"], "me +1"),
        (["Bob <bob@example.org>", "bob@example.org, Cy <cy@example.org>"], "Bob +1"),
        ([], None),
    ],
)
def test_short_recipients_say_me_for_this_account_and_count_the_others(
    headers: list[str], expected: str | None
) -> None:
    assert short_recipients(headers, OWN) == expected


def test_without_own_addresses_the_first_recipient_is_named() -> None:
    assert short_recipients(["Ana <ana@example.org>, Bob <bob@example.org>"]) == "Ana +1"


@pytest.mark.parametrize(
    ("date", "expected"),
    [
        ("2026-11-21T23:51:07Z", "2026-11-21T23:51Z"),
        ("2026-11-21T23:51:00Z", "2026-11-21T23:51Z"),
        (None, None),
        ("not a date", "not a date"),
    ],
)
def test_a_summary_date_is_cut_to_the_minute(date: str | None, expected: str | None) -> None:
    assert to_the_minute(date) == expected


def _summary(
    short: str | None, to: str | None = "Ana <ana@example.org>", cc: str | None = None
) -> MessageSummary:
    return summary_shape(
        make_summary(
            date="2026-11-21T23:51:07Z",
            from_="Bob <bob@example.org>",
            to=to,
            cc=cc,
            subject="hello",
            flags=["\\Seen"],
            size_bytes=1234,
            short_recipients=short,
        )
    )


def test_mail_to_this_account_alone_has_no_to_in_the_compact_shape() -> None:
    brief = compact_summary(_summary(""))
    dumped = brief.model_dump(mode="json")
    assert "to" not in dumped and "cc" not in dumped
    assert dumped == {
        "message_id": "imap:default:INBOX:7:1",
        "date": "2026-11-21T23:51Z",
        "from": "Bob <bob@example.org>",
        "subject": "hello",
        "size": 1234,
    }


def test_a_summary_without_short_recipients_falls_back_to_to_then_cc() -> None:
    assert compact_summary(_summary(None)).to == "Ana <ana@example.org>"
    assert compact_summary(_summary(None, to=None, cc="Cy <cy@example.org>")).to == "Cy <cy@example.org>"
    assert compact_summary(_summary("me +2")).to == "me +2"


def _account(**settings: object) -> AccountConfig:
    return AccountConfig.model_validate(
        {"host": "imap.example.org", "username": "ana", "password_env": "PW", **settings}
    )


def test_own_addresses_default_to_a_username_that_is_an_address() -> None:
    assert _account().own_addresses == frozenset()
    assert _account(username="Ana@Example.org").effective_addresses == ["Ana@Example.org"]
    assert _account(username="Ana@Example.org").own_addresses == frozenset({"ana@example.org"})
    listed = _account(username="Ana@Example.org", addresses=["a@b.example", " c@d.example "])
    assert listed.effective_addresses == ["a@b.example", "c@d.example"]


def test_an_address_that_is_not_one_is_refused_by_its_setting(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[accounts.work]\nhost = "imap.example.org"\nusername = "ana"\npassword_env = "PW"\n'
        'addresses = ["ana@example.org", "Ana Lima"]\n'
    )
    with pytest.raises(ConfigError, match=r"accounts\.work\.addresses: 'Ana Lima' is not an email address"):
        load_config(path, env={})
