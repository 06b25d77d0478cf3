"""Our FETCH answer parser gives what imapclient's gives, result or exception, on any input.

``mail_imap_mcp.imap.fetch_response.parse_fetch_response`` finds tokens with one regular expression
where imapclient's lexer walks the bytes one by one; every answer it does not read the way imapclient
does goes to imapclient's parser. Each case compares both on the same imaplib data: hand-written
answers of every shape the lexer treats specially, then answers composed at random by Hypothesis from
those pieces and from arbitrary bytes. The servers' real answers are compared in
tests/integration/reading/test_fetch_response_servers.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from imapclient.response_parser import parse_fetch_response as imapclient_parse

from mail_imap_mcp.imap import fetch_response
from mail_imap_mcp.imap.fetch_response import parse_fetch_response
from tests.support.shared.fetch_response import typed

Data = list[Any]


def outcome(parse: Any, data: Data, normalise_times: bool, uid_is_key: bool) -> Any:
    """What ``parse`` gives: its result with every value's type (True == 1, a tuple is no list), or
    the type and words of what it raised."""
    try:
        parsed = parse(data, normalise_times, uid_is_key)
    except Exception as exc:
        return ("raised", type(exc), str(exc))
    return [(key, typed(value)) for key, value in parsed.items()]


def assert_same(data: Data) -> None:
    for normalise_times in (True, False):
        for uid_is_key in (True, False):
            ours = outcome(parse_fetch_response, data, normalise_times, uid_is_key)
            theirs = outcome(imapclient_parse, data, normalise_times, uid_is_key)
            assert ours == theirs, data


HEADER = b"From: Ana <ana@example.org>\r\nSubject: hi\r\n\r\n"
SUMMARY = (
    b'1 (UID 31 FLAGS (\\Seen $Important) INTERNALDATE " 4-Mar-2024 09:26:53 +0100" RFC822.SIZE 2210 '
    b'BODYSTRUCTURE (("text" "plain" ("charset" "utf-8" "format" "flowed") NIL NIL "quoted-printable" 312 9 '
    b'NIL NIL NIL NIL)("application" "pdf" ("name" "q1 \\"final\\".pdf") NIL NIL "base64" 1800 NIL '
    b'("attachment" ("filename" "q1.pdf")) NIL NIL) "mixed" ("boundary" "b1") NIL NIL NIL) '
    b"BODY[HEADER.FIELDS (FROM TO SUBJECT DATE)]<0> {%d}" % len(HEADER)
)


def test_a_summary_answer_with_literals_parses_as_imapclient_parses_it() -> None:
    data: Data = [(SUMMARY, HEADER), (b" BODY[TEXT]<0> {5}", b"hello"), b")"]
    assert_same(data)
    assert fetch_response._values(data) is not None  # read by the regular expression, not handed over


def test_several_messages_and_an_envelope_parse_as_imapclient_parses_them() -> None:
    envelope = (
        b'ENVELOPE ("Thu, 14 Mar 2024 09:26:53 +0100" "Re: \\"x\\"" (("Ana" NIL "ana" "example.org")) '
        b'NIL NIL (("Bo" NIL "bo" "example.com")) NIL NIL "<a@b>" "<c@d>")'
    )
    data: Data = [b"1 (UID 7 " + envelope + b")", b"2 (FLAGS () UID 8 RFC822.SIZE 0)", b"3 (UID 9 BODY NIL)"]
    assert_same(data)


@pytest.mark.parametrize(
    "line",
    [
        b'1 (UID 5 X "a\\\\b\\"c\\d")',  # escapes imapclient reads (\\ and \") and one it keeps (\d)
        b'1 (UID 5 X "")',
        b"1 (UID 5 X NIL Y nil Z 007 W 0 V 10 U -3 T 1.5)",
        b'1 (UID 5 BODY[HEADER.FIELDS (FROM "TO")]<0> NIL)',  # a section holds spaces and quotes
        b"1 (UID 5 X a]b)",
        b"1 (UID 5 X \xe9t\xe9 Y \x7f)",
        b'1 (UID 5 X "a"b)',  # a string ends a token
        b'1 (UID 5 X a"b")',  # a quote inside an atom: imapclient raises
        b"1 (UID 5 X %)",
        b"1 (UID 5 X a%b)",
        b"1 (UID 5 X \x01)",
        b"1 (UID 5 X a\x00b)",
        b"1 (UID 5\tX\r\nY)",
        b'1 (UID 5 X "open)',
        b'1 (UID 5 X "trailing\\',
        b"1 (UID 5 X BODY[TEXT)",
        b"1 (UID 5 X (a (b)",
        b"1 (UID 5 X a))",
        b")",
        b"1 (UID 5 X)",
        b"1 (UID 5",
        b"1",
        b"x (UID 5)",
        b"007 (UID 5)",
        b"1 (UID 05 FLAGS ())",
        b"1 (UID x)",
        b"1 ((UID) 5)",
        b"1 UID",
        b'1 (UID 5 INTERNALDATE "not a date")',
        b"1 (UID 5 INTERNALDATE NIL)",
        b"1 (UID 5 INTERNALDATE (1 2))",
        b"1 (UID 5 BODYSTRUCTURE NIL)",
        b'1 (UID 5 BODYSTRUCTURE ("text"))',
        b"1 (UID 5 ENVELOPE (NIL))",
        b"1 (uid 5 flags (\\Seen))",
        b"1 (UID 5 X {3})",
        b"",
        b"   ",
    ],
)
def test_an_answer_of_each_shape_parses_as_imapclient_parses_it(line: bytes) -> None:
    assert_same([line])


@pytest.mark.parametrize(
    "data",
    [
        [(b"1 (UID 5 X {3}", b"abc"), b")"],
        [(b"1 (UID 5 X {4}", b"abc"), b")"],  # the literal is shorter than announced
        [(b"1 (UID 5 X {+3}", b"abc"), b")"],
        [(b"1 (UID 5 X {03}", b"abc"), b")"],
        [(b"1 (UID 5 X {x}", b"abc"), b")"],
        [(b"1 (UID 5 X {3} Y", b"abc"), b")"],  # a marker that does not end its line
        [(b"1 (UID 5 X {3} {3}", b"abc"), b")"],
        [(b"1 (UID 5 X {0}", b""), b")"],
        [(b"1 (UID 5 X {3}", b"a)b"), b" Y (", b"))"],
        [b"1 (UID 5)", None],
        [None],
        [("1 (UID 5)", b"")],
    ],
)
def test_literals_and_odd_records_parse_as_imapclient_parses_them(data: Data) -> None:
    assert_same(data)


PIECES = [
    b"(", b")", b" ", b"  ", b"\t", b"\r\n", b"NIL", b"nil", b"0", b"007", b"42", b"UID", b"FLAGS",
    b"INTERNALDATE", b"BODYSTRUCTURE", b"BODY", b"ENVELOPE", b"RFC822.SIZE", b"\\Seen", b"$Label",
    b'" 4-Mar-2024 09:26:53 +0100"', b'"text"', b'"plain"', b'""', b'"a\\"b"', b'"a\\\\"', b'"a\\b"',
    b"BODY[HEADER.FIELDS (FROM)]<0>", b"BODY[", b"]", b"[", b"%", b"\x00", b"\x1f", b'"', b"\\", b"{3}",
    b"{x}", b"\xe9", b"\x7f", b"a]b",
]  # fmt: skip


@st.composite
def answers(draw: st.DrawFn) -> Data:
    """imaplib data: lines of pieces and arbitrary bytes, some ending in a literal marker with its literal."""
    data: Data = []
    for _ in range(draw(st.integers(1, 3))):
        piece = st.one_of(st.sampled_from(PIECES), st.binary(max_size=3))
        line = b"".join(draw(st.lists(piece, max_size=20)))
        if draw(st.booleans()):
            line = draw(st.sampled_from([b"1 (UID 5 ", b"2 (", b"", b"3 (UID 6 X "])) + line
        if draw(st.booleans()):
            literal = draw(st.binary(max_size=6))
            size = draw(st.sampled_from([len(literal), len(literal) + 1]))
            data.append((line + b"{%d}" % size, literal))
        else:
            data.append(line)
    return data


@settings(max_examples=300, deadline=None)
@given(answers())
def test_random_answers_parse_as_imapclient_parses_them(data: Data) -> None:
    assert_same(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"1 (UID 5 X ", b"(", b")", b'"q"', b"NIL", b" ", b"7"]), max_size=40))
def test_random_nesting_parses_as_imapclient_parses_it(pieces: list[bytes]) -> None:
    assert_same([b"".join(pieces)])
