"""Who a reply and a reply-all go to (content.drafts.reply_recipients, draft_recipients), and its threading
headers: properties over generated headers (never the account's own address, never an address twice,
never an address that was in no header) and the cases mail clients get wrong."""

from __future__ import annotations

from email.headerregistry import Address

from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import (
    MAX_RECIPIENTS,
    MAX_REFERENCES_CHARS,
    draft_recipients,
    header_addresses,
    reply_recipients,
    thread_headers,
)
from mail_imap_mcp.presentation.shapes import MessageDetail
from tests.support.shared.save_draft import original

OWN = frozenset({"me@example.org", "me.alias@example.org"})

# A small pool, so generated headers repeat addresses, in other cases, with and without names.
_LOCAL = st.sampled_from(["me", "ME", "me.alias", "bob", "Bob", "carol", "list", "dave"])
_DOMAIN = st.sampled_from(["example.org", "EXAMPLE.org", "example.net"])
_NAME = st.sampled_from(["", "Bob", "Zoë Ünal", "Doe, John", 'say "hi"', "bob@example.net"])


@st.composite
def mailbox(draw: st.DrawFn) -> str:
    addr = f"{draw(_LOCAL)}@{draw(_DOMAIN)}"
    name = draw(_NAME)
    if not name:
        return addr
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{quoted}" <{addr}>'


def header_value() -> st.SearchStrategy[str | None]:
    return st.none() | st.lists(mailbox(), max_size=6).map(", ".join)


HEADERS = st.fixed_dictionaries(
    {},
    optional={"From": header_value(), "Reply-To": header_value(), "To": header_value(), "Cc": header_value()},
).map(lambda d: {k: v for k, v in d.items() if v is not None})


def keys(addresses: list[Address]) -> list[str]:
    return [a.addr_spec.lower() for a in addresses]


def named_in(headers: dict[str, str]) -> set[str]:
    return {a.addr_spec.lower() for value in headers.values() for a in header_addresses(value)}


@settings(max_examples=150, deadline=None)
@given(HEADERS, st.booleans())
def test_recipients_are_never_own_never_twice_never_invented(headers: dict[str, str], everyone: bool) -> None:
    to, cc = reply_recipients(headers, OWN, everyone=everyone)
    everyone_named = keys(to) + keys(cc)
    assert not set(everyone_named) & OWN
    assert len(everyone_named) == len(set(everyone_named))
    assert set(everyone_named) <= named_in(headers)
    if not everyone:
        assert cc == []


@settings(max_examples=100, deadline=None)
@given(HEADERS, st.lists(mailbox(), max_size=3), st.booleans())
def test_draft_recipients_keep_the_callers_cc_without_duplicates(
    headers: dict[str, str], cc: list[str], reply_all: bool
) -> None:
    given_cc = [a for value in cc for a in header_addresses(value)]
    to, final_cc, _ = draft_recipients([], given_cc, headers, OWN, reply_all=reply_all)
    assert len(keys(to) + keys(final_cc)) == len(set(keys(to) + keys(final_cc)))
    assert set(keys(given_cc)) <= set(keys(to) + keys(final_cc))
    assert len(to) + len(final_cc) <= MAX_RECIPIENTS


def test_reply_all_goes_to_the_sender_and_copies_the_others() -> None:
    headers = {
        "From": "Bob <bob@example.net>",
        "To": "Me <ME@Example.org>, Carol <carol@example.net>, bob@example.net",
        "Cc": "me.alias@example.org, Dave <dave@example.net>, CAROL@example.net",
    }
    to, cc = reply_recipients(headers, OWN, everyone=True)
    assert [str(a) for a in to] == ["Bob <bob@example.net>"]
    assert [str(a) for a in cc] == ["Carol <carol@example.net>", "Dave <dave@example.net>"]


def test_a_lists_reply_to_gets_the_reply_and_is_not_copied_again() -> None:
    headers = {
        "From": "Bob <bob@example.net>",
        "Reply-To": "Dev list <dev@lists.example.org>",
        "To": "dev@lists.example.org",
        "Cc": "carol@example.net",
    }
    to, cc = reply_recipients(headers, OWN, everyone=True)
    assert keys(to) == ["dev@lists.example.org"] and keys(cc) == ["carol@example.net"]
    assert reply_recipients(headers, OWN, everyone=False) == (to, [])


def test_a_reply_to_ones_own_message_goes_to_its_recipients() -> None:
    headers = {"From": "me@example.org", "To": "bob@example.net, me@example.org", "Cc": "carol@example.net"}
    to, cc = reply_recipients(headers, OWN, everyone=True)
    assert keys(to) == ["bob@example.net"] and keys(cc) == ["carol@example.net"]


def test_a_reply_to_that_is_the_user_falls_back_to_the_sender() -> None:
    headers = {"From": "bob@example.net", "Reply-To": "me@example.org"}
    assert keys(reply_recipients(headers, OWN, everyone=False)[0]) == ["bob@example.net"]


def test_a_huge_recipient_list_is_cut_with_a_warning() -> None:
    headers = {"From": "bob@example.net", "To": ", ".join(f"u{i}@example.net" for i in range(300))}
    to, cc, warnings = draft_recipients([], [], headers, OWN, reply_all=True)
    assert len(to) + len(cc) == MAX_RECIPIENTS and any("keeps the first" in w for w in warnings)


def detail(headers: dict[str, str]) -> MessageDetail:
    return original(None, headers).detail


def test_references_fall_back_to_in_reply_to() -> None:
    parent, references = thread_headers(detail({"Message-ID": "<b@x.org>", "In-Reply-To": "<a@x.org>"}))
    assert (parent, references) == ("<b@x.org>", "<a@x.org> <b@x.org>")


def test_long_references_keep_the_first_and_latest_within_one_line() -> None:
    chain = " ".join(f"<{'r' * 120}{i}@example.com>" for i in range(15))
    parent, references = thread_headers(detail({"Message-ID": "<m@x.org>", "References": chain}))
    assert references is not None and len(references) <= MAX_REFERENCES_CHARS
    ids = references.split()
    assert ids[0].endswith("0@example.com>") and ids[-2].endswith("14@example.com>")
    assert ids[-1] == parent == "<m@x.org>"


def test_the_users_addresses_are_the_setting_and_a_login_that_is_an_address() -> None:
    both = AccountConfig(
        host="h.example", username="Login@Example.org", password="x", addresses=["a@b.example"]
    )
    assert both.user_addresses == frozenset({"a@b.example", "login@example.org"})
    bare = AccountConfig(host="h.example", username="u123", password="x", addresses=["a@b.example"])
    assert bare.user_addresses == frozenset({"a@b.example"})
