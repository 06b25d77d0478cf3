"""imaplib's IMAP4 over a budgeted socket: every blocking socket operation takes its timeout from the
call's :class:`~mail_imap_mcp.net.budget.CallBudget` (see docs/reliability.md), and a connection without
TLS whose greeting is late checks whether the port speaks TLS instead
(:func:`~mail_imap_mcp.net.tls.answers_tls`). The socket itself (TCP connect, TLS handshake) is
:mod:`mail_imap_mcp.net`'s; imapclient runs on top of this in :mod:`.wire`.
"""

from __future__ import annotations

import imaplib
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mail_imap_mcp.imap.errors import ConnectPhase, ConnectProgress, ImplicitTlsPort
from mail_imap_mcp.net.budget import CallBudget
from mail_imap_mcp.net.sockets import OpenSocket, Socket, connect_tcp, no_delay, readable
from mail_imap_mcp.net.tls import TLS_PROBE_S, TlsContext, answers_tls, handshake_round_trips, wrap

log = logging.getLogger("mail_imap_mcp.imap")

#: How long a connection without TLS (plain, STARTTLS) waits for the greeting before it checks whether
#: the port speaks TLS instead (``security = "starttls"`` on port 993); a server that greets later still
#: gets the rest of ``connect_timeout_s``.
GREETING_WAIT_S = 2.0
# Large literals are read in pieces of this size, with the call's deadline checked before each.
_READ_CHUNK = 64 * 1024
# A CR or LF that is not part of a CRLF.
_BARE_LINE_END = re.compile(rb"\r(?!\n)|(?<!\r)\n")


@dataclass(frozen=True)
class StreamedLiteral:
    """A message to APPEND sent a piece at a time, never joined: ``size`` bytes, every line end CRLF, as
    ``pieces()`` gives them afresh (a large draft's copy in Sent, from its file)."""

    size: int
    pieces: Callable[[], Iterable[bytes]]

    def __len__(self) -> int:  # imaplib announces the literal by its length
        return self.size


