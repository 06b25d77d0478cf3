"""The short ways a page seen first takes (issue 22) give what the longer ways they replace gave.

Each fast path is compared with the path it shortcuts, on ordinary and hostile inputs: Date headers
read without the email package's parser, Content-Type parameters split without a loop per character,
a part's header block left unparsed when it cannot say multipart, a single part's BODYSTRUCTURE leaf
not read twice, a compact page of one mailbox built without the full page; and since the third pass,
header values not translated when printable, address header values decoded once per raw value, the
quote patterns of new_text tried only on text holding their marks, a mailbox quoted once.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.content import quotes
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.imap.bodystructure import parse_bodystructure, structure_mismatch
from mail_imap_mcp.imap.fetch import find_item
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.mime import dates, headers, snippets, summary
from mail_imap_mcp.mime.addresses import Address, format_address_quoted, parse_address_list
from mail_imap_mcp.mime.header_text import HEADER_CONTROL, decode_header_value, drop_controls
from mail_imap_mcp.mime.params import split_header_params, split_quoted
from mail_imap_mcp.presentation.search_page import (
    PageFound,
    compact_page,
    compact_search_result,
    named_in_summary,
    search_result,
)

# -- split_quoted -------------------------------------------------------------------------------


def _split_quoted_reference(value: str) -> list[str]:
    """split_quoted as it was: a loop over every character."""
    items: list[str] = []
    current: list[str] = []
    quoted = False
    index = 0
    while index < len(value):
        ch = value[index]
        if quoted and ch == "\\" and index + 1 < len(value):
            current.append(value[index + 1])
            index += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
        index += 1
    items.append("".join(current))
    return items


@pytest.mark.parametrize(
    "value",
    [
        "",
        '"',
        "\\",
        '"\\',
        '"a\\"b";c',
        'text/plain; charset="utf-8"',
        'multipart/mixed; boundary="a;b\\"c"; x=y',
        'attachment; filename="a\\\\b;c.pdf"',
        'x; a="unterminated; b=c',
        "a\\;b;c",
        '";";";"',
        'a="\\',
        'é; name="ü;ß"; x',
        '"' * 10_000 + ";" * 10_000,
        'text/html; charset="' + "x" * 100_000 + '"',
    ],
)
def test_split_quoted_gives_what_the_character_loop_gave(value: str) -> None:
    assert split_quoted(value) == _split_quoted_reference(value)


def test_split_quoted_matches_the_character_loop_on_random_quoting() -> None:
    generator = random.Random(22)
    alphabet = ['"', "\\", ";", "a", " ", "=", "é", "\t", "\n"]
    for _ in range(5_000):
        value = "".join(generator.choice(alphabet) for _ in range(generator.randrange(0, 24)))
        assert split_quoted(value) == _split_quoted_reference(value), value


def test_split_header_params_with_quotes_is_unchanged() -> None:
    assert split_header_params('text/plain; charset="utf-8"; format=flowed') == (
        "text/plain",
        [("charset", "utf-8"), ("format", "flowed")],
    )


# -- Date headers -------------------------------------------------------------------------------


def _general_date(monkeypatch: pytest.MonkeyPatch, text: str) -> datetime | None:
    """_try_parse_date as it was: the email package's parser (then ISO 8601) for every date."""
    with monkeypatch.context() as patched:
        patched.setattr(dates, "_common_date", lambda text: None)
        return dates._try_parse_date(text)


