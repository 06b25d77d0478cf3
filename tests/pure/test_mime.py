"""Unit tests for the MIME layer: headers, addresses, dates, BODYSTRUCTURE, bodies, snippets."""

from __future__ import annotations

import base64
import quopri
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from imapclient.response_parser import parse_fetch_response

from mail_imap_mcp import mime
from mail_imap_mcp.content.text import collapse_whitespace, truncate
from mail_imap_mcp.imap.bodystructure import parse_bodystructure, structure_mismatch, top_level_boundary
from mail_imap_mcp.mime import (
    Address,
    Part,
    attachment_parts,
    choose_body_parts,
    decode_header_value,
    decode_text,
    decode_transfer,
    format_address,
    has_attachments,
    params,
    parse_address_list,
    parse_date,
    parse_full_message,
    parse_header_block,
    snippet_from_prefix,
    snippets,
)


def bodystructure(response: bytes | list[Any]) -> Any:
    """Parse a literal FETCH response the way imapclient does and return its BODYSTRUCTURE."""
    parsed = parse_fetch_response(response if isinstance(response, list) else [response])
    (data,) = parsed.values()
    return data[b"BODYSTRUCTURE"]


ALTERNATIVE = (
    b'1 (UID 5 BODYSTRUCTURE (("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 12 1 NIL NIL NIL NIL)'
    b'("text" "html" ("charset" "utf-8") NIL NIL "quoted-printable" 40 2 NIL NIL NIL NIL)'
    b' "alternative" ("boundary" "b1") NIL NIL NIL))'
)
MIXED_WITH_ATTACHMENT = (
    b'1 (UID 6 BODYSTRUCTURE (("text" "plain" ("charset" "iso-8859-1") NIL NIL "quoted-printable" 100 3'
    b" NIL NIL NIL NIL)"
    b'("application" "pdf" ("name" "fallback.pdf") NIL NIL "base64" 2048 NIL'
    b' ("attachment" ("filename*" "utf-8\'\'%C3%BCber.pdf")) NIL NIL)'
    b' "mixed" ("boundary" "outer") NIL NIL NIL))'
)
NESTED = (
    b"1 (UID 7 BODYSTRUCTURE ("
    b'(("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 10 1 NIL NIL NIL NIL)'
    b'(("text" "html" ("charset" "utf-8") NIL NIL "base64" 200 3 NIL NIL NIL NIL)'
    b'("image" "png" ("name" "logo.png") "<logo@example>" NIL "base64" 900 NIL ("inline" NIL) NIL NIL)'
    b' "related" ("boundary" "rel") NIL NIL NIL)'
    b' "alternative" ("boundary" "alt") NIL NIL NIL)'
    b'("application" "zip" NIL NIL NIL "base64" 5000 NIL ("attachment" ("filename" "a.zip")) NIL NIL)'
    b' "mixed" ("boundary" "mix") NIL NIL NIL))'
)
SINGLE_TEXT = (
    b'1 (UID 8 BODYSTRUCTURE ("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 42 2 NIL NIL NIL NIL))'
)
SINGLE_HTML = (
    b'1 (UID 9 BODYSTRUCTURE ("text" "html" ("charset" "windows-1252") NIL NIL "quoted-printable" 300 9'
    b" NIL NIL NIL NIL))"
)
FORWARDED = (
    b'1 (UID 10 BODYSTRUCTURE (("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 20 1 NIL NIL NIL NIL)'
    b'("message" "rfc822" NIL NIL NIL "7bit" 500'
    b' ("Mon, 1 Jan 2024 00:00:00 +0000" "Inner" (("A" NIL "a" "x.example")) NIL NIL'
    b' (("B" NIL "b" "y.example")) NIL NIL NIL "<id@x>")'
    b' (("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 10 1 NIL NIL NIL NIL)'
    b'("application" "pdf" NIL NIL NIL "base64" 100 NIL ("attachment" ("filename" "inner.pdf")) NIL NIL)'
    b' "mixed" ("boundary" "in") NIL NIL NIL) 20 NIL NIL NIL NIL)'
    b' "mixed" ("boundary" "out") NIL NIL NIL))'
)


# -- decode_header_value ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Plain subject", "Plain subject"),
        ("=?utf-8?Q?Gr=C3=BC=C3=9Fe_aus_M=C3=BCnchen?=", "Grüße aus München"),
        ("=?UTF-8?B?w4RyZ2VyIMO8YmVyIMOEcGZlbA==?=", "Ärger über Äpfel"),
        ("=?iso-8859-1?q?p=F6stal?= service", "pöstal service"),
        ("Re: =?utf-8?Q?caf=C3=A9?= now", "Re: café now"),
        # Whitespace between adjacent encoded-words is not part of the text (RFC 2047 §6.2).
        ("=?utf-8?Q?Hello?= \r\n =?utf-8?Q?World?=", "HelloWorld"),
        ("=?utf-8?Q?Hello_?= =?utf-8?Q?World?=", "Hello World"),
        # Encoded-words glued together without whitespace, seen in the wild.
        ("=?utf-8?B?w6k=?==?utf-8?B?w6k=?=", "éé"),
        # Missing base64 padding.
        ("=?utf-8?B?w6nDqQ?=", "éé"),
        # RFC 2231 language suffix on the charset.
        ("=?utf-8*en?Q?hi?=", "hi"),
        ("=?gb2312?B?xOO6ww==?=", "你好"),
        ("=?ks_c_5601-1987?B?vsiz5w==?=", "안녕"),
    ],
)
def test_decode_header_value_rfc2047(raw: str, expected: str) -> None:
    assert decode_header_value(raw) == expected


def test_decode_header_value_joins_multibyte_character_split_across_words() -> None:
    data = "日本語テキスト".encode()
    first, second = base64.b64encode(data[:4]).decode(), base64.b64encode(data[4:]).decode()
    assert decode_header_value(f"=?UTF-8?B?{first}?=\r\n =?UTF-8?B?{second}?=") == "日本語テキスト"


def test_decode_header_value_unknown_charset_falls_back_to_utf8() -> None:
    assert decode_header_value("=?x-unknown?Q?caf=C3=A9?=") == "café"
    assert decode_header_value("=?no-such-charset?B?w6k=?=") == "é"


