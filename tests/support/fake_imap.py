"""A scripted IMAP server under the session, at the socket: no server, no thread, no network.

``AccountConnection(..., open_socket=fake.open_socket)`` runs the whole stack (imaplib's parser,
imapclient, :class:`~mail_imap_mcp.imap.budget.BudgetedIMAP4` and its round-trip count, the session,
the connection's retry and error handling) over a :class:`ScriptedServer`: the client's bytes are
recorded and each command it sends gets the next answer of the script, with ``{tag}`` standing for the
command's tag. A command the script does not expect, or a wait for an answer the script does not have,
fails the test with a :class:`ScriptMismatch` naming it (a ``BaseException``, so no error handling of
the code under test can take it for a server's failure). As imapclient's own ``testable_imapclient``
replaces the IMAP4 object, this replaces the socket under it, so the client code is the code that ships.
"""

from __future__ import annotations

import re
import socket
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

#: A greeting with a [CAPABILITY] code (as Dovecot sends one): no CAPABILITY command follows.
GREETING = b"* OK [CAPABILITY IMAP4rev1 LITERAL+ SASL-IR LOGIN-REFERRALS ID ENABLE IDLE AUTH=PLAIN] ready"
#: What LOGIN answers on Dovecot: the session's capabilities in the tagged OK.
LOGIN_OK = (
    b"{tag} OK [CAPABILITY IMAP4rev1 LITERAL+ SASL-IR ID ENABLE IDLE SORT THREAD=REFERENCES ESEARCH "
    b"UIDPLUS MOVE CONDSTORE NAMESPACE UNSELECT LIST-EXTENDED LIST-STATUS] Logged in"
)

_COMMAND = re.compile(rb"^(?P<tag>[A-Za-z0-9]+) (?P<command>(?:UID )?[A-Za-z]+)")
_LITERAL = re.compile(rb"\{(\d+)(\+?)\}\r\n$")


class ScriptMismatch(BaseException):
    """The client did what the script did not expect."""


@dataclass
class Step:
    """One command the script expects (``UID FETCH``, ``LOGIN``: the verb, with UID when sent) and the
    lines the server answers it with (``{tag}`` is the command's tag). ``then_close``: the server closes
    the connection after these lines (a BYE, a crash)."""

    command: str
    answer: Sequence[bytes]
    then_close: bool = False


@dataclass
class Sent:
    """A command as the client sent it: its tag, verb and whole text (literals included)."""

    tag: str
    command: str
    text: bytes


def answer(command: str, *lines: bytes, then_close: bool = False) -> Step:
    """A :class:`Step`: ``command`` answered with ``lines`` (each without its CRLF)."""
    return Step(command, lines, then_close)


def ok(command: str, *untagged: bytes) -> Step:
    """``command`` answered with ``untagged`` lines and a tagged OK."""
    return answer(command, *untagged, b"{tag} OK " + command.encode() + b" completed")


LOGOUT = answer("LOGOUT", b"* BYE Logging out", b"{tag} OK Logout completed.", then_close=True)


@dataclass
class ScriptedServer:
    """The server's side of one or more connections, played from ``script`` in order."""

    script: deque[Step] = field(default_factory=deque)
    greeting: bytes = GREETING
    #: Every command received, in order, over all connections.
    received: list[Sent] = field(default_factory=list)
    connections: int = 0
    sockets: list[FakeSocket] = field(default_factory=list)

    def expect(self, *steps: Step) -> None:
        """Add ``steps`` to the script."""
        self.script.extend(steps)

    def open_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        """What ``AccountConnection(open_socket=...)`` calls instead of a TCP connect."""
        self.connections += 1
        fake = FakeSocket(self)
        fake.queue(self.greeting + b"\r\n")
        self.sockets.append(fake)
        return fake  # type: ignore[return-value]  # duck-typed: what imaplib uses of a socket

    def commands(self) -> list[str]:
        """The verbs received since the last call (what ``Plan.commands`` of test_round_trips holds)."""
        taken, self.received = self.received, []
        return [sent.command for sent in taken]

    def next_step(self, sent: Sent) -> Step:
        self.received.append(sent)
        if sent.command == "LOGOUT" and not (self.script and self.script[0].command.upper() == "LOGOUT"):
            return LOGOUT  # closing the client at the end of a test needs no script
        if not self.script:
            raise ScriptMismatch(f"the script has no answer for {sent.text!r}")
        step = self.script.popleft()
        if step.command.upper() != sent.command:
            raise ScriptMismatch(f"the script expected {step.command}, the client sent {sent.text!r}")
        return step


