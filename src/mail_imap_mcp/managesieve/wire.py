"""ManageSieve's bytes (RFC 5804 4): strings sent quoted or as a non-synchronizing literal, and the
server's lines read into atoms and strings (quoted, or a ``{n}`` literal of any bytes), each read within
bounds and the call's budget. A final response is ``OK``, ``NO`` or ``BYE`` with an optional response
code and text; every other line is data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mail_imap_mcp.managesieve.errors import SieveProtocolError, SieveUnavailable, Stage
from mail_imap_mcp.net.sockets import Socket

#: The longest line read (a literal's bytes aside).
MAX_LINE_BYTES = 65_536
#: The largest literal read (a script, a verdict).
MAX_LITERAL_BYTES = 4_000_000
#: The most lines one response may have before its final OK, NO or BYE.
MAX_RESPONSE_LINES = 10_000
#: The most bytes one response may have, its literals included (a line goes on after each literal, so
#: the bounds above alone let a server send gigabytes within the call's time).
MAX_RESPONSE_BYTES = 2 * MAX_LITERAL_BYTES
#: The longest text RFC 5804 lets a client send quoted.
_MAX_QUOTED = 1024
_RECV = 65_536
_FINAL = ("OK", "NO", "BYE")


class Atom(str):
    """A bare word of the server's (``OK``, ``ACTIVE``, a response code), apart from a string."""


#: One item of a line: an atom, a string (its bytes), or a parenthesised group of items.
Item = Atom | bytes | tuple["Item", ...]


def quoted_or_literal(value: bytes) -> bytes:
    """``value`` as a client sends a string: quoted where it is short printable ASCII with no ``"`` or
    ``\\`` (nothing to escape), else a non-synchronizing literal ``{n+}`` CRLF and the bytes, exact
    whatever they are. RFC 5804 allows UTF-8 quoted too, but Cyrus's timsieved (3.6) refuses a quoted
    name with 8-bit bytes, then reads the rest of the line, a script's text among it, as commands."""
    if len(value) <= _MAX_QUOTED and all(0x20 <= c < 0x7F and c not in b'"\\' for c in value):
        return b'"' + value + b'"'
    return literal(value)


def literal(value: bytes) -> bytes:
    """``value`` as a non-synchronizing literal (RFC 5804's only literal from a client)."""
    return b"{%d+}\r\n" % len(value) + value


@dataclass(frozen=True)
class Response:
    """A final response: ``kind`` ``OK``, ``NO`` or ``BYE``, its response code (the first atom of the
    parenthesised part, upper-cased, ``""`` without one), that part's strings, and the text."""

    kind: str
    code: str = ""
    code_args: tuple[bytes, ...] = ()
    text: str = ""


class Reader:
    """Reads the server's lines from ``sock``, each wait bounded by ``timeout()`` (the call's budget)."""

    def __init__(self, sock: Socket, timeout: Callable[[], float]) -> None:
        self.sock = sock
        self._timeout = timeout
        self._buffer = bytearray()
        #: The bytes of the response being read (:meth:`response` starts it again).
        self._taken = 0

    def _take(self, size: int) -> None:
        self._taken += size
        if self._taken > MAX_RESPONSE_BYTES:
            raise SieveProtocolError(Stage.COMMAND, f"a response of more than {MAX_RESPONSE_BYTES} bytes")

    def _fill(self) -> None:
        self.sock.settimeout(self._timeout())
        chunk = self.sock.recv(_RECV)
        if not chunk:
            raise SieveUnavailable(Stage.COMMAND, "the server closed the connection")
        self._buffer += chunk

    def _line(self) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            if len(self._buffer) > MAX_LINE_BYTES:
                raise SieveProtocolError(Stage.COMMAND, f"a line longer than {MAX_LINE_BYTES} bytes")
            self._fill()
        self._take(end + 2)
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 2]
        return line

    def _exactly(self, size: int) -> bytes:
        self._take(size)
        while len(self._buffer) < size:
            self._fill()
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def items(self) -> list[Item]:
        """The next logical line as items (literals read in full, the line going on after each)."""
        stack: list[list[Item]] = [[]]
        line, pos = self._line(), 0
        while True:
            if pos >= len(line):
                if len(stack) != 1:
                    raise SieveProtocolError(Stage.COMMAND, "an unclosed parenthesis")
                return stack[0]
            char = line[pos : pos + 1]
            if char == b" ":
                pos += 1
            elif char == b"(":
                stack.append([])
                pos += 1
            elif char == b")":
                if len(stack) == 1:
                    raise SieveProtocolError(Stage.COMMAND, "an unopened parenthesis")
                group = tuple(stack.pop())
                stack[-1].append(group)
                pos += 1
            elif char == b'"':
                value, pos = _quoted(line, pos + 1)
                stack[-1].append(value)
            elif char == b"{" and line.endswith(b"}"):
                stack[-1].append(self._exactly(_literal_size(line[pos + 1 : -1])))
                line, pos = self._line(), 0
            else:
                end = pos
                while end < len(line) and line[end : end + 1] not in (b" ", b"(", b")", b'"'):
                    end += 1
                stack[-1].append(Atom(line[pos:end].decode("utf-8", "replace")))
                pos = end

    def response(self, on_data: Callable[[list[Item]], None] = lambda _: None) -> Response:
        """Read up to the final response, handing each data line to ``on_data``; at most
        :data:`MAX_RESPONSE_LINES` lines and :data:`MAX_RESPONSE_BYTES` bytes."""
        self._taken = 0
        for _ in range(MAX_RESPONSE_LINES):
            items = self.items()
            if items and isinstance(items[0], Atom) and items[0].upper() in _FINAL:
                return final(items)
            on_data(items)
        raise SieveProtocolError(Stage.COMMAND, f"a response of more than {MAX_RESPONSE_LINES} lines")


def final(items: list[Item]) -> Response:
    """The :class:`Response` of a final line's items."""
    kind, code, text = str(items[0]).upper(), "", ""
    code_args: tuple[bytes, ...] = ()
    for item in items[1:]:
        if isinstance(item, tuple) and item and isinstance(item[0], Atom):
            code = item[0].upper()
            code_args = tuple(part for part in item[1:] if isinstance(part, bytes))
        elif isinstance(item, bytes):
            text = item.decode("utf-8", "replace")
    return Response(kind, code, code_args, text)


def text_of(item: Item) -> str:
    """A string or atom item as text (UTF-8)."""
    if isinstance(item, bytes):
        return item.decode("utf-8", "replace")
    if isinstance(item, str):
        return str(item)
    raise SieveProtocolError(Stage.COMMAND, "a list where a string was expected")


def _quoted(line: bytes, pos: int) -> tuple[bytes, int]:
    out = bytearray()
    while pos < len(line):
        byte = line[pos]
        if byte == 0x5C and pos + 1 < len(line):  # backslash: the next byte as it is
            out.append(line[pos + 1])
            pos += 2
        elif byte == 0x22:
            return bytes(out), pos + 1
        else:
            out.append(byte)
            pos += 1
    raise SieveProtocolError(Stage.COMMAND, "an unterminated quoted string")


def _literal_size(spec: bytes) -> int:
    digits = spec.rstrip(b"+")
    if not digits.isdigit():
        raise SieveProtocolError(Stage.COMMAND, f"a malformed literal {spec[:20]!r}")
    size = int(digits)
    if size > MAX_LITERAL_BYTES:
        raise SieveProtocolError(Stage.COMMAND, f"a literal of {size} bytes, more than {MAX_LITERAL_BYTES}")
    return size