def test_decode_header_value_tolerates_invalid_encoded_words() -> None:
    assert decode_header_value("=?utf-8?B?!!!?= tail") == "tail"
    assert decode_header_value("=?utf-8?Q?broken=ZZ?=") == "broken=ZZ"
    assert decode_header_value("=?utf-8?X?not an encoding?=") == "=?utf-8?X?not an encoding?="
    assert decode_header_value("=?utf-8?Q?unterminated") == "=?utf-8?Q?unterminated"


def test_decode_header_value_8bit_bytes() -> None:
    assert decode_header_value("Grüße".encode()) == "Grüße"
    # Not UTF-8: windows-1252 (the de-facto "latin-1").
    assert decode_header_value(b"Caf\xe9 \x93quoted\x94") == "Café “quoted”"


def test_decode_header_value_unfolds_and_strips_control_characters() -> None:
    assert decode_header_value("A long\r\n\tsubject line") == "A long subject line"
    assert decode_header_value("a\x00b\x07c\x1bd") == "abcd"
    assert decode_header_value("tab\tkept") == "tab\tkept"
    assert decode_header_value("=?utf-8?Q?line=0Abreak=00nul?=") == "line breaknul"


def test_decode_header_value_missing_values() -> None:
    assert decode_header_value(None) == ""
    assert decode_header_value(b"") == ""
    assert decode_header_value("   ") == ""


def test_decode_header_value_repairs_surrogate_escaped_input() -> None:
    raw = "café".encode().decode("ascii", "surrogateescape")
    assert decode_header_value(raw) == "café"


# -- addresses -------------------------------------------------------------------------------


def test_parse_address_list_common_forms() -> None:
    raw = 'Alice Example <alice@example.com>, bob@example.com, "Doe, John" <john@example.com>'
    assert parse_address_list(raw) == [
        Address("Alice Example", "alice@example.com"),
        Address(None, "bob@example.com"),
        Address("Doe, John", "john@example.com"),
    ]


def test_parse_address_list_decodes_encoded_names_after_splitting() -> None:
    # The decoded name contains a comma; splitting must happen before decoding.
    assert parse_address_list("=?utf-8?Q?M=C3=BCller=2C_J=C3=B6rg?= <j@example.com>") == [
        Address("Müller, Jörg", "j@example.com")
    ]
    # Encoded-words inside quotes are not allowed but very common.
    assert parse_address_list('"=?utf-8?B?w6l0w6k=?=" <e@example.com>') == [Address("été", "e@example.com")]


def test_parse_address_list_groups_comments_and_junk() -> None:
    raw = (
        "undisclosed-recipients:;, Team: a@example.com, b@example.com;, "
        "c@example.com (Carol C), <d@example.com>, Just A Name, , <>"
    )
    assert parse_address_list(raw) == [
        Address(None, "a@example.com"),
        Address(None, "b@example.com"),
        Address("Carol C", "c@example.com"),
        Address(None, "d@example.com"),
        Address("Just A Name", None),
    ]


def test_parse_address_list_8bit_and_missing() -> None:
    assert parse_address_list("Jörg <j@example.com>".encode()) == [Address("Jörg", "j@example.com")]
    assert parse_address_list(None) == []
    assert parse_address_list("") == []
    assert parse_address_list("Broken <unterminated@example.com") == [
        Address("Broken", "unterminated@example.com")
    ]


def test_format_address() -> None:
    assert format_address(Address("Alice", "a@example.com")) == "Alice <a@example.com>"
    assert format_address(Address(None, "a@example.com")) == "a@example.com"
    assert format_address(Address("Only Name", None)) == "Only Name"
    assert format_address(Address(None, None)) == ""


# -- parse_header_block ----------------------------------------------------------------------


def test_parse_header_block_basic_duplicates_and_folding() -> None:
    raw = (
        b"Subject: =?utf-8?Q?Gr=C3=BC=C3=9Fe?=\r\n"
        b"  from Berlin\r\n"
        b"Received: by a\r\n"
        b"Received: by b\r\n"
        b"X-Empty:\r\n"
        b"\r\n"
    )
    assert parse_header_block(raw) == {
        "subject": ["Grüße  from Berlin"],
        "received": ["by a", "by b"],
        "x-empty": [""],
    }


def test_parse_header_block_lowercases_names_and_handles_lf_only() -> None:
    assert parse_header_block(b"SUBJECT: a\nMessage-ID: <x@y>\n\n") == {
        "subject": ["a"],
        "message-id": ["<x@y>"],
    }


def test_parse_header_block_skips_garbage_lines() -> None:
    raw = (
        b"From someone@example.com Mon Jan  1 00:00:00 2024\r\n"  # mbox separator
        b"  orphan continuation\r\n"
        b"Subject: ok\r\n"
        b"this line has no colon\r\n"
        b"Bad Name: spaces are not allowed in names\r\n"
        b": empty name\r\n"
        b"X-Good: yes\r\n"
    )
    assert parse_header_block(raw) == {"subject": ["ok"], "x-good": ["yes"]}


def test_parse_header_block_8bit_values() -> None:
    raw = b"Subject: caf\xc3\xa9\r\nX-Latin: caf\xe9\r\nX-Nul: a\x00b\r\n"
    assert parse_header_block(raw) == {"subject": ["café"], "x-latin": ["café"], "x-nul": ["ab"]}


def test_parse_header_block_stops_at_body() -> None:
    raw = b"\r\nSubject: s\r\n\r\nBody-Looks-Like: a header\r\n"
    assert parse_header_block(raw) == {"subject": ["s"]}


def test_parse_header_block_address_headers_round_trip() -> None:
    raw = b"From: =?utf-8?Q?Doe=2C_Jane?= <jane@example.com>\r\nTo: a@example.com,\r\n b@example.com\r\n"
    headers = parse_header_block(raw)
    assert headers["from"] == ['"Doe, Jane" <jane@example.com>']
    assert headers["to"] == ["a@example.com, b@example.com"]
    assert parse_address_list(headers["from"][0]) == [Address("Doe, Jane", "jane@example.com")]