@pytest.mark.parametrize(
    "text",
    [
        "Thu, 14 Mar 2024 09:26:53 +0100",
        "14 Mar 2024 09:26:53 +0100",
        "Thu, 4 Mar 2024 09:26:53 -0530",
        "Thu, 04 Mar 2024 09:26:53 -0000",
        "Thu, 14 Mar 2024 09:26:53 +0000",
        "Thu, 14 Mar 2024 09:26:53 +0099",
        "Thu, 14 Mar 2024 09:26:53 +2359",
        "Thu, 14 Mar 2024 09:26:53 +2400",
        "Thu, 14 Mar 2024 09:26:53 -9999",
        "Thu, 31 Feb 2024 09:26:53 +0100",
        "Thu, 00 Mar 2024 09:26:53 +0100",
        "Thu, 14 Mar 2024 24:00:00 +0100",
        "Thu, 14 Mar 2024 23:59:60 +0100",
        "Thu, 14 Mar 0050 09:26:53 +0100",
        "Thu, 14 Mar 1000 00:00:00 +0100",
        "Fri, 31 Dec 9999 23:59:59 -2359",
        "Mon, 1 Jan 1000 00:00:00 +2359",
        "Xyz, 14 Mar 2024 09:26:53 +0100",
        "Thu, 14 mar 2024 09:26:53 +0100",
        "Thu, 14 Mar 24 09:26:53 +0100",
        "Thu, 14 Mar 2024 09:26 +0100",
        "Thu, 14 Mar 2024 09:26:53 CET",
        "Thu, 14 Mar 2024 09:26:53",
        "2024-03-14T09:26:53+01:00",
        "",
        "garbage",
    ],
)
def test_common_dates_read_as_the_email_package_reads_them(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    assert dates._try_parse_date(text) == _general_date(monkeypatch, text)


def test_random_common_dates_read_as_the_email_package_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = random.Random(22)
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    for _ in range(3_000):
        text = (
            f"{generator.choice(['', 'Mon, ', 'Sun, '])}{generator.randrange(0, 33)} {generator.choice(months)} "
            f"{generator.randrange(1000, 10_000)} {generator.randrange(0, 26):02d}:{generator.randrange(0, 61):02d}:"
            f"{generator.randrange(0, 62):02d} {generator.choice('+-')}{generator.randrange(0, 100):02d}"
            f"{generator.randrange(0, 100):02d}"
        )
        assert dates._try_parse_date(text) == _general_date(monkeypatch, text), text


def test_parse_date_of_a_folded_header_with_a_comment() -> None:
    assert dates.parse_date("Thu, 14 Mar 2024\r\n 09:26:53 +0100 (CET)") == datetime(
        2024, 3, 14, 8, 26, 53, tzinfo=UTC
    )


# -- a part's header block in the snippet's short way --------------------------------------------


def _snippet_without_the_shortcut(
    monkeypatch: pytest.MonkeyPatch, prefix: bytes, parts: Any, boundary: str
) -> Any:
    with monkeypatch.context() as patched:
        patched.setattr(snippets, "_cannot_say_multipart", lambda block: False)
        return snippets.snippet_from_prefix(prefix, parts, boundary=boundary)


def _nested(part_header: bytes, inner_header: bytes = b"Content-Type: text/plain\r\n") -> bytes:
    return (
        b"--outer\r\n" + part_header + b"\r\n"
        b"--inner\r\n" + inner_header + b"\r\n"
        b"The inner text.\r\n--inner--\r\n"
        b"--outer\r\nContent-Type: text/plain\r\n\r\nthe second part\r\n--outer--\r\n"
    )


TEXT_LEAF = (b"text", b"plain", None, None, None, b"7bit", 15, 1)
#: multipart/mixed (multipart/alternative (text/plain), text/plain): the body is section 1.1.
NESTED_STRUCTURE = ([([TEXT_LEAF], b"alternative"), TEXT_LEAF], b"mixed")
#: multipart/mixed (text/plain, text/plain): the body is section 1.
FLAT_STRUCTURE = ([TEXT_LEAF, TEXT_LEAF], b"mixed")


@pytest.mark.parametrize(
    "part_header",
    [
        b'Content-Type: multipart/alternative; boundary="inner"\r\n',
        b"Content-Type: Multipart/Alternative;\r\n boundary=inner\r\n",
        b'Content-Type: multipart/alternative; boundary="inner"\r\nContent-Transfer-Encoding: 7bit\r\n',
        # Spelled so that only decoding says multipart: control characters dropped, encoded-words.
        b'Content-Type: multi\x01part/alternative; boundary="inner"\r\n',
        b'Content-Type: multi\xc2\x80part/alternative; boundary="inner"\r\n',
        b'Content-Type: =?utf-8?q?multipart/alternative?=; boundary="inner"\r\n',
        b'Content-Type: text/plain; charset="utf-8"\r\n',
        b"Content-Type: text/plain; charset=\xff\r\n",
        b"Content-Type: text/plain;\r\n\tcharset=us-ascii\r\n",
        b"X-Note: =?utf-8?q?hello?=\r\nContent-Type: text/plain\r\n",
        b"",
        b"Content-Type:\r\n",
        b"Content-Type: text/plain\r\nX-Huge: " + b"y" * 200_000 + b"\r\n",
        b"Content-Type: text/plain\r\nX-Many: " + b"multipart " * 2_000 + b"\r\n",
    ],
)
def test_part_headers_read_as_the_full_parse_reads_them(
    monkeypatch: pytest.MonkeyPatch, part_header: bytes
) -> None:
    for structure in (NESTED_STRUCTURE, FLAT_STRUCTURE):
        parts = parse_bodystructure(structure)
        prefix = _nested(part_header)
        assert snippets.snippet_from_prefix(prefix, parts, boundary="outer") == _snippet_without_the_shortcut(
            monkeypatch, prefix, parts, "outer"
        )


def test_a_nested_multipart_spelled_with_a_control_character_is_still_followed() -> None:
    parts = parse_bodystructure(NESTED_STRUCTURE)
    assert parts[0].section == "1.1"
    prefix = _nested(b'Content-Type: multi\x01part/alternative; boundary="inner"\r\n')
    assert snippets.snippet_from_prefix(prefix, parts, boundary="outer") == "The inner text."


def test_a_plain_part_header_needs_no_parse() -> None:
    assert snippets._cannot_say_multipart(b"\r\nContent-Type: text/plain;\r\n charset=utf-8\r\n\r\n")
    assert not snippets._cannot_say_multipart(b"\r\nContent-Type: MULTIPART/mixed\r\n\r\n")
    assert not snippets._cannot_say_multipart(b"\r\nContent-Type: =?us-ascii?q?text/plain?=\r\n\r\n")
    assert not snippets._cannot_say_multipart(b"\r\nContent-Type: text/plain\x00\r\n\r\n")
    assert not snippets._cannot_say_multipart("\r\nContent-Type: text/plain; name=é\r\n\r\n".encode())


# -- a single part's BODYSTRUCTURE leaf, read once ----------------------------------------------

STRUCTURES: list[Any] = [
    (b"text", b"plain", (b"charset", b"utf-8"), None, None, b"7bit", 120, 4),
    (b"TEXT", b"HTML", (b"charset", b"utf-8"), None, None, b"quoted-printable", 120, 4, None, None, None),
    (b"application", b"pdf", (b"name", b"a.pdf"), None, None, b"base64", 9000, None, (b"attachment", None)),
    (b"message", b"rfc822", None, None, None, b"7bit", 300),
    (b"text", None, None, None, None, None, None),
    (None, b"plain", None, None, None, b"7bit", 1),
    (b"x" * 5_000, b"y", None, None, None, b"7bit", 1),
    FLAT_STRUCTURE,
    NESTED_STRUCTURE,
]
CONTENT_TYPES = [
    None,
    "",
    "text/plain",
    "text/html; charset=utf-8",
    'multipart/mixed; boundary="b"',
    "multipart/mixed",
    'Text/HTML;\r\n charset="utf-8"',
    "application/pdf",
    "garbage",
    "=?utf-8?q?text/html?=",
    "text/html; " + "x=y; " * 5_000,
]


@pytest.mark.parametrize("structure", STRUCTURES)
def test_structure_mismatch_with_the_parts_read_says_what_it_said_without(structure: Any) -> None:
    parts = parse_bodystructure(structure)
    for content_type in CONTENT_TYPES:
        assert structure_mismatch(structure, content_type, parts) == structure_mismatch(
            structure, content_type
        )


def test_courier_text_plain_for_an_html_message_is_still_doubted() -> None:
    structure = (b"text", b"plain", (b"charset", b"us-ascii"), None, None, b"7bit", 120, 4)
    assert structure_mismatch(structure, "text/html", parse_bodystructure(structure)) == (
        "it says text/plain where the Content-Type header says text/html"
    )


# -- display names quoted when they hold a special ----------------------------------------------


def test_display_names_are_quoted_when_they_hold_an_rfc5322_special() -> None:
    specials = '()<>[]:;@\\,."'
    generator = random.Random(22)
    alphabet = [*specials, "a", " ", "é", "\t", "-"]
    for _ in range(5_000):
        name = "".join(generator.choice(alphabet) for _ in range(generator.randrange(1, 10)))
        quoted = format_address_quoted(Address(name, "a@example.org"))
        assert quoted.startswith('"') == any(ch in specials for ch in name), name


# -- fetch items found by prefix ----------------------------------------------------------------


def _find_item_reference(response: dict[Any, Any], prefix: bytes) -> Any:
    """find_item as it was: every key upper-cased."""
    for key, value in response.items():
        if isinstance(key, bytes) and key.upper().startswith(prefix):
            return value
    return None


def test_find_item_finds_what_upper_casing_every_key_found() -> None:
    response: dict[Any, Any] = {
        b"SEQ": 1,
        b"FLAGS": (b"\\Seen",),
        "BODY[TEXT]<0>": "a str key is no match",
        b"body[header.fields (date)]<0>": b"lower-case echo",
        b"BODY[HEADER.FIELDS (FROM)]<0>": b"second",
        b"": b"empty key",
        b"BODY[TEXT]<0>": b"text",
        b"bODY[]<0>": b"whole",
    }
    for prefix in (b"BODY[HEADER", b"BODY[TEXT]", b"BODY[]", b"BODY[1.2]", b"FLAGS", b"SEQ", b"", b"X", b"b"):
        assert find_item(response, prefix) == _find_item_reference(response, prefix), prefix


# -- a compact page of one mailbox built without the full page --------------------------------------


def _record(uid: int, **fields: Any) -> SummaryRecord:
    ref = MessageRef("work", "Projects/Ops", 7, uid)
    values: dict[str, Any] = {
        "message_id": ref.message_id,
        "message_uri": ref.message_uri,
        "message_raw_uri": ref.message_raw_uri,
        "mailbox": ref.mailbox,
        "uidvalidity": 7,
        "uid": uid,
        "date": "2026-11-21T23:51:07Z",
        "from_": "Ana Lima <ana@example.org>",
        "to": "Bo <bo@example.com>",
        "cc": None,
        "subject": "Re: the plan",
        "flags": ["\\Seen"],
        "size_bytes": 2210,
        "has_attachments": False,
        "snippet": "Looks good to me.",
    }
    return SummaryRecord(**{**values, **fields})


RECORDS = [
    _record(9),
    _record(8, short_recipients="me +2", flags=[], has_attachments=True, cc="Cy <cy@example.net>"),
    _record(7, short_recipients="", to=None, subject=None, snippet=None, date=None, flags=["\\Flagged", "$X"]),
    _record(6, from_=None, to=None, cc="Cy <cy@example.net>", date="2026-01-01T00:00:00+01:00", size_bytes=0),
    _record(5, subject="\u202eevil\u0000 – ünïcode", snippet="", short_recipients="Bo +1", flags=["\\Seen", "\\Answered"]),
]  # fmt: skip
ISSUE = Issue(
    code="parse_failed", stage="parse_headers", message="UID 4: could not parse", retryable=False, uid=4
)


@pytest.mark.parametrize(
    ("messages", "issues", "next_cursor", "returned_before"),
    [
        (RECORDS, [], "c1", 0),
        (RECORDS[:2], [ISSUE], None, 40),
        ([], [], None, 0),
        ([], [ISSUE], "c2", 20),
    ],
)
@pytest.mark.parametrize("by_date", [False, True], ids=["arrival", "date"])
def test_a_compact_page_built_directly_is_the_compact_form_of_the_full_page(
    messages: list[SummaryRecord],
    issues: list[Issue],
    next_cursor: str | None,
    returned_before: int,
    by_date: bool,
) -> None:
    page = PageFound(
        mailbox="Projects/Ops",
        where=named_in_summary("Projects/Ops"),
        total=1234,
        returned_before=returned_before,
        attempted=len(messages) + len(issues),
        messages=messages,
        next_cursor=next_cursor,
        issues=issues,
        warnings=["1 message(s) could not be read; see data.issues."] if issues else [],
    )
    full = search_result(
        {"account_id": "work", "mailbox": "Projects/Ops", "limit": 20},
        page,
        account_id="work",
        mailboxes=["Projects/Ops"],
        by_date=by_date,
        has_more=next_cursor is not None,
    )
    shortcut, expected = compact_search_result(page, by_date=by_date), compact_page(full)
    assert (shortcut.summary, shortcut.warnings, shortcut.media) == (expected.summary, expected.warnings, [])
    assert shortcut.data.model_dump_json(by_alias=True) == expected.data.model_dump_json(by_alias=True)
    assert type(shortcut.data) is type(expected.data)


# -- header values not translated when printable ----------------------------------------------------

_CONTROLLED = [
    "",
    "plain ascii",
    "tab\there",
    "line\r\nbreak",
    "bare\rcr",
    "nul\x00 esc\x1b[2J del\x7f",
    "c1 \x85 \x9b csi \x9f",
    "no-break\u00a0space, line\u2028separator, bidi\u202e",
    "combining e\u0301, emoji \U0001f600, zwj \u200d",
    "\x80\xa0\xff latin-1 range",
]


@pytest.mark.parametrize("value", _CONTROLLED)
def test_drop_controls_is_the_translation(value: str) -> None:
    assert drop_controls(value) == value.translate(HEADER_CONTROL)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x30FF), max_size=40))
