"""``allowed_recipients``: the matcher every send will ask (addresses, exact domains, subdomains, "*"),
and ``send_enabled``, refused at load without it and never implied by write_enabled."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.config.recipients import AllowedRecipients, NotAnEntry

ACCOUNT = {"host": "imap.gmail.com", "username": "me@gmail.com", "password_env": "P"}


@pytest.mark.parametrize(
    ("entries", "recipient", "allowed"),
    [
        (["@example.com"], "bob@example.com", True),
        (["@example.com"], "Bob@EXAMPLE.com.", True),  # case-folded, a final dot is the same domain
        (["@example.com"], "bob@sub.example.com", False),  # a domain entry is that domain exactly
        (["@example.com"], "bob@example.com.evil.org", False),
        (["@example.com"], "bob@notexample.com", False),
        (["*.example.com"], "bob@sub.example.com", True),
        (["*.example.com"], "bob@a.b.example.com", True),
        (["*.example.com"], "bob@example.com", False),  # subdomains only
        (["*.example.com"], "bob@badexample.com", False),
        (["bob@example.com"], "BOB@Example.COM", True),
        (["bob@example.com"], "eve@example.com", False),
        (["bob@example.com"], "bob@example.com@evil.org", False),
        # IDNA: the U-label and the A-label of one domain are one domain, either way round.
        (["@bücher.example"], "anna@xn--bcher-kva.example", True),
        (["@xn--bcher-kva.example"], "anna@BÜCHER.example", True),
        (["@bücher.example"], "anna@bucher.example", False),
        (["*"], "anyone@anywhere.example", True),
        ([], "bob@example.com", False),
        (["@example.com"], "not an address", False),
        (["@example.com"], "@example.com", False),
    ],
)
def test_a_recipient_is_allowed_exactly_as_the_entries_say(
    entries: list[str], recipient: str, allowed: bool
) -> None:
    assert AllowedRecipients.parse(entries).allows(recipient) is allowed


@pytest.mark.parametrize(
    "entry", ["example.com", "*example.com", "@", "@exa mple.com", "bob@", "@a..b", "**"]
)
def test_an_entry_of_no_known_form_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(NotAnEntry, match="is not an allowed recipient"):
        AllowedRecipients.parse(["@ok.example", entry])


def test_sending_is_off_by_default_and_never_implied_by_write_enabled() -> None:
    config = Config.model_validate({"accounts": {"a": ACCOUNT}, "server": {"write_enabled": True}})
    assert config.writes_allowed("a") and not config.accounts["a"].send_enabled
    account = AccountConfig.model_validate({**ACCOUNT, "write_enabled": True})
    assert not account.send_enabled


def test_send_enabled_without_allowed_recipients_is_refused_at_load() -> None:
    with pytest.raises(ValidationError, match="send_enabled = true needs allowed_recipients"):
        AccountConfig.model_validate({**ACCOUNT, "send_enabled": True})
    with pytest.raises(ValidationError, match=r"allowed_recipients: 'example\.com' is not"):
        AccountConfig.model_validate({**ACCOUNT, "send_enabled": True, "allowed_recipients": ["example.com"]})
    anyone = AccountConfig.model_validate({**ACCOUNT, "send_enabled": True, "allowed_recipients": ["*"]})
    assert anyone.recipients_allowed.allows("x@y.example")


def test_regression_send_enabled_without_a_submission_server_still_loads() -> None:
    """Issue 56 item 9: the server refused to start; reading must work, and a send names the setting."""
    own = {"host": "mail.example.org", "username": "u", "password_env": "P"}
    without = AccountConfig.model_validate({**own, "send_enabled": True, "allowed_recipients": ["*"]})
    assert without.send_enabled is True and without.submission is None
    named = {**own, "smtp": {"host": "smtp.example.org"}, "send_enabled": True, "allowed_recipients": ["*"]}
    assert AccountConfig.model_validate(named).submission is not None