def test_parse_header_block_truncated_and_empty() -> None:
    assert parse_header_block(b"") == {}
    assert parse_header_block(b"\r\n") == {}
    assert parse_header_block(b"Subject: cut in the mid") == {"subject": ["cut in the mid"]}


# -- parse_date ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Mon, 1 Jan 2024 10:00:00 +0200", datetime(2024, 1, 1, 8, 0, tzinfo=UTC)),
        ("1 Jan 2024 10:00:00 -0000", datetime(2024, 1, 1, 10, 0, tzinfo=UTC)),
        ("Mon, 1 Jan 2024 10:00:00 +0200 (CEST)", datetime(2024, 1, 1, 8, 0, tzinfo=UTC)),
        ("Tue, 2 Jan 24 10:00 EST", datetime(2024, 1, 2, 15, 0, tzinfo=UTC)),
        ("Mon,\r\n 1 Jan 2024 10:00:00 +0000", datetime(2024, 1, 1, 10, 0, tzinfo=UTC)),
        ("2024-01-01T10:00:00+01:00", datetime(2024, 1, 1, 9, 0, tzinfo=UTC)),
        ("2024-01-01 10:00:00", datetime(2024, 1, 1, 10, 0, tzinfo=UTC)),
    ],
)
def test_parse_date_valid(raw: str, expected: datetime) -> None:
    parsed = parse_date(raw)
    assert parsed == expected
    assert parsed is not None
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "raw", [None, "", "garbage", "Mon, 32 Jan 2024 10:00:00 +0000", "\x00", "99999999999"]
)
def test_parse_date_invalid_returns_none(raw: str | None) -> None:
    assert parse_date(raw) is None


# -- parse_bodystructure ---------------------------------------------------------------------


def test_bodystructure_alternative() -> None:
    parts = parse_bodystructure(bodystructure(ALTERNATIVE))
    assert parts == [
        Part("1", "text/plain", {"charset": "utf-8"}, "7bit", 12, None, None, None, "utf-8"),
        Part("2", "text/html", {"charset": "utf-8"}, "quoted-printable", 40, None, None, None, "utf-8"),
    ]
    assert top_level_boundary(bodystructure(ALTERNATIVE)) == "b1"


def test_bodystructure_mixed_with_rfc2231_attachment() -> None:
    structure = bodystructure(MIXED_WITH_ATTACHMENT)
    text, pdf = parse_bodystructure(structure)
    assert text.section == "1"
    assert text.charset == "iso-8859-1"
    assert pdf.section == "2"
    assert pdf.content_type == "application/pdf"
    assert pdf.encoding == "base64"
    assert pdf.size_bytes == 2048
    assert pdf.disposition == "attachment"
    # filename* (RFC 2231) wins over the Content-Type name.
    assert pdf.filename == "über.pdf"
    assert top_level_boundary(structure) == "outer"


def test_bodystructure_nested_sections() -> None:
    parts = parse_bodystructure(bodystructure(NESTED))
    assert [(p.section, p.content_type) for p in parts] == [
        ("1.1", "text/plain"),
        ("1.2.1", "text/html"),
        ("1.2.2", "image/png"),
        ("2", "application/zip"),
    ]
    image = parts[2]
    assert image.disposition == "inline"
    assert image.content_id == "logo@example"
    assert image.filename == "logo.png"
    assert parts[3].filename == "a.zip"


def test_bodystructure_single_part_text_and_html() -> None:
    (text,) = parse_bodystructure(bodystructure(SINGLE_TEXT))
    assert (text.section, text.content_type, text.size_bytes) == ("1", "text/plain", 42)
    assert text.charset == "us-ascii"
    (html,) = parse_bodystructure(bodystructure(SINGLE_HTML))
    assert (html.section, html.content_type, html.encoding) == ("1", "text/html", "quoted-printable")
    assert top_level_boundary(bodystructure(SINGLE_TEXT)) is None


def test_bodystructure_message_rfc822_is_an_attachment_leaf() -> None:
    parts = parse_bodystructure(bodystructure(FORWARDED))
    assert [p.section for p in parts] == ["1", "2"]
    forwarded = parts[1]
    assert forwarded.content_type == "message/rfc822"
    assert forwarded.filename == "message.eml"
    assert forwarded.disposition == "attachment"
    assert attachment_parts(parts) == [forwarded]


def test_bodystructure_rfc2231_continuations_and_charset() -> None:
    response = (
        b'1 (UID 11 BODYSTRUCTURE ("application" "octet-stream"'
        b' ("name*0*" "utf-8\'\'%E2%82%AC" "name*1" " rate.txt") NIL NIL "base64" 100 NIL'
        b' ("attachment" ("filename*1*" "%F6.txt" "filename*0*" "iso-8859-1\'de\'%E4")) NIL NIL))'
    )
    (part,) = parse_bodystructure(bodystructure(response))
    assert part.params["name"] == "€ rate.txt"
    assert part.filename == "äö.txt"  # sections reassembled in numeric order


def test_bodystructure_rfc2047_filename_and_directory_components() -> None:
    response = (
        b'1 (UID 12 BODYSTRUCTURE (("text" "plain" NIL NIL NIL "7bit" 1 1 NIL NIL NIL NIL)'
        b'("application" "pdf" ("name" "=?utf-8?Q?R=C3=A9sum=C3=A9.pdf?=") NIL NIL "base64" 10 NIL NIL NIL NIL)'
        b'("text" "plain" NIL NIL NIL "7bit" 1 1 NIL ("attachment" ("filename" "C:\\\\tmp\\\\..\\\\evil.txt"))'
        b" NIL NIL)"
        b' "mixed" ("boundary" "x") NIL NIL NIL))'
    )
    text, pdf, evil = parse_bodystructure(bodystructure(response))
    assert pdf.filename == "Résumé.pdf"
    assert pdf.disposition == "attachment"  # non-text leaf without disposition
    assert evil.filename == "evil.txt"
    assert choose_body_parts([text, pdf, evil]) == (text, None)