def test_drop_controls_is_the_translation_of_any_text(value: str) -> None:
    assert drop_controls(value) == value.translate(HEADER_CONTROL)


# -- address header values decoded once per raw value ---------------------------------------------


def _address_value_reference(raw: bytes) -> str:
    """An address header's value as parse_header_block decoded it before values were kept."""
    return ", ".join(format_address_quoted(a) for a in parse_address_list(raw)) or decode_header_value(raw)


_ADDRESS_VALUES = [
    b" Bob <bob@example.org>",
    b' "Smith, Bob" <bob@example.org>, =?utf-8?q?J=C3=BCrgen?= <j@example.de>',
    b" =?iso-8859-1?q?Andr=E9?= <a@example.fr>",
    b" =?shift_jis?B?k/qWe4zq?= <jp@example.jp>",
    b" Friends: a@x.example, b@y.example;",
    b" undisclosed-recipients:;",
    b" just a phrase",
    b" b@y.example (Bob in a comment)",
    b" \xc3\xa9t\xc3\xa9 <8bit@example.org>",
    b" caf\xe9 <latin1@example.org>",
    b" Ctrl\x01\x1b[2J <c@example.org>",
    b" Folded\r\n\t<folded@example.org>",
    b" <@route,@a:user@host>",
    b"",
    b" " + b", ".join(b"r%d@example.com" % i for i in range(200)),  # past the kept size
]


