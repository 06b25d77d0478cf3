"""A MIME message read part by part from its file (mime/stream_parts.py) finds the parts, header fields,
bodies, preambles and epilogues the standard library's parser finds, on well-formed and broken multiparts
alike (the cases below and every message of tests/data); a draft nested
too deep, or with a header block beyond its bound, is refused rather than shown in part. Pure: no server."""

from __future__ import annotations

import email.policy
from email.message import Message
from email.parser import BytesParser
from pathlib import Path

import pytest

from mail_imap_mcp.mime.message_file import MessageFile, crlf_chunks
from mail_imap_mcp.mime.stream_parts import MAX_DEPTH, StreamPart, body_size, message_tree, part_message
from mail_imap_mcp.services.send_parts import displayed
from mail_imap_mcp.smtp.refusals import DraftRefused, DraftUnsendable

HEAD = b"From: a@example.org\r\nTo: b@example.org\r\nSubject: s\r\n"
CASES = {
    "mixed": HEAD + b"Content-Type: multipart/mixed; boundary=b\r\n\r\npreamble\r\n--b\r\n"
    b"Content-Type: text/plain\r\n\r\none\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>two</p>\r\n"
    b"--b--\r\nepilogue\r\n",
    "bare line feeds": HEAD.replace(b"\r\n", b"\n") + b"Content-Type: multipart/alternative; boundary=q\n\n"
    b"--q\nContent-Type: text/plain\n\nbare\n--q\nContent-Type: text/html\n\n<i>x</i>\n--q--\n",
    "no closing boundary": HEAD + b"Content-Type: multipart/mixed; boundary=z\r\n\r\n--z\r\n\r\nA\r\n"
    b"--z  \r\n\r\nB\r\n\r\n",
    "closed before it opened": HEAD + b"Content-Type: multipart/mixed; boundary=z\r\n\r\nonly\r\n--z--\r\n",
    "nested, forwarded, empty": HEAD + b'Content-Type: multipart/mixed; boundary="o"\r\n\r\n--o\r\n'
    b"Content-Type: multipart/alternative; boundary=i\r\n\r\n--i\r\n\r\ninner\r\n--i--\r\n--o\r\n--o\r\n"
    b"Content-Type: message/rfc822\r\n\r\nSubject: old\r\n\r\nforwarded\r\n--o--\r\n",
    "boundaries in a row": HEAD + b"Content-Type: multipart/mixed; boundary=r\r\n\r\n--r\r\n--r--\r\n"
    b"\r\nafter a closing line in a row\r\n--r\r\n\r\nlast\r\n--r--\r\n",
    "digest": HEAD + b"Content-Type: multipart/digest; boundary=d\r\n\r\n--d\r\n\r\nSubject: one\r\n\r\n"
    b"first\r\n--d\r\nContent-Type: text/plain\r\n\r\nplain\r\n--d--\r\n",
    "no header/body separator": HEAD + b"not a header line\r\nbody\r\n",
}


def _stdlib_tree(part: Message) -> object:
    """What the standard library's parser finds in ``part``: its type and header fields, its preamble and
    epilogue, and its parts (or its body)."""
    payload = part.get_payload()
    inside = [_stdlib_tree(child) for child in payload] if isinstance(payload, list) else payload
    return (part.get_content_type(), list(part.raw_items()), part.preamble, part.epilogue, inside)


def _streamed_tree(source: MessageFile, part: StreamPart) -> object:
    payload = part.get_payload()
    if isinstance(payload, list):
        inside: object = [_streamed_tree(source, child) for child in payload]
    else:
        inside = part_message(source, part).get_payload()
    return (part.get_content_type(), list(part.raw_items()), part.preamble, part.epilogue, inside)


CORPUS = sorted((Path(__file__).parents[1] / "data").glob("**/*.eml"))


@pytest.mark.parametrize("name", [*CASES, *(path.name for path in CORPUS)])
def test_the_parts_bodies_and_framing_are_the_standard_librarys(name: str) -> None:
    raw = CASES[name] if name in CASES else next(p for p in CORPUS if p.name == name).read_bytes()
    source = MessageFile.of(raw)
    expected = _stdlib_tree(BytesParser(policy=email.policy.default).parsebytes(raw))
    assert _streamed_tree(source, message_tree(source)) == expected


def test_an_attachments_size_is_counted_as_decoded() -> None:
    raw = HEAD + (
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Transfer-Encoding: base64\r\n"
        b"Content-Type: application/pdf\r\n\r\nAAEC\r\nAwQ=\r\n--b\r\nContent-Type: application/x\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\na=3Db=\r\nc\r\n--b--\r\n"
    )
    source = MessageFile.of(raw)
    parts = message_tree(source).get_payload()
    assert isinstance(parts, list) and [body_size(source, part) for part in parts] == [5, 4]


def test_a_draft_nested_too_deep_or_with_a_huge_header_is_refused_not_shown_in_part() -> None:
    nested = HEAD
    for level in range(MAX_DEPTH + 1):
        nested += f"Content-Type: multipart/mixed; boundary=l{level}\r\n\r\n--l{level}\r\n".encode()
    with pytest.raises(DraftRefused) as deep:
        displayed(nested + b"\r\ntext\r\n")
    assert deep.value.reason is DraftUnsendable.MALFORMED and "nested" in deep.value.detail
    huge = HEAD + b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n" + b"X-Pad: x\r\n" * 120_000
    with pytest.raises(DraftRefused) as header:
        displayed(huge + b"\r\ntext\r\n--b--\r\n")
    assert header.value.reason is DraftUnsendable.MALFORMED and "header block" in header.value.detail


def test_line_ends_become_crlf_whichever_piece_they_fall_in() -> None:
    raw = b"a\rb\nc\r\nd\r"
    for size in (1, 2, 3):
        assert b"".join(crlf_chunks(raw[i : i + size] for i in range(0, len(raw), size))) == (
            b"a\r\nb\r\nc\r\nd\r\n"
        )