def test_bodystructure_string_literals_and_missing_extension_data() -> None:
    response: list[Any] = [
        (b'1 (UID 13 BODYSTRUCTURE ("application" "octet-stream" ("name" {5}', b'a"b.c'),
        b') NIL NIL "base64" 100))',
    ]
    (part,) = parse_bodystructure(bodystructure(response))
    assert part.filename == 'a"b.c'
    assert part.disposition == "attachment"
    assert part.size_bytes == 100


def test_bodystructure_unknown_disposition_is_attachment() -> None:
    response = b'1 (UID 14 BODYSTRUCTURE ("text" "plain" NIL NIL NIL "7bit" 5 1 NIL ("x-weird" NIL) NIL NIL))'
    (part,) = parse_bodystructure(bodystructure(response))
    assert part.disposition == "attachment"


def test_bodystructure_skips_malformed_children_but_keeps_numbering() -> None:
    structure = ([(b"text", b"plain", None, None, None, b"7bit", 3, 1), (42,), (b"image", b"gif")], b"mixed")
    parts = parse_bodystructure(structure)
    assert [(p.section, p.content_type, p.size_bytes) for p in parts] == [
        ("1", "text/plain", 3),
        ("3", "image/gif", 0),
    ]


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        b"",
        b"text",
        42,
        (),
        [],
        ([], b"mixed"),
        ((None, None),),
        ([(1, 2, 3)], b"mixed"),
        (b"multipart", b"mixed"),
    ],
)
def test_bodystructure_garbage_raises_value_error(garbage: Any) -> None:
    with pytest.raises(ValueError, match="BODYSTRUCTURE"):
        parse_bodystructure(garbage)


def test_top_level_boundary_on_garbage_is_none() -> None:
    assert top_level_boundary(None) is None
    assert top_level_boundary(([],)) is None
    assert top_level_boundary(42) is None


# -- choosing parts --------------------------------------------------------------------------


def _part(section: str, content_type: str, **kwargs: Any) -> Part:
    defaults: dict[str, Any] = {
        "params": {},
        "encoding": "7bit",
        "size_bytes": 1,
        "disposition": None,
        "filename": None,
        "content_id": None,
        "charset": None,
    }
    defaults.update(kwargs)
    return Part(section, content_type, **defaults)


def test_choose_body_parts_first_candidates_in_order() -> None:
    parts = parse_bodystructure(bodystructure(NESTED))
    plain, html = choose_body_parts(parts)
    assert plain is not None
    assert html is not None
    assert (plain.section, html.section) == ("1.1", "1.2.1")


def test_choose_body_parts_ignores_attached_text() -> None:
    attached = _part("1", "text/plain", disposition="attachment", filename="notes.txt")
    named_inline = _part("2", "text/html", disposition="inline", filename="page.html")
    body = _part("3", "text/plain", disposition="inline")
    assert choose_body_parts([attached, named_inline, body]) == (body, None)
    assert attachment_parts([attached, named_inline, body]) == [attached, named_inline]


def test_choose_body_parts_html_only_and_empty() -> None:
    (html,) = parse_bodystructure(bodystructure(SINGLE_HTML))
    assert choose_body_parts([html]) == (None, html)
    assert choose_body_parts([]) == (None, None)


def test_attachment_parts_and_has_attachments() -> None:
    parts = parse_bodystructure(bodystructure(NESTED))
    assert [p.section for p in attachment_parts(parts)] == ["1.2.2", "2"]
    assert has_attachments(parts)
    assert not has_attachments(parse_bodystructure(bodystructure(ALTERNATIVE)))
    assert not has_attachments([])


# -- decode_transfer -------------------------------------------------------------------------


def test_decode_transfer_base64() -> None:
    assert decode_transfer(b"SGVsbG8gV29ybGQ=", "base64") == b"Hello World"
    assert decode_transfer(b"SGVsbG8g\r\nV29ybGQ=\r\n", "BASE64") == b"Hello World"
    assert decode_transfer(b"SGVsbG8gV29ybGQ", "base64") == b"Hello World"  # missing padding
    assert decode_transfer(b"SGVs*bG8g\x00V29y!bGQ=", "base64") == b"Hello World"  # garbage ignored
    assert decode_transfer(b"SGk=SGk=", "base64") == b"HiHi"  # concatenated chunks


def test_decode_transfer_base64_truncated_at_every_byte() -> None:
    data = "Grüße, ünïcödé and binary \x00\xff".encode()
    encoded = base64.encodebytes(data)
    for cut in range(len(encoded) + 1):
        decoded = decode_transfer(encoded[:cut], "base64")
        assert data.startswith(decoded)
        assert len(decoded) >= (cut - cut // 77) * 3 // 4 - 3  # only the last partial group is lost


def test_decode_transfer_quoted_printable() -> None:
    assert decode_transfer(b"caf=C3=A9 soft=\r\nbreak", "quoted-printable") == "café softbreak".encode()
    assert decode_transfer(b"lower=c3=a9", "Quoted-Printable") == "loweré".encode()
    assert decode_transfer(b"bad=ZZescape", "quoted-printable") == b"bad=ZZescape"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(b"abc=", b"abc"), (b"abc=C", b"abc"), (b"abc=\r", b"abc"), (b"abc=C3", b"abc\xc3")],
)
def test_decode_transfer_quoted_printable_truncated(raw: bytes, expected: bytes) -> None:
    assert decode_transfer(raw, "quoted-printable") == expected


def test_decode_transfer_quoted_printable_truncated_at_every_byte() -> None:
    data = "Grüße aus München — ein Test mit = Zeichen.".encode()
    encoded = quopri.encodestring(data)
    for cut in range(len(encoded) + 1):
        assert data.startswith(decode_transfer(encoded[:cut], "quoted-printable"))


def test_decode_transfer_uuencode() -> None:
    import binascii

    encoded = b"begin 644 x.txt\n" + binascii.b2a_uu(b"hello uu") + b"`\nend\n"
    assert decode_transfer(encoded, "x-uuencode") == b"hello uu"


@pytest.mark.parametrize("encoding", ["7bit", "8bit", "binary", "", "x-unknown-encoding"])
def test_decode_transfer_identity(encoding: str) -> None:
    assert decode_transfer(b"caf\xc3\xa9 =C3", encoding) == b"caf\xc3\xa9 =C3"