@pytest.mark.parametrize("raw", _ADDRESS_VALUES)
def test_address_header_values_kept_are_what_decoding_gives(raw: bytes) -> None:
    block = b"From:" + raw + b"\r\nTo:" + raw + b"\r\nSubject: s\r\n\r\n"
    for _ in range(2):  # the second time from what was kept
        parsed = headers.parse_header_block(block)
        assert parsed["from"] == parsed["to"] == [_address_value_reference(raw)]


def test_a_long_address_header_value_is_not_kept() -> None:
    long_value = _ADDRESS_VALUES[-1]
    assert len(long_value) > headers._KEPT_ADDRESS_BYTES
    before = headers._address_value.cache_info().currsize
    headers.parse_header_block(b"To:" + long_value + b"\r\n\r\n")
    assert headers._address_value.cache_info().currsize == before


# -- the quote patterns of new_text tried only on text holding their marks -------------------------

_LINES = [
    "Hello Bob,",
    "> quoted",
    "   > indented quote",
    "On Tue, 18 Nov 2026, Bob <b@x> wrote:",
    "From: Alice",
    "VON : Alice",
    "-- ",
    "—",
    "-----Original Message-----",
    "Sent from my iPhone",
    "  SENT FROM MY \u212aindle",  # the Kelvin sign matches k when case is ignored
    "Envoyé de mon iPad",
    "a > b and c: d",
    "ratio 3:2",
    "http://example.org",
    "\u00a0\u2028",
    "",
]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_LINES), max_size=6), st.sampled_from(["\n", "\r\n", " "]))
def test_the_marks_never_hide_a_pattern_that_finds_something(lines: list[str], joint: str) -> None:
    text = joint.join(lines)
    assert quotes._may_leave_out(text) == any(pattern.search(text) for _, pattern in quotes._MAYBE)