class BudgetedIMAP4(imaplib.IMAP4):
    """imaplib's client, optionally over implicit TLS, taking every socket timeout from a :class:`CallBudget`.

    Overrides imaplib's documented hooks (``read``, ``readline``, ``send``) and its socket factory,
    so a slow or silent server cannot hold a call past its budget however many reads a response needs.
    ``unusable`` records that the socket failed (error, timeout or EOF), even if a caller swallowed
    the resulting exception.
    """

    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: TlsContext | None,
        budget: CallBudget,
        progress: ConnectProgress,
        open_socket: OpenSocket | None = None,
    ) -> None:
        self._budget = budget
        self._ssl_context = ssl_context
        self._progress = progress
        self._open_socket = open_socket
        self.unusable = False
        #: Times this connection waited for the server: TCP connect, TLS handshake round trips, and
        #: every read that follows a send (pipelined commands share one). Counted on the socket, so it
        #: is what a network's latency multiplies.
        self.round_trips = 0
        #: The shortest wait from a command sent to its answer's first line: about the link's round trip
        #: (a quick command's answer takes the server almost no time), what a run on a search subtracts
        #: from a chunk's time to size the next one by the server's work (``operations/chunk_sizes.py``).
        self.fastest_wait_s = math.inf
        self._sent_at = 0.0
        self._sent_since_read = True  # the greeting is awaited after the connect
        self._greeted = False
        self._awaiting_greeting = ssl_context is None
        #: An extension to ENABLE with the next command sent (see :meth:`enable_ahead`), and the
        #: ENABLE sent, ``(extension, tag)``, until its answer is taken.
        self._enable_ahead: str | None = None
        self.enabling: tuple[str, bytes] | None = None
        #: What the server said it enabled (``* ENABLED ...``), kept apart from the untagged responses,
        #: which a pipelined read may clear before the ENABLE's answer is looked at.
        self.enabled_extensions: set[str] = set()
        #: A line :meth:`_get_response` read and left to imaplib's own reader.
        self._pushed_back: bytes | None = None
        super().__init__(host, port)

    def _append_untagged(self, typ: str, dat: bytes) -> None:
        if typ.upper() == "ENABLED" and isinstance(dat, bytes):
            self.enabled_extensions.update(dat.decode("ascii", "replace").upper().split())
        super()._append_untagged(typ, dat)  # type: ignore[misc]  # private in typeshed, present in imaplib

    def enable_ahead(self, extension: str) -> None:
        """Send ``ENABLE extension`` (RFC 5161) right before the next command, whichever it is, and read
        its answer with that command's: no round trip of its own. Only in the authenticated state."""
        self._enable_ahead = extension

    def _new_tag(self) -> bytes:
        # Every command takes its tag here first (imaplib's and imapclient's alike), before a byte of
        # it is sent: the place to put a command ahead of it.
        if self._enable_ahead is not None:
            extension, self._enable_ahead = self._enable_ahead, None
            if self.state == "AUTH":  # ENABLE is valid only before a mailbox is selected (RFC 5161)
                literal, self.literal = self.literal, None  # the outer command's literal (APPEND), kept
                try:
                    self.enabling = (extension, self._command("ENABLE", extension))
                finally:
                    self.literal = literal
        tag: bytes = super()._new_tag()  # type: ignore[misc]  # private in typeshed, present in imaplib
        return tag

    def _get_capabilities(self) -> None:
        """Capabilities at connect time: from the greeting's ``[CAPABILITY ...]`` code when it has one
        (Dovecot, Cyrus and Courier send it), saving the CAPABILITY command's round trip; after STARTTLS
        always asked anew (what was said before TLS is not trusted)."""
        announced = None if self._greeted else self.untagged_responses.pop("CAPABILITY", None)
        self._greeted = True
        if announced and isinstance(announced[-1], bytes) and announced[-1].strip():
            self.capabilities = tuple(announced[-1].decode("ascii", "replace").upper().split())
            return
        super()._get_capabilities()  # type: ignore[misc]  # private in typeshed, present in imaplib

    def starttls(self, ssl_context: Any = None) -> Any:
        answer = super().starttls(ssl_context)
        self.round_trips += handshake_round_trips(self.sock)
        return answer

    def _create_socket(self, timeout: float | None = None) -> Socket:
        sock = self._connect_tcp()
        if self._ssl_context is None:
            self._progress.phase = ConnectPhase.GREETING
            return sock
        self._progress.phase = ConnectPhase.TLS
        # The handshake draws on the same connect budget.
        wrapped = wrap(sock, self._ssl_context, self.host, self._budget.timeout())
        self.round_trips += handshake_round_trips(wrapped)
        self._progress.phase = ConnectPhase.GREETING
        return wrapped

    def _connect_tcp(self) -> Socket:
        """The TCP connection, each address tried (each a round trip) getting only what is left."""

        def attempt() -> None:
            self.round_trips += 1

        if self._open_socket is not None:
            attempt()
            sock = self._open_socket(self.host, self.port, self._budget.timeout())
            no_delay(sock)
            return sock
        return connect_tcp(self.host, self.port, self._budget.timeout, attempt)

    def read(self, size: int) -> bytes:
        self._count_wait()
        chunks = []
        with self._watch():
            while size > 0:
                self.sock.settimeout(self._budget.timeout())
                chunk = super().read(min(size, _READ_CHUNK))
                if not chunk:
                    self.unusable = True  # EOF inside a literal
                    break
                chunks.append(chunk)
                size -= len(chunk)
        return b"".join(chunks)

    def readline(self) -> bytes:
        # Called once per response line (a thousand or more for a page of every folder): the steps of
        # _count_wait and _watch are inlined here.
        waited = self._sent_since_read
        if waited:
            self.round_trips += 1
            self._sent_since_read = False
        try:
            if self._awaiting_greeting:
                self._awaiting_greeting = False
                self._wait_for_greeting()
            self.sock.settimeout(self._budget.timeout())
            line = super().readline()
        except OSError:  # includes timeouts: the stream is out of step either way
            self.unusable = True
            raise
        if waited and self._sent_at:
            self.fastest_wait_s = min(self.fastest_wait_s, time.monotonic() - self._sent_at)
        if not line:
            self.unusable = True  # EOF
        return line

    def _get_line(self) -> bytes:
        """imaplib's, without its protocol log when that log is off (``debug`` 0): imaplib formats every
        line for the log before dropping it."""
        if self._pushed_back is not None:
            line, self._pushed_back = self._pushed_back, None
            return line
        if self.debug:
            return super()._get_line()  # type: ignore[misc, no-any-return]  # private in typeshed
        line = self.readline()
        if not line:
            raise self.abort("socket error: EOF")
        if not line.endswith(b"\r\n"):
            raise self.abort(f"socket error: unterminated line: {line!r}")
        return line[:-2]

    def _get_response(self) -> bytes | None:
        """imaplib's, with a short way for the most frequent line, a numbered untagged response without
        a literal (``* 12 FETCH (...)``, ``* 30 EXISTS``): stored as imaplib stores it, without imaplib's
        three or four regular expressions per line. Any other line goes back to imaplib's reader."""
        if self.debug:
            return super()._get_response()  # type: ignore[misc, no-any-return]  # private in typeshed
        line = self._get_line()
        found = None if b"}" in line[-2:] else self.Untagged_status.match(line)
        if found is None or found.group("type") in (b"OK", b"NO", b"BAD"):
            self._pushed_back = line
            return super()._get_response()  # type: ignore[misc, no-any-return]
        kind, data, more = found.group("type", "data", "data2")
        if more:
            data = data + b" " + more
        typ = kind.decode("ascii")  # [A-Z-]+: imaplib decodes it with its encoding, ASCII or UTF-8
        untagged = self.untagged_responses
        if typ in untagged:
            untagged[typ].append(data)
        else:
            untagged[typ] = [data]
        return line

    def _wait_for_greeting(self) -> None:
        """Wait up to :data:`GREETING_WAIT_S` for the greeting; when none has come, raise
        :class:`ImplicitTlsPort` if the port answers a TLS handshake (a TLS server waits for the client
        and never greets in plain text), else leave the rest of the connect budget to the greeting."""
        wait = min(GREETING_WAIT_S, self._budget.timeout())
        if readable(self.sock, wait):
            return
        probe_s = min(TLS_PROBE_S, self._budget.timeout(strict=False))
        if answers_tls(self.sock.getpeername(), probe_s):
            raise ImplicitTlsPort(wait)

    def _count_wait(self) -> None:
        if self._sent_since_read:
            self.round_trips += 1
            self._sent_since_read = False

    def send(self, data: Any) -> None:
        if isinstance(data, StreamedLiteral):
            for piece in data.pieces():
                self.send(piece)
            return
        self._sent_since_read = True
        self._sent_at = time.monotonic()
        with self._watch():
            # Not strict: imaplib reports any error from send as a dead connection, while a spent
            # budget is a timeout; the read of the answer right after raises it.
            self.sock.settimeout(self._budget.timeout(strict=False))
            super().send(data)

    def append(  # type: ignore[override]
        self, mailbox: str, flags: Any, date_time: Any, message: bytes | bytearray | StreamedLiteral
    ) -> Any:
        """imaplib's APPEND, without the copy it makes of the message to turn its line ends into CRLF
        where they all are already (a draft built here: a large attachment would be held once more), a
        :class:`StreamedLiteral` sent as it comes."""
        if isinstance(message, StreamedLiteral) and self.utf8_enabled:  # UTF8=ACCEPT: never enabled here
            message = b"".join(message.pieces())
        if not isinstance(message, StreamedLiteral) and (self.utf8_enabled or _BARE_LINE_END.search(message)):
            return super().append(mailbox, flags, date_time, bytes(message))
        if flags and (flags[0], flags[-1]) != ("(", ")"):
            flags = f"({flags})"
        self.literal = message  # type: ignore[assignment]  # imaplib sends whatever buffer it holds
        when = imaplib.Time2Internaldate(date_time) if date_time else None
        return self._simple_command("APPEND", mailbox or "INBOX", flags or None, when)

    @contextmanager
    def _watch(self) -> Iterator[None]:
        try:
            yield
        except OSError:  # includes timeouts: the stream is out of step either way
            self.unusable = True
            raise