# -- decode_text -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "charset", "expected"),
    [
        ("café".encode(), "utf-8", "café"),
        ("café".encode(), "UTF8", "café"),
        ("café".encode("latin-1"), "latin1", "café"),
        ("“smart”".encode("cp1252"), "iso-8859-1", "“smart”"),  # windows-1252 superset
        ("שלום".encode("iso-8859-8"), "iso-8859-8-i", "שלום"),
        ("你好".encode("gb18030"), "gb2312", "你好"),
        ("𠀀".encode("gb18030"), "GB2312", "𠀀"),  # only in the gb18030 superset
        ("안녕".encode("cp949"), "ks_c_5601-1987", "안녕"),
        ("สวัสดี".encode("cp874"), "windows-874", "สวัสดี"),
        ("日本".encode("cp932"), "shift_jis", "日本"),
        ("café".encode(), "x-unknown", "café"),
        ("café".encode(), '"utf-8"', "café"),
        ("café".encode(), "utf-8; format=flowed", "café"),
        (b"plain", "base64", "plain"),  # bytes-to-bytes codecs are not charsets
        (b"plain", "idna", "plain"),
    ],
)
def test_decode_text_charsets(data: bytes, charset: str, expected: str) -> None:
    assert decode_text(data, charset) == expected


def test_decode_text_invalid_bytes_are_replaced() -> None:
    assert decode_text(b"caf\xe9", "utf-8") == "caf\ufffd"


def test_decode_text_missing_or_ascii_charset_guesses_utf8_then_cp1252() -> None:
    assert decode_text("café".encode(), None) == "café"
    assert decode_text("café".encode(), "us-ascii") == "café"
    assert decode_text("café".encode("cp1252"), None) == "café"


def test_decode_text_partial_drops_cut_multibyte_character() -> None:
    data = "Grüße".encode()[:-2]  # cut inside the two-byte "ß"
    assert decode_text(data, "utf-8") == "Grü\ufffd"
    assert decode_text(data, "utf-8", partial=True) == "Grü"
    assert decode_text(data, None, partial=True) == "Grü"


def test_decode_text_strips_nul() -> None:
    assert decode_text(b"a\x00b", "utf-8") == "ab"
    assert decode_text("a\x00b".encode("utf-16-le"), "utf-16-le") == "ab"
    assert decode_text(b"", "utf-8") == ""


# -- snippets --------------------------------------------------------------------------------

ALT_TEXT = "Grüße aus München, das ist ein längerer Text."
ALT_BODY = (
    b"This is a multi-part message in MIME format.\r\n"
    b"--b1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    + base64.encodebytes(ALT_TEXT.encode())
    + b"\r\n--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>html version</p>\r\n--b1--\r\n"
)
ALT_BASE64 = (
    b'1 (UID 5 BODYSTRUCTURE (("text" "plain" ("charset" "utf-8") NIL NIL "base64" 66 1 NIL NIL NIL NIL)'
    b'("text" "html" ("charset" "utf-8") NIL NIL "7bit" 19 1 NIL NIL NIL NIL)'
    b' "alternative" ("boundary" "b1") NIL NIL NIL))'
)


def test_snippet_single_part_plain() -> None:
    parts = parse_bodystructure(bodystructure(SINGLE_TEXT))
    assert snippet_from_prefix(b"Hello,\r\n\r\nthis is   the body.\r\n", parts) == "Hello, this is the body."


def test_snippet_single_part_html_quoted_printable_cut_mid_escape() -> None:
    parts = parse_bodystructure(bodystructure(SINGLE_HTML))
    prefix = (
        b"<html><head><style>p{}</style></head><body><p>Gr=FC=DFe <b>Welt</b></p>"
        b'<div style=3D"display:none">hidden</div><p>mehr Te=\r\nxt =E'
    )
    assert snippet_from_prefix(prefix, parts) == "Grüße Welt mehr Text"


def test_snippet_multipart_with_boundary_from_bodystructure() -> None:
    structure = bodystructure(ALT_BASE64)
    parts = parse_bodystructure(structure)
    assert snippet_from_prefix(ALT_BODY, parts, boundary=top_level_boundary(structure)) == ALT_TEXT


def test_snippet_multipart_boundary_from_header_or_sniffed() -> None:
    parts = parse_bodystructure(bodystructure(ALT_BASE64))
    header = 'multipart/alternative;\r\n boundary="b1"'
    assert snippet_from_prefix(ALT_BODY, parts, header_content_type=header) == ALT_TEXT
    assert snippet_from_prefix(ALT_BODY, parts) == ALT_TEXT


def test_snippet_multipart_truncated_at_every_byte() -> None:
    structure = bodystructure(ALT_BASE64)
    parts = parse_bodystructure(structure)
    header_end = ALT_BODY.index(b"base64\r\n\r\n") + len(b"base64\r\n\r\n")
    for cut in range(len(ALT_BODY) + 1):
        snippet = snippet_from_prefix(ALT_BODY[:cut], parts, boundary="b1")
        if cut <= header_end:
            # Nothing of the text part yet (and never header text or a stray boundary).
            assert snippet is None, cut
        elif cut >= header_end + 4:  # at least one complete base64 group
            assert snippet is not None, cut
        if snippet is not None:
            assert ALT_TEXT.startswith(snippet), (cut, snippet)


def test_snippet_html_only_multipart() -> None:
    structure = bodystructure(
        b'1 (UID 3 BODYSTRUCTURE (("text" "html" ("charset" "utf-8") NIL NIL "7bit" 40 1 NIL NIL NIL NIL)'
        b'("image" "png" NIL "<i@x>" NIL "base64" 100 NIL ("inline" NIL) NIL NIL)'
        b' "related" ("boundary" "r") NIL NIL NIL))'
    )
    prefix = (
        b"--r\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        b"<script>x()</script><p>Only <i>html</i> here</p>\r\n--r\r\nContent-Type: image/png\r\n"
    )
    parts = parse_bodystructure(structure)
    assert snippet_from_prefix(prefix, parts, boundary="r") == "Only html here"