# -- a mailbox quoted once --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mailbox", ["INBOX", "Projects/Ops", "a b%c?d#e", "Entwürfe", "INBOX.Sent Items", "x&y+z"]
)
def test_a_message_uri_quotes_its_mailbox_as_quote_does(mailbox: str) -> None:
    from urllib.parse import quote

    for _ in range(2):  # the second time from what was kept
        uri = MessageRef("work", mailbox, 7, 42).message_uri
        assert uri == f"imap://work/mailbox/{quote(mailbox, safe='')}/message/7/42"


# -- a summary's address fields kept by their header values -----------------------------------------


@pytest.mark.parametrize("raw", _ADDRESS_VALUES)
@pytest.mark.parametrize("own", [frozenset(), frozenset({"bob@example.org", "r7@example.com"})])
def test_address_fields_kept_are_what_working_them_out_gives(raw: bytes, own: frozenset[str]) -> None:
    values = headers.parse_header_block(b"To:" + raw + b"\r\nTo: Bob <BOB@example.org>\r\n\r\n")["to"]
    for _ in range(2):  # the second time from what was kept (unless the values are too long to keep)
        assert summary._address_field(tuple(values)) == summary.bounded(summary.listed_addresses(values))
        assert summary._short_recipients_field(tuple(values), own) == summary.bounded(
            summary.short_recipients(values, own)
        )