class FakeSocket:
    """A socket whose peer is a :class:`ScriptedServer`: what the client sends is parsed into commands,
    each answered at once into the buffer the client reads from."""

    def __init__(self, server: ScriptedServer) -> None:
        self._server = server
        self._incoming = bytearray()  # what the server said and the client has not read
        self._outgoing = bytearray()  # what the client sent that makes no whole command yet
        self._continued = 0  # where the last literal that got its continuation starts
        self._eof = False
        # A real descriptor, readable exactly when a real socket would be (data waiting, or the end), for
        # the select() of the greeting wait and of the idle check: one byte stands for any data waiting.
        self._readable, self._peer = socket.socketpair()
        self._signalled = False
        self.closed = False

    def queue(self, data: bytes) -> None:
        self._incoming += data
        if self._incoming and not self._signalled and not self._eof:
            self._peer.send(b"!")
            self._signalled = True

    def hang_up(self) -> None:
        """The server closes the connection: the client reads what was sent, then the end."""
        self._eof = True
        self._peer.close()

    def _taken(self) -> None:
        if not self._incoming and self._signalled and not self._eof:
            self._readable.recv(1)
            self._signalled = False

    # -- what imaplib and the connection call --------------------------------------------------------

    def makefile(self, mode: str) -> FakeSocket:
        return self

    def settimeout(self, timeout: float | None) -> None:
        pass

    def setblocking(self, flag: bool) -> None:
        pass

    def setsockopt(self, *args: object) -> None:
        pass

    def fileno(self) -> int:
        return self._readable.fileno()

    def sendall(self, data: bytes) -> None:
        if self._eof:
            raise BrokenPipeError("the scripted server closed the connection")
        self._outgoing += data
        self._take_commands()

    def readline(self, limit: int = -1) -> bytes:
        end = self._incoming.find(b"\n")
        if end < 0:
            return self._end_of_data()
        line = bytes(self._incoming[: end + 1])
        del self._incoming[: end + 1]
        self._taken()
        return line

    def read(self, size: int) -> bytes:
        if not self._incoming:
            return self._end_of_data()
        data = bytes(self._incoming[:size])
        del self._incoming[:size]
        self._taken()
        return data

    def recv(self, size: int, flags: int = 0) -> bytes:
        """A peek (the idle check's): what is waiting, the end once the server closed, else nothing yet."""
        if self._incoming:
            return bytes(self._incoming[:size])
        if self._eof:
            return b""
        raise BlockingIOError()

    def shutdown(self, how: int) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._readable.close()
            self._peer.close()

    # -- the server's side -----------------------------------------------------------------------------

    def _end_of_data(self) -> bytes:
        if self._eof:
            return b""
        raise ScriptMismatch("the client waits for an answer the script does not give")

    def _take_commands(self) -> None:
        """Answer every whole command sent so far. A command ends at a CRLF that announces no literal; a
        synchronising literal (``{n}``) gets its continuation (``+``) once announced, as a server sends."""
        scan = 0
        while True:
            end = self._outgoing.find(b"\r\n", scan)
            if end < 0:
                return
            literal = _LITERAL.search(bytes(self._outgoing[scan : end + 2]))
            if literal is None:
                text = bytes(self._outgoing[: end + 2])
                del self._outgoing[: end + 2]
                self._continued = 0
                scan = 0
                self._answer(text)
                continue
            scan = end + 2 + int(literal.group(1))
            if len(self._outgoing) < scan:
                if not literal.group(2) and self._continued < end + 2:
                    self._continued = end + 2
                    self.queue(b"+ go ahead\r\n")
                return

    def _answer(self, text: bytes) -> None:
        found = _COMMAND.match(text)
        if found is None:
            raise ScriptMismatch(f"not an IMAP command: {text!r}")
        tag = found.group("tag")
        sent = Sent(tag.decode(), found.group("command").decode().upper(), text)
        step = self._server.next_step(sent)
        for line in step.answer:
            self.queue(line.replace(b"{tag}", tag) + b"\r\n")
        if step.then_close:
            self.hang_up()