def test_snippet_prefers_plain_even_when_html_comes_first() -> None:
    parts = [_part("1", "text/html"), _part("2", "text/plain")]
    prefix = b"--z\r\nContent-Type: text/html\r\n\r\n<p>html</p>\r\n--z\r\nContent-Type: text/plain\r\n\r\nplain\r\n"
    assert snippet_from_prefix(prefix, parts, boundary="z") == "plain"


def test_snippet_multipart_with_single_child_is_sniffed() -> None:
    structure = bodystructure(
        b'1 (UID 4 BODYSTRUCTURE (("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 12 1 NIL NIL NIL NIL)'
        b' "mixed" ("boundary" "zz") NIL NIL NIL))'
    )
    parts = parse_bodystructure(structure)
    prefix = b"--zz\r\nContent-Type: text/plain\r\n\r\nHello there\r\n--zz--\r\n"
    assert snippet_from_prefix(prefix, parts) == "Hello there"
    assert snippet_from_prefix(prefix, parts, boundary=top_level_boundary(structure)) == "Hello there"


def test_snippet_nothing_readable() -> None:
    attachment_only = parse_bodystructure(
        bodystructure(
            b'1 (UID 2 BODYSTRUCTURE ("application" "pdf" NIL NIL NIL "base64" 100 NIL NIL NIL NIL))'
        )
    )
    assert snippet_from_prefix(b"JVBERi0xLjQK", attachment_only) is None
    assert snippet_from_prefix(b"", parse_bodystructure(bodystructure(SINGLE_TEXT))) is None
    assert snippet_from_prefix(b"  \r\n ", parse_bodystructure(bodystructure(SINGLE_TEXT))) is None
    assert (
        snippet_from_prefix(b"no boundary anywhere", [_part("1", "text/plain"), _part("2", "text/html")])
        is None
    )


def test_snippet_without_parts_uses_header_content_type() -> None:
    assert snippet_from_prefix(b"just text", []) == "just text"
    assert snippet_from_prefix(b"<p>Hi <b>there</b></p>", [], header_content_type="text/html") == "Hi there"


def test_collapse_whitespace() -> None:
    assert collapse_whitespace("  a\r\n\tb\u00a0\u00a0c \u200b\u200c d  ") == "a b c d"
    assert collapse_whitespace("می\u200cخواهم") == "می\u200cخواهم"  # ZWNJ inside a word is kept
    assert collapse_whitespace("") == ""


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, ("short", False)),
        ("exactly10!", 10, ("exactly10!", False)),
        ("Hello wonderful world of mail", 20, ("Hello wonderful", True)),
        ("Hello wonderful world", 16, ("Hello wonderful", True)),
        ("abcdefghijklmnopqrstuvwxyz", 10, ("abcdefghij", True)),
        ("e\u0301e\u0301e\u0301", 3, ("e\u0301", True)),  # never strip a combining accent
        ("ab👍🏽cd", 3, ("ab", True)),  # never split an emoji from its modifier
        ("anything", 0, ("", True)),
        ("", 0, ("", False)),
    ],
)
def test_truncate(text: str, limit: int, expected: tuple[str, bool]) -> None:
    assert truncate(text, limit) == expected


# -- parse_full_message ----------------------------------------------------------------------

FULL_MESSAGE = (
    b"From: =?utf-8?Q?J=C3=B6rg?= <j@example.com>\r\n"
    b"To: a@example.com\r\n"
    b"Subject: Caf\xc3\xa9\r\n"
    b"MIME-Version: 1.0\r\n"
    b'Content-Type: multipart/mixed; boundary="out"\r\n'
    b"\r\n"
    b"preamble\r\n"
    b"--out\r\n"
    b'Content-Type: multipart/alternative; boundary="in"\r\n'
    b"\r\n"
    b"--in\r\n"
    b'Content-Type: text/plain; charset="iso-8859-1"\r\n'
    b"Content-Transfer-Encoding: quoted-printable\r\n"
    b"\r\n"
    b"Gr=FC=DFe\r\n"
    b"--in\r\n"
    b"Content-Type: text/html; charset=utf-8\r\n"
    b"\r\n"
    b"<p>Gr\xc3\xbc\xc3\x9fe</p>\r\n"
    b"--in--\r\n"
    b"--out\r\n"
    b'Content-Type: application/pdf; name="=?utf-8?Q?b=C3=BCro.pdf?="\r\n'
    b"Content-Disposition: attachment;\r\n filename*0*=utf-8''%C3%BC; filename*1*=ber.pdf\r\n"
    b"Content-Transfer-Encoding: base64\r\n"
    b"\r\n"
    b"JVBERi0=\r\n"
    b"--out\r\n"
    b"Content-Type: message/rfc822\r\n"
    b"\r\n"
    b"Subject: inner\r\n"
    b"\r\n"
    b"inner body\r\n"
    b"--out\r\n"
    b"Content-Type: image/png; name=caf\xc3\xa9.png\r\n"
    b"Content-ID: <logo@example>\r\n"
    b"Content-Transfer-Encoding: base64\r\n"
    b"\r\n"
    b"iVBORw0KGgo=\r\n"
    b"--out--\r\n"
)


def test_parse_full_message_nested() -> None:
    parsed = parse_full_message(FULL_MESSAGE)
    assert parsed.headers["from"] == ["Jörg <j@example.com>"]
    assert parsed.headers["subject"] == ["Café"]
    assert parsed.text is not None
    assert parsed.text.strip() == "Grüße"
    assert parsed.html is not None
    assert parsed.html.strip() == "<p>Grüße</p>"
    assert [(a.section, a.content_type, a.filename, a.disposition) for a in parsed.attachments] == [
        ("2", "application/pdf", "über.pdf", "attachment"),
        ("3", "message/rfc822", "message.eml", "attachment"),
        ("4", "image/png", "café.png", "inline"),
    ]
    assert parsed.attachments[0].encoding == "base64"
    assert parsed.attachments[2].content_id == "logo@example"


def test_parse_full_message_single_part_8bit() -> None:
    parsed = parse_full_message(b"Subject: x\r\nContent-Type: text/plain\r\n\r\nplain body \xc3\xa9\r\n")
    assert parsed.text == "plain body é\r\n"
    assert parsed.html is None
    assert parsed.attachments == []


