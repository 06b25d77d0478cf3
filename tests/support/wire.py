"""The wire recorder: a loopback relay that records the bytes of every IMAP connection, and a parser
that splits a client's bytes into commands (raising ``ProtocolViolation`` on anything malformed).

``check_traffic`` polices what a read-only call sent (well-formed, read-only commands, no BAD answers);
``examined`` lists the mailboxes it EXAMINEd. Used by the hostile-input, round-trip and capability
tests to pin what reaches the server.
"""

from __future__ import annotations

import contextlib
import re
import select
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from imapclient import imap_utf7


class ImapRecorder:
    """A loopback TCP relay to Dovecot's plaintext port that records every byte in both directions.

    ``take()`` returns what each connection sent (and received) since the previous ``take()``; calls are
    sequential and a client only gets an answer after its bytes passed the relay, so after a tool call
    returns, everything it sent has been recorded.
    """

    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self._target = (host, target_port)
        self._listener = socket.create_server((host, 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self.sent: list[bytearray] = []  # client -> server, one buffer per connection
        self.received: list[bytearray] = []  # server -> client
        self._taken: list[tuple[int, int]] = []
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            sent, received = bytearray(), bytearray()
            with self._lock:
                self.sent.append(sent)
                self.received.append(received)
                self._taken.append((0, 0))
                self._sockets += [client, upstream]
            for src, dst, buffer in ((client, upstream, sent), (upstream, client, received)):
                threading.Thread(target=self._pump, args=(src, dst, buffer), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, buffer: bytearray) -> None:
        try:
            while data := src.recv(65536):
                with self._lock:
                    buffer += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def take(self) -> list[tuple[bytes, bytes]]:
        """(sent, received) bytes per connection since the last call (connections with no traffic omitted)."""
        out = []
        with self._lock:
            for index, (sent, received) in enumerate(zip(self.sent, self.received, strict=True)):
                start_sent, start_received = self._taken[index]
                if len(sent) > start_sent or len(received) > start_received:
                    out.append((bytes(sent[start_sent:]), bytes(received[start_received:])))
                self._taken[index] = (len(sent), len(received))
        return out

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()


class ProtocolViolation(AssertionError):
    """Bytes sent to the server that are not a sequence of well-formed IMAP commands."""


@dataclass(frozen=True)
class Atom:
    text: str


@dataclass(frozen=True)
class String:
    """A quoted string or a literal, as the bytes the server decodes it to."""

    value: bytes
    literal: bool


Token = Atom | String | list[Any]


@dataclass
class Command:
    tag: str
    verb: str  # "UID FETCH", "EXAMINE", ...
    args: list[Token]
    raw: bytes = field(repr=False)


_LITERAL = re.compile(rb"\{(\d+)(\+?)\}\r\n")


def _parse_quoted(data: bytes, pos: int) -> tuple[String, int]:
    out = bytearray()
    pos += 1
    while True:
        if pos >= len(data):
            raise ProtocolViolation("unterminated quoted string")
        byte = data[pos]
        if byte == 0x22:
            return String(bytes(out), literal=False), pos + 1
        if byte == 0x5C:
            escaped = data[pos + 1 : pos + 2]
            if escaped not in (b'"', b"\\"):
                raise ProtocolViolation(f"invalid escape {escaped!r} in a quoted string")
            out += escaped
            pos += 2
            continue
        if byte in (0x00, 0x0A, 0x0D) or byte > 0x7F:
            raise ProtocolViolation(f"byte {byte:#04x} inside a quoted string")
        out.append(byte)
        pos += 1


def _parse_atom(data: bytes, pos: int) -> tuple[Atom, int]:
    start, depth = pos, 0
    while pos < len(data):
        byte = data[pos]
        if byte == 0x5B:  # [ ... ] of a fetch section may hold spaces and parentheses
            depth += 1
        elif byte == 0x5D:
            depth -= 1
        elif depth == 0 and byte in b" ()\r":
            break
        if byte in (0x00, 0x0A, 0x0D, 0x22, 0x7B) or byte > 0x7E or byte < 0x20:
            raise ProtocolViolation(f"byte {byte:#04x} inside an atom")
        pos += 1
    if pos == start or depth != 0:
        raise ProtocolViolation("empty atom or unbalanced [ ]")
    return Atom(data[start:pos].decode("ascii")), pos


def _parse_command(data: bytes, pos: int) -> tuple[list[Token], int]:
    root: list[Token] = []
    stack: list[list[Token]] = [root]
    while True:
        if pos >= len(data):
            raise ProtocolViolation("incomplete command (no CRLF)")
        byte = data[pos]
        if byte == 0x0D:
            if data[pos + 1 : pos + 2] != b"\n":
                raise ProtocolViolation("bare CR")
            if len(stack) != 1:
                raise ProtocolViolation("unbalanced parentheses")
            return root, pos + 2
        if byte == 0x20:
            pos += 1
        elif byte == 0x28:
            nested: list[Token] = []
            stack[-1].append(nested)
            stack.append(nested)
            pos += 1
        elif byte == 0x29:
            if len(stack) == 1:
                raise ProtocolViolation("unbalanced ')'")
            stack.pop()
            pos += 1
        elif byte == 0x22:
            token, pos = _parse_quoted(data, pos)
            stack[-1].append(token)
        elif byte == 0x7B:
            match = _LITERAL.match(data, pos)
            if not match:
                raise ProtocolViolation("malformed literal announcement")
            size, start = int(match.group(1)), match.end()
            if len(data) < start + size:
                raise ProtocolViolation("literal cut short")
            value = data[start : start + size]
            if b"\x00" in value:
                raise ProtocolViolation("NUL inside a literal")
            stack[-1].append(String(value, literal=True))
            pos = start + size
        else:
            atom, pos = _parse_atom(data, pos)
            stack[-1].append(atom)


def parse_commands(data: bytes) -> list[Command]:
    """Split a client's byte stream into commands; raise ProtocolViolation on anything malformed."""
    commands: list[Command] = []
    pos = 0
    while pos < len(data):
        start = pos
        tokens, pos = _parse_command(data, pos)
        if len(tokens) < 2 or not all(isinstance(t, Atom) for t in tokens[:2]):
            raise ProtocolViolation(f"not a command: {data[start:pos][:200]!r}")
        tag, verb = tokens[0], tokens[1]
        assert isinstance(tag, Atom) and isinstance(verb, Atom)
        name, rest = verb.text.upper(), tokens[2:]
        if name == "UID" and rest and isinstance(rest[0], Atom):
            name, rest = f"UID {rest[0].text.upper()}", rest[1:]
        commands.append(Command(tag.text, name, rest, data[start:pos]))
    return commands


#: Everything a read-only client may say. Anything else (SELECT, STORE, COPY, MOVE, EXPUNGE, APPEND,
#: CREATE, DELETE, RENAME, SUBSCRIBE, ...) would be a bug, or an injection.
READ_ONLY_COMMANDS = frozenset(
    {
        "CAPABILITY",
        "LOGIN",
        "LOGOUT",
        "NOOP",
        "ID",
        "ENABLE",
        "LIST",
        "STATUS",
        "EXAMINE",
        # Leave an EXAMINEd mailbox before STATUS of it; CLOSE expunges nothing when the mailbox was
        # EXAMINEd (RFC 3501 6.4.2), and SELECT is not in this set.
        "UNSELECT",
        "CLOSE",
        "UID SEARCH",
        "UID SORT",
        "UID THREAD",
        "UID FETCH",
        # By sequence number (imap_get_changes: the newest messages), policed as UID FETCH is.
        "FETCH",
    }
)
_FETCH_ITEM = re.compile(
    r"^(UID|FLAGS|MODSEQ|INTERNALDATE|RFC822\.SIZE|BODYSTRUCTURE|ENVELOPE|BODY\.PEEK\[[^\]]*\](<\d+\.\d+>)?)$"
)
#: FETCH modifiers a read may send (RFC 7162: only the changes since a modification sequence, and with
#: QRESYNC the messages expunged since).
_FETCH_MODIFIER = re.compile(r"^CHANGEDSINCE [0-9]+( VANISHED)?$")
_BAD_RESPONSE = re.compile(rb"(?m)^([A-Za-z0-9]+) BAD ")


def flat_tokens(tokens: list[Token]) -> Iterator[Atom | String]:
    """The atoms and strings of ``tokens``, parenthesised lists flattened."""
    for token in tokens:
        if isinstance(token, list):
            yield from flat_tokens(token)
        else:
            yield token


def _fetch_items(command: Command) -> list[str]:
    """The items of a FETCH (its second argument; what follows are modifiers)."""
    items: list[str] = []
    for token in command.args[1:2]:
        for item in flat_tokens([token]):
            assert isinstance(item, Atom), f"non-atom FETCH item {item!r}"
            items.append(item.text)
    return items


def check_traffic(traffic: list[tuple[bytes, bytes]]) -> list[Command]:
    """Parse and police everything one call sent; return its commands."""
    commands: list[Command] = []
    for sent, received in traffic:
        parsed = parse_commands(sent)
        tags = {c.tag for c in parsed}
        assert len(tags) == len(parsed), "a tag was reused: a command line was injected"
        for command in parsed:
            assert command.verb in READ_ONLY_COMMANDS, f"non-read-only command sent: {command.raw[:200]!r}"
            if command.verb in ("UID FETCH", "FETCH"):
                for item in _fetch_items(command):
                    assert _FETCH_ITEM.match(item), f"FETCH item {item!r} could set \\Seen or is unexpected"
                for modifier in command.args[2:]:
                    text = " ".join(t.text for t in flat_tokens([modifier]) if isinstance(t, Atom))
                    assert isinstance(modifier, list) and _FETCH_MODIFIER.match(text), (
                        f"FETCH modifier {text!r}"
                    )
        for match in _BAD_RESPONSE.finditer(received):
            if match.group(1).decode() in tags:
                line = received[match.start() : received.find(b"\n", match.start())]
                raise AssertionError(f"Dovecot answered BAD (we sent malformed syntax): {line!r}")
        commands += parsed
    return commands


def token_bytes(token: Token) -> bytes | None:
    """What a string or atom says, as bytes (None for a parenthesised list)."""
    if isinstance(token, String):
        return token.value
    if isinstance(token, Atom):
        return token.text.encode()
    return None


def examined(commands: list[Command]) -> list[str]:
    """Decoded mailbox names of every EXAMINE."""
    names = []
    for command in commands:
        if command.verb == "EXAMINE":
            raw = token_bytes(command.args[0])
            assert raw is not None
            names.append(imap_utf7.decode(raw))
    return names


def has_news(connection: Any) -> bool:
    """Whether an idle account connection's socket (``connection._client``) has something to read now:
    data the server sent unasked, an EOF or a reset, once it passed every relay on the way; what the
    next call meets there."""
    client = connection._client
    return client is not None and bool(select.select([client.socket()], [], [], 0)[0])
