"""imap_save_draft's message building (content.drafts, services.drafts.build_draft) without a server: reply subject,
threading headers, quoting, addresses."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import MAX_REFERENCES, check_address, thread_headers
from mail_imap_mcp.services.drafts import Original, build_draft
from mail_imap_mcp.tools.save_draft.models import SaveDraftInput
from tests.support.shared.save_draft import original

ACCOUNT = AccountConfig(host="imap.example.com", username="me@example.org", password="x")


def _build(
    args: SaveDraftInput, account: AccountConfig, original: Original | None
) -> tuple[EmailMessage, list[str]]:
    """The draft the tool would build from ``args``."""
    return build_draft(account, original, args)


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [
        ("Budget", "Re: Budget"),
        ("Re: Budget", "Re: Budget"),
        ("RE : x", "Re: x"),
        ("re:x", "Re: x"),
        ("Re: Re: RE: x", "Re: x"),
        ("AW: Termin", "Re: Termin"),
        ("SV: Re: Möte", "Re: Möte"),
        ("Re[2]: x", "Re: x"),
        ("Antw: VS: x", "Re: x"),
        ("回复：会议", "Re: 会议"),
        ("Fwd: x", "Re: Fwd: x"),
        ("Reunion", "Re: Reunion"),
        ("Area: x", "Re: Area: x"),
        (None, "Re:"),
    ],
)
def test_reply_subject_gets_one_re(theirs: str | None, ours: str) -> None:
    message, _ = _build(SaveDraftInput(in_reply_to="imap:default:INBOX:7:3"), ACCOUNT, original(theirs, {}))
    assert message["Subject"] == ours


def test_references_keep_the_first_and_the_latest() -> None:
    chain = " ".join(f"<r{i}@example.com>" for i in range(50))
    parent, references = thread_headers(
        original("s", {"Message-ID": "<m@example.com>", "References": chain + " junk <no-at-sign>"}).detail
    )
    assert parent == "<m@example.com>"
    assert references is not None
    ids = references.split()
    assert len(ids) == MAX_REFERENCES
    assert ids[0] == "<r0@example.com>" and ids[-2:] == ["<r49@example.com>", "<m@example.com>"]


def test_quote_marks_a_cut_original_and_from_defaults_to_the_login() -> None:
    message, warnings = _build(
        SaveDraftInput(body_text="Ok.", in_reply_to="imap:default:INBOX:7:3"),
        ACCOUNT,
        original("s", {"Date": "Thu, 14 Mar 2024 09:26:53 +0100"}, body="a\n\nb", truncated=True),
    )
    assert message.get_content() == (
        "Ok.\n\nOn Thu, 14 Mar 2024 09:26:53 +0100, Alice <alice@example.com> wrote:\n> a\n>\n> b\n> [...]\n"
    )
    assert str(message["From"]) == "me@example.org"
    assert str(message["To"]) == "Alice <alice@example.com>"  # no Reply-To: From
    assert message["In-Reply-To"] is None and any("no Message-ID" in w for w in warnings)
    assert str(message["Message-ID"]).endswith("@example.org>")


def test_a_draft_is_from_the_first_configured_address_when_the_login_is_not_one() -> None:
    account = AccountConfig(
        host="imap.example.com",
        username="ana",
        password="x",
        addresses=["ana.lima@work.example", "a@b.example"],
    )
    message, warnings = _build(SaveDraftInput(to=["bob@example.org"], body_text="Hi"), account, None)
    assert str(message["From"]) == "ana.lima@work.example" and warnings == []
    assert str(message["Message-ID"]).endswith("@work.example>")
    bare = AccountConfig(host="imap.example.com", username="ana", password="x")
    message, warnings = _build(SaveDraftInput(to=["bob@example.org"], body_text="Hi"), bare, None)
    assert message["From"] is None and any("sets no addresses" in w for w in warnings)


@pytest.mark.parametrize(
    "value",
    ["a@b.c\r\nBcc: x@y.z", "a b@c.d", "a@", "@b.c", "x@y.z, z@w.v", "g: a@b.c;", "plain", "ü@exämple.de"],
)
def test_only_one_plain_address_passes(value: str) -> None:
    with pytest.raises(ValueError):
        check_address(value)


def test_addresses_with_names_pass() -> None:
    for value in ("a@b.c", "Zoë <z@example.com>", '"Doe, John" <jd@example.org>', "<x@localhost>"):
        assert check_address(value) == value
