"""The IMAP side of the Gmail emulation: reading commands (atoms, quoted strings, literals, lists,
``BODY[...]<...>`` items) from a socket and writing answers, with sequence sets and dates."""

from __future__ import annotations

import datetime as dt
import re
import select
import socket
import ssl
from dataclasses import dataclass

#: The longest command line (and literal) the emulation reads, as servers bound them.
MAX_LINE = 1 << 20
MAX_LITERAL = 64 << 20
_LITERAL_TAIL = re.compile(rb"\{(\d+)(\+?)\}\r?\n$")
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


class ProtocolError(Exception):
    """A command the emulation cannot read: answered BAD."""


class Closed(Exception):
    """The client hung up."""


@dataclass
class Literal:
    data: bytes


Token = str | bytes | list["Token"]


class Channel:
    """A client's socket (plain or TLS), read a line or a literal at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise Closed
        self.buffer += chunk

    def line(self) -> bytes:
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_LINE:
                raise ProtocolError("line too long")
            self._fill()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def readable(self, timeout: float) -> bool:
        if self.buffer or (isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()):
            return True
        ready, _, _ = select.select([self.sock], [], [], timeout)
        return bool(ready)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def command(self) -> list[bytes | Literal]:
        """One command: its text, and the literals in it (a ``+`` continuation sent for each
        synchronising literal)."""
        parts: list[bytes | Literal] = []
        while True:
            line = self.line()
            found = _LITERAL_TAIL.search(line)
            if not found:
                parts.append(line.rstrip(b"\r\n"))
                return parts
            size = int(found.group(1))
            if size > MAX_LITERAL:
                raise ProtocolError("literal too large")
            parts.append(line[: found.start()] + b"{}")
            if not found.group(2):
                self.send(b"+ go ahead\r\n")
            parts.append(Literal(self.exactly(size)))


def tokenize(parts: list[bytes | Literal]) -> list[Token]:
    """The tokens of a command: atoms as ``str``, strings and literals as ``bytes``, lists as lists."""
    stack: list[list[Token]] = [[]]
    for part in parts:
        if isinstance(part, Literal):
            stack[-1].append(part.data)
            continue
        text = part[:-2] if part.endswith(b"{}") else part
        position = 0
        while position < len(text):
            char = text[position : position + 1]
            if char == b" ":
                position += 1
            elif char == b"(":
                stack.append([])
                position += 1
            elif char == b")":
                if len(stack) == 1:
                    raise ProtocolError("unbalanced )")
                done = stack.pop()
                stack[-1].append(done)
                position += 1
            elif char == b'"':
                quoted, position = _quoted(text, position + 1)
                stack[-1].append(quoted)
            else:
                atom, position = _atom(text, position)
                stack[-1].append(atom)
    if len(stack) != 1:
        raise ProtocolError("unbalanced (")
    return stack[0]


def _quoted(text: bytes, position: int) -> tuple[bytes, int]:
    out = bytearray()
    while position < len(text):
        char = text[position]
        if char == 0x5C and position + 1 < len(text):
            out.append(text[position + 1])
            position += 2
        elif char == 0x22:
            return bytes(out), position + 1
        else:
            out.append(char)
            position += 1
    raise ProtocolError("unterminated string")


def _atom(text: bytes, position: int) -> tuple[str, int]:
    start = position
    depth = 0
    while position < len(text):
        char = text[position : position + 1]
        if char == b"[":
            depth += 1
        elif char == b"]":
            depth -= 1
        elif depth == 0 and char in (b" ", b"(", b")"):
            break
        position += 1
    return text[start:position].decode("utf-8", "replace"), position


def text(token: Token) -> str:
    """An atom or string as text."""
    if isinstance(token, list):
        raise ProtocolError("a list where a string was expected")
    return token.decode("utf-8", "replace") if isinstance(token, bytes) else token


def listed(token: Token) -> list[Token]:
    """A parenthesised list's items."""
    if not isinstance(token, list):
        raise ProtocolError("a list was expected")
    return token


def sequence_set(value: str, largest: int) -> set[int]:
    """The numbers of a sequence set (``*`` is ``largest``); empty when nothing is there."""
    numbers: set[int] = set()
    for item in value.split(","):
        low, _, high = item.partition(":")
        try:
            first = largest if low == "*" else int(low)
            last = first if not high else (largest if high == "*" else int(high))
        except ValueError as exc:
            raise ProtocolError(f"bad sequence set {value!r}") from exc
        first, last = min(first, last), max(first, last)
        if last - first > 10_000_000:
            raise ProtocolError("sequence range too large")
        numbers.update(range(first, last + 1))
    return numbers


def uid_set(numbers: list[int]) -> str:
    """A compact sequence set (``1:3,7``)."""
    out: list[str] = []
    ordered = sorted(numbers)
    index = 0
    while index < len(ordered):
        end = index
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        out.append(str(ordered[index]) if end == index else f"{ordered[index]}:{ordered[end]}")
        index = end + 1
    return ",".join(out)


def imap_date(value: str) -> dt.date:
    day, month, year = value.split("-")
    return dt.date(int(year), _MONTHS.index(month.capitalize()) + 1, int(day))


def internaldate_text(value: dt.datetime) -> str:
    return f"{value.day:02d}-{_MONTHS[value.month - 1]}-{value.year} {value.strftime('%H:%M:%S %z')}"


def parse_internaldate(value: str) -> dt.datetime:
    day, month, rest = value.strip().split("-", 2)
    return dt.datetime.strptime(f"{int(day):02d}-{month.capitalize()}-{rest}", "%d-%b-%Y %H:%M:%S %z")


def astring(value: str) -> bytes:
    """A mailbox or label name as an atom where it can be one, else quoted."""
    if value and re.fullmatch(r"[\\]?[A-Za-z0-9_.\-/&+\[\]!#$'*,:;<=>?@^`|~]+", value) and "]" not in value:
        return value.encode()
    return b'"' + value.replace("\\", "\\\\").replace('"', '\\"').encode() + b'"'
