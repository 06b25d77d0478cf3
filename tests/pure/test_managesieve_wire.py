"""ManageSieve's bytes (``managesieve/wire.py``): strings sent quoted or as literals, the server's lines
read into atoms, strings and response codes, within bounds. No socket: a scripted reader's chunks (and a
session's answer lost to a broken TLS record)."""

from __future__ import annotations

import ssl
from typing import Any

import pytest

from mail_imap_mcp.mail.sieve_errors import SieveOutcomeUnknown
from mail_imap_mcp.managesieve import wire
from mail_imap_mcp.managesieve.errors import SieveProtocolError, SieveTlsFailed, SieveUnavailable
from mail_imap_mcp.managesieve.session import ManageSieveSession, SieveServer, capabilities_of
from mail_imap_mcp.managesieve.wire import Atom, Reader, quoted_or_literal
from mail_imap_mcp.net.budget import CallBudget


class _Chunks:
    """A socket that answers with ``chunks`` one ``recv`` at a time, then the end of the stream."""

    def __init__(self, *chunks: bytes) -> None:
        self._chunks = list(chunks)

    def settimeout(self, timeout: float) -> None:
        pass

    def recv(self, size: int) -> bytes:
        return self._chunks.pop(0) if self._chunks else b""


def _reader(*chunks: bytes) -> Reader:
    sock: Any = _Chunks(*chunks)
    return Reader(sock, lambda: 1.0)


def test_a_string_is_sent_quoted_where_it_may_be_and_as_a_literal_otherwise() -> None:
    assert quoted_or_literal(b"plain name.sieve") == b'"plain name.sieve"'
    assert quoted_or_literal(b'a"b\\c') == b'{5+}\r\na"b\\c'  # timsieved mangles escapes
    assert quoted_or_literal(b"two\r\nlines") == b"{10+}\r\ntwo\r\nlines"
    assert quoted_or_literal(b"x" * 1025).startswith(b"{1025+}\r\n")
    assert quoted_or_literal("Grüße".encode()) == b"{7+}\r\nGr\xc3\xbc\xc3\x9fe"  # timsieved: no 8-bit quoted


def test_lines_split_anywhere_are_read_into_atoms_strings_and_literals() -> None:
    reader = _reader(
        b'"a\\"b c" ACT', b"IVE\r\n{5}\r\nke", b"ep;\r\n", b'NO (QUOTA/MAXSIZE "x") {3}\r\nab', b"c\r\n"
    )
    assert reader.items() == [b'a"b c', Atom("ACTIVE")]
    assert reader.items() == [b"keep;"]
    answer = reader.response()
    assert (answer.kind, answer.code, answer.code_args, answer.text) == (
        "NO",
        "QUOTA/MAXSIZE",
        (b"x",),
        "abc",
    )


def test_a_response_hands_its_data_lines_over_before_its_final_line() -> None:
    lines: list[list[wire.Item]] = []
    answer = _reader(b'"SIEVE" "fileinto vacation"\r\n"STARTTLS"\r\n"VERSION" "1.0"\r\nOK\r\n').response(
        lines.append
    )
    assert answer.kind == "OK"
    offered = capabilities_of(lines)
    assert offered.offers("FileInto") and offered.starttls and offered.checks_and_renames
    assert not offered.offers("include")


@pytest.mark.parametrize(
    "chunks",
    [
        (b"x" * (wire.MAX_LINE_BYTES + 10),),
        (b"{%d}\r\n" % (wire.MAX_LITERAL_BYTES + 1),),
        (b'"unterminated\r\n',),
        (b"(OK\r\n",),
        (b"{12x}\r\n",),
    ],
)
def test_what_breaks_the_protocol_or_the_bounds_is_refused(chunks: tuple[bytes, ...]) -> None:
    with pytest.raises(SieveProtocolError):
        _reader(*chunks).items()


def test_a_closed_stream_is_the_connection_lost() -> None:
    with pytest.raises(SieveUnavailable):
        _reader(b'"half').items()


class _BrokenAfterSend:
    """A TLS socket whose record is refused once a command was sent (a bad MAC, an alert)."""

    def settimeout(self, timeout: float) -> None:
        pass

    def sendall(self, data: bytes) -> None:
        pass

    def recv(self, size: int) -> bytes:
        raise ssl.SSLError(
            1, "[SSL: DECRYPTION_FAILED_OR_BAD_RECORD_MAC] decryption failed or bad record mac"
        )


def test_a_tls_failure_after_a_change_was_sent_is_an_unknown_outcome_not_nothing_changed() -> None:
    """A session's TLS was set up at its start: a TLS error reading the answer to PUTSCRIPT loses the
    answer of a change the server may have made. It said "TLS could not be set up ... Nothing was changed."
    """
    sock: Any = _BrokenAfterSend()
    session = ManageSieveSession(SieveServer("sieve.example.org"), sock, CallBudget(5.0))
    with pytest.raises(SieveOutcomeUnknown):
        session.put_script("rules", 'require "fileinto";\r\nkeep;\r\n')
    with pytest.raises(SieveTlsFailed):  # a read whose answer was lost: nothing was changed by it
        session.list_scripts()


def test_a_response_of_endless_literals_is_refused_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each literal is bounded, but a line goes on after each, and a response has up to 10,000 lines:
    a server's endless literals were all held (gigabytes within the call's time)."""
    monkeypatch.setattr(wire, "MAX_RESPONSE_BYTES", 100)
    many = b"".join(b"{30}\r\n" + b"x" * 30 for _ in range(5)) + b"\r\nOK\r\n"
    with pytest.raises(SieveProtocolError, match="more than 100 bytes"):
        _reader(many).response()
    lines = b'"a"\r\n' * 30 + b"OK\r\n"
    with pytest.raises(SieveProtocolError, match="more than 100 bytes"):
        _reader(lines).response()
    assert _reader(b"{30}\r\n" + b"x" * 30 + b"\r\nOK\r\n").items() == [b"x" * 30]


def test_a_maxredirects_int_cannot_read_is_none_not_a_crash() -> None:
    """``"MAXREDIRECTS" "²"`` passed ``str.isdigit`` and raised ValueError from ``int``, which ``classify``
    does not map: the session's start failed with an exception no failure registry words."""
    assert capabilities_of([[b"MAXREDIRECTS", "\u00b2".encode()]]).max_redirects is None
    assert capabilities_of([[b"MAXREDIRECTS", b"4"]]).max_redirects == 4