# -- BODYSTRUCTURE leaves kept but for their size and line count --------------------------------------

_LEAF_FIELDS: list[list[Any]] = [
    [b"text", b"TEXT", b"application", b"message", b"multipart", None, "text", True, 0, b"t\x00xt"],
    [b"plain", b"html", b"rfc822", b"pdf", b"Plain ", None, b"alternative", 1],
    [
        None,
        (b"charset", b"utf-8"),
        (b"CHARSET", b"iso-8859-1", b"format", b"flowed"),
        (b"name", b"a.pdf"),
        (b"name*", b"utf-8''r%C3%A9sum%C3%A9.pdf"),
        (b"charset",),
        [b"charset", b"utf-8"],
        (b"x", b"y" * 80),
        (),
    ],
    [None, b"<cid@x>", b"cid", 7],
    [None, b"a description", b"d" * 100],
    [b"7bit", b"BASE64", b"quoted-printable", None, b"", 8],
    [0, 339, 2**70, b"12", b"x", None, -5, True, (1,)],
    [9, 0, None, (b"attachment", None), (b"inline", (b"filename", b"x.txt")), False, 2**70],
    [None, b"md5", (b"attachment", (b"filename", b"y.bin")), 3],
    [None, (b"attachment", (b"filename", b"z.doc")), (b"INLINE", None), b"en"],
    [None, b"en", (b"en", b"de"), 4],
    [None, b"location", (b"attachment", None)],
]


def test_a_kept_leaf_is_the_leaf_read_anew() -> None:
    from mail_imap_mcp.imap import bodystructure

    generator = random.Random(22)
    for _ in range(6_000):
        length = generator.choice([2, 6, 7, 8, 10, 11, 12, 12, 12])
        node = tuple(generator.choice(options) for options in _LEAF_FIELDS[:length])
        section = generator.choice(["1", "1.2", "2"])
        for _ in range(2):  # the second time from what was kept
            assert bodystructure._leaf_from_bodystructure(node, section) == bodystructure._read_leaf(
                node, section
            ), node


def test_leaves_of_one_kind_are_read_once_and_keep_their_own_size() -> None:
    from mail_imap_mcp.imap import bodystructure

    sizes = [339, 1, 0, 2**31]
    parts = [
        bodystructure._leaf_from_bodystructure(
            (
                b"text",
                b"plain",
                (b"charset", b"utf-8"),
                None,
                None,
                b"7bit",
                size,
                size // 40 + 1,
                None,
                None,
                None,
                None,
            ),
            "1",
        )
        for size in sizes
    ]
    assert [part.size_bytes for part in parts if part] == sizes
    assert bodystructure._recurring_fields(
        (b"text", b"plain", (b"charset", b"utf-8"), None, None, b"7bit", 339, 9, None, None, None, None)
    ) == (b"text", b"plain", (b"charset", b"utf-8"), None, None, b"7bit", 0, 0, None, None, None, None)


def test_kept_when_short_keeps_only_calls_within_its_bound() -> None:
    from mail_imap_mcp.mime.kept import kept_when_short

    worked_out: list[object] = []

    @kept_when_short(maxsize=4, max_chars=3)
    def chars(values: tuple[str, ...]) -> int:
        worked_out.append(values)
        return sum(map(len, values))

    for _ in range(2):
        assert chars(("a", "bc")) == 3  # three characters in all: kept
        assert chars(("ab", "cd")) == 4  # four: worked out each time
    assert worked_out == [("a", "bc"), ("ab", "cd"), ("ab", "cd")]
    assert chars.cache_info().currsize == 1
