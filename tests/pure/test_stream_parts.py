"""A MIME message read part by part from its file (mime/stream_parts.py) finds the parts the standard
library's parser finds, with the same bodies, on well-formed and broken multiparts alike; a draft nested
too deep, or with a header block beyond its bound, is refused rather than shown in part. Pure: no server."""

from __future__ import annotations

import email.policy
from email.message import Message
from email.parser import BytesParser

import pytest

from mail_imap_mcp.mime.message_file import MessageFile, crlf_chunks
from mail_imap_mcp.mime.stream_parts import StreamPart, body_size, child_parts, part_message, read_part
from mail_imap_mcp.services.send_parts import MAX_DEPTH, displayed
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


def _stdlib_leaves(part: Message) -> list[tuple[str, object]]:
    if part.is_multipart():
        return [leaf for child in part.get_payload() for leaf in _stdlib_leaves(child)]  # type: ignore[union-attr]
    return [(part.get_content_type(), part.get_payload())]


def _streamed_leaves(source: MessageFile, part: StreamPart) -> list[tuple[str, object]]:
    children = child_parts(source, part)
    if children is not None:
        return [leaf for child in children for leaf in _streamed_leaves(source, child)]
    return [(part.headers.get_content_type(), part_message(source, part).get_payload())]


@pytest.mark.parametrize("name", CASES)
def test_the_parts_and_bodies_are_the_standard_librarys(name: str) -> None:
    raw = CASES[name]
    source = MessageFile.of(raw)
    expected = _stdlib_leaves(BytesParser(policy=email.policy.default).parsebytes(raw))
    assert _streamed_leaves(source, read_part(source, 0, source.size)) == expected


def test_an_attachments_size_is_counted_as_decoded() -> None:
    raw = HEAD + (
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Transfer-Encoding: base64\r\n"
        b"Content-Type: application/pdf\r\n\r\nAAEC\r\nAwQ=\r\n--b\r\nContent-Type: application/x\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\na=3Db=\r\nc\r\n--b--\r\n"
    )
    source = MessageFile.of(raw)
    parts = child_parts(source, read_part(source, 0, source.size)) or []
    assert [body_size(source, part) for part in parts] == [5, 4]


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