def test_parse_full_message_html_only_with_unknown_charset() -> None:
    raw = b"Content-Type: text/html; charset=x-bogus\r\nContent-Transfer-Encoding: base64\r\n\r\nPGI+aGk8L2I+"
    parsed = parse_full_message(raw)
    assert parsed.text is None
    assert parsed.html == "<b>hi</b>"


def test_parse_full_message_truncated_and_garbage() -> None:
    truncated = parse_full_message(FULL_MESSAGE[:700])
    assert truncated.text is not None
    assert truncated.text.strip() == "Grüße"
    assert parse_full_message(b"").attachments == []
    garbage = parse_full_message(b"\x00\xff\xfe garbage without headers")
    assert garbage.headers == {}
    assert isinstance(garbage.text, str)


def test_parse_full_message_multipart_without_boundary_is_text() -> None:
    parsed = parse_full_message(b"Content-Type: multipart/mixed\r\n\r\nsome text\r\n")
    assert parsed.text == "some text\r\n"


# -- never raise -----------------------------------------------------------------------------

_header_bytes = st.lists(
    st.one_of(
        st.binary(max_size=20),
        st.sampled_from(
            [
                b"=?utf-8?B?",
                b"=?utf-8?Q?",
                b"=?x-bogus?b?",
                b"?=",
                b"=C3",
                b"\r\n",
                b"\r\n ",
                b": ",
                b"Subject: ",
                b"From: ",
                b'"',
                b"<",
                b">",
                b",",
                b"(",
                b"\x00",
                b"\xff",
            ]
        ),
    ),
    max_size=30,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(_header_bytes)
def test_header_functions_never_raise(raw: bytes) -> None:
    for value in (raw, raw.decode("latin-1")):
        decoded = decode_header_value(value)
        assert "\x00" not in decoded
        decoded.encode("utf-8")
        assert isinstance(parse_address_list(value), list)
        assert parse_date(value) is None or parse_date(value) is not None
    headers = parse_header_block(raw)
    assert all(name == name.lower() for name in headers)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_decode_header_value_never_raises_on_text(text: str) -> None:
    decode_header_value(text).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=200),
    st.sampled_from(["base64", "quoted-printable", "x-uuencode", "7bit", "", "garbage"]),
    st.one_of(st.none(), st.sampled_from(["utf-8", "gb2312", "iso-2022-jp", "utf-16", "utf-7", "x-bogus"])),
)
def test_transfer_and_text_decoding_never_raise(data: bytes, encoding: str, charset: str | None) -> None:
    text = decode_text(decode_transfer(data, encoding), charset)
    assert "\x00" not in text


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([None, "b1", "x"]))
def test_snippet_and_full_parse_never_raise(data: bytes, boundary: str | None) -> None:
    parts = parse_bodystructure(bodystructure(ALT_BASE64))
    snippet = snippet_from_prefix(b"--b1\r\n" + data, parts, boundary=boundary)
    assert snippet is None or isinstance(snippet, str)
    parsed = parse_full_message(data)
    assert isinstance(parsed.headers, dict)


# -- snippet fast path: the first leaf located by BODYSTRUCTURE sizes, no MIME parse ------------


def _nested_prefix(plain: bytes) -> bytes:
    return (
        b"This is a multi-part message in MIME format.\r\n\r\n--outer\r\n"
        b'Content-Type: multipart/alternative; boundary="inner"\r\n\r\n'
        b"--inner\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        + plain
        + b"\r\n--inner\r\nContent-Type: text/html\r\n\r\n<p>html</p>\r\n--inner--\r\n--outer--\r\n"
    )


def _nested_parts(plain_size: int) -> list[mime.Part]:
    plain = mime.Part(
        "1.1", "text/plain", {"charset": "utf-8"}, "8bit", plain_size, None, None, None, "utf-8"
    )
    html = mime.Part("1.2", "text/html", {}, "7bit", 11, None, None, None, None)
    return [plain, html]


def test_snippet_fast_path_finds_a_nested_first_leaf_after_a_preamble() -> None:
    body = "Grüße aus dem ersten Teil.".encode()
    snippet = mime.snippet_from_prefix(_nested_prefix(body), _nested_parts(len(body)), boundary="outer")
    assert snippet == "Grüße aus dem ersten Teil."


def test_snippet_fast_path_ends_at_the_delimiter_whatever_size_the_server_reports() -> None:
    body = b"short body"
    snippet = mime.snippet_from_prefix(_nested_prefix(body), _nested_parts(5000), boundary="outer")
    assert snippet == "short body"


def test_snippet_fast_path_gives_way_when_a_boundary_does_not_match() -> None:
    body = b"text after a wrong boundary"
    # The top-level boundary is not in the prefix, so the fast path declines and the parser decides.
    assert snippets._first_leaf_text(_nested_prefix(body), _nested_parts(len(body)), "nomatch") is None


# -- BODYSTRUCTURE against the message's own Content-Type header --------------------------------

COURIER_TEXT = (
    b'1 (UID 11 BODYSTRUCTURE ("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 300 9 NIL NIL NIL NIL))'
)
CHILDLESS_NESTED = (
    b'1 (UID 12 BODYSTRUCTURE (("text" "plain" NIL NIL NIL "7bit" 5 1 NIL NIL NIL NIL)'
    b'("alternative" ("boundary" "x") NIL NIL NIL) "mixed" ("boundary" "b") NIL NIL NIL))'
)


@pytest.mark.parametrize(
    ("response", "content_type"),
    [
        # Courier: every message without MIME-Version is text/plain, whatever its header says.
        (COURIER_TEXT, "text/html; charset=utf-8"),
        (COURIER_TEXT, 'multipart/mixed;\r\n boundary="outer"'),
        (COURIER_TEXT, "MULTIPART/Alternative; boundary=b1"),
        (COURIER_TEXT, "application/pdf; name=x.pdf"),
        # A multipart with no parts, at the top or nested.
        (b'1 (UID 13 BODYSTRUCTURE ("mixed" ("boundary" "b") NIL NIL NIL))', "multipart/mixed; boundary=b"),
        (b'1 (UID 13 BODYSTRUCTURE ("mixed" ("boundary" "b") NIL NIL NIL))', None),
        (CHILDLESS_NESTED, "multipart/mixed; boundary=b"),
        (CHILDLESS_NESTED, None),
        (
            b'1 (UID 14 BODYSTRUCTURE ("multipart" "mixed" ("boundary" "b") NIL NIL "7bit" 9 NIL NIL NIL NIL))',
            None,
        ),
        # The header says multipart, the server a single leaf of another type.
        (SINGLE_HTML, "multipart/alternative; boundary=b1"),
    ],
)
def test_structure_mismatch_is_reported(response: bytes, content_type: str | None) -> None:
    reason = structure_mismatch(bodystructure(response), content_type)
    assert reason is not None
    assert reason.startswith("it ")


@pytest.mark.parametrize(
    ("response", "content_type"),
    [
        (COURIER_TEXT, None),  # no Content-Type: text/plain by default
        (COURIER_TEXT, "text/plain; charset=utf-8"),
        (COURIER_TEXT, "TEXT/PLAIN"),
        (COURIER_TEXT, "text"),  # not a media type: servers read it as text/plain too
        (COURIER_TEXT, "garbage/ with space"),
        (COURIER_TEXT, "multipart/mixed"),  # no boundary: cannot be split, text/plain everywhere
        (SINGLE_HTML, "text/html; charset=windows-1252"),
        (SINGLE_HTML, "text/plain"),  # only a text/plain structure is suspected
        (ALTERNATIVE, "multipart/alternative; boundary=b1"),
        (ALTERNATIVE, "text/html"),  # the server split it: it saw the boundaries
        (NESTED, "multipart/mixed; boundary=mix"),
        (FORWARDED, None),
        (MIXED_WITH_ATTACHMENT, "multipart/mixed; boundary=outer"),
    ],
)
def test_structure_agreeing_with_the_header_is_trusted(response: bytes, content_type: str | None) -> None:
    assert structure_mismatch(bodystructure(response), content_type) is None


@given(
    st.recursive(st.none() | st.binary(max_size=8) | st.integers(), lambda c: st.lists(c) | st.tuples(c, c))
)
def test_structure_mismatch_never_raises(structure: Any) -> None:
    for content_type in (None, "text/html", "multipart/mixed; boundary=b"):
        result = structure_mismatch(structure, content_type)
        assert result is None or isinstance(result, str)


def test_snippet_without_parts_decodes_the_header_transfer_encoding() -> None:
    prefix = base64.b64encode(b"<p>Hello <b>there</b></p><div hidden>secret</div>")
    snippet = snippet_from_prefix(prefix, [], header_content_type="text/html", header_encoding="base64")
    assert snippet == "Hello there"
    qp = b"<p>Gr=C3=BC=C3=9Fe</p>"
    snippet = snippet_from_prefix(
        qp, [], header_content_type="text/html; charset=utf-8", header_encoding="Quoted-Printable"
    )
    assert snippet == "Grüße"


@given(st.text(alphabet=st.sampled_from(list("ab=; \\\t/\"x*'")), max_size=40))
def test_content_type_params_split_the_same_with_and_without_the_quote_free_shortcut(value: str) -> None:
    """The plain ``split(";")`` taken when a value has no double quote gives what the quote-aware scan
    gives; with a quote, the scan decides (semicolons inside quotes stay, backslash escapes apply)."""
    main, pairs = params.split_header_params(value)
    items = params.split_quoted(value)
    expected = [
        (n.strip(), v.strip()) for n, sep, v in (i.partition("=") for i in items[1:]) if sep and n.strip()
    ]
    assert (main, pairs) == (items[0].strip(), expected)
    if '"' not in value:
        assert items == value.split(";")


def test_a_quoted_semicolon_stays_inside_its_parameter() -> None:
    assert params.split_header_params('text/plain; name="a;b.txt"; charset=utf-8') == (
        "text/plain",
        [("name", "a;b.txt"), ("charset", "utf-8")],
    )


@pytest.mark.parametrize("name", [b"Subject", b"X-Custom-1", b"x!#$%&'*+-.^_`|~"])
def test_printable_field_names_are_headers(name: bytes) -> None:
    assert mime.parse_header_block(name + b": value\r\n") == {name.decode().lower(): ["value"]}


@pytest.mark.parametrize("line", [b"Bad Name: x", b"Caf\xc3\xa9: x", b"Tab\tName: x", b": no name"])
def test_field_names_with_spaces_controls_or_8bit_are_skipped(line: bytes) -> None:
    assert mime.parse_header_block(b"Subject: kept\r\n" + line + b"\r\n") == {"subject": ["kept"]}


def test_regression_the_address_parse_cache_keeps_short_texts_only() -> None:
    """Issue 33 item 14: the address-list cache was bounded by count alone, so 4,096 lists of 5,000
    addresses each (250 KB apiece) could be held at once. A long list is parsed each time, not kept."""
    from mail_imap_mcp.mime import addresses

    crowd = ", ".join(f"person{n}@example.net" for n in range(5000))
    before = addresses._parse_address_text.cache_info().currsize
    assert len(mime.parse_address_list(crowd)) == 5000
    assert addresses._parse_address_text.cache_info().currsize == before
    short = "Kept Once <kept.once@example.net>"
    assert [a.email for a in mime.parse_address_list(short)] == ["kept.once@example.net"]
    assert addresses._parse_address_text.cache_info().currsize == before + 1


def test_a_continuation_number_int_cannot_read_is_a_plain_parameter() -> None:
    """RFC 2231's ``name*N``: a stranger's ``filename*²`` (U+00B2 passes ``str.isdigit``) raised ValueError
    from ``int`` out of the parameters of a message's part (its BODYSTRUCTURE)."""
    from mail_imap_mcp.mime.params import decode_params

    assert decode_params([("filename*\u00b2", "x"), ("name", "y")]) == {"filename*\u00b2": "x", "name": "y"}
    huge = "filename*" + "9" * 5000  # past int()'s 4,300 digits
    assert decode_params([(huge, "x")]) == {huge: "x"}
