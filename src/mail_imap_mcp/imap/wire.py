"""The wire: the budgeted socket, imaplib's IMAP4 over it, and imapclient on top.

This is the only module that touches imaplib's and imapclient's private internals (tags, pending
answers, the untagged-response queue, the connection state). :class:`BudgetedIMAPClient` offers what the
session needs of them as small public methods: send a command and read its answer later (pipelining),
the untagged responses, a mailbox name as sent, the search syntax. Every blocking socket operation
takes its timeout from the call's :class:`CallBudget` (see docs/reliability.md). A connection without
TLS whose greeting is late checks whether the port speaks TLS instead (:func:`.tls.answers_tls`).
"""

from __future__ import annotations

import imaplib
import logging
import math
import re
import select
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from imapclient import IMAPClient
from imapclient.imap_utf7 import decode as decode_utf7
from imapclient.imapclient import _literal, join_message_ids, seq_to_parenstr_upper
from imapclient.response_parser import parse_response

from mail_imap_mcp.imap import parsing
from mail_imap_mcp.imap.errors import ConnectPhase, ConnectProgress, ImplicitTlsPort, is_connection_broken
from mail_imap_mcp.imap.fetch_response import parse_fetch_response
from mail_imap_mcp.imap.tls import TLS_PROBE_S, answers_tls, handshake_round_trips

#: Opens the TCP connection to ``(host, port)`` within ``timeout`` seconds. The default is a TCP connect
#: to each address of the host in turn; unit tests pass a scripted server's (tests/support/fake_imap.py).
OpenSocket = Callable[[str, int, float], socket.socket]

#: How long a connection without TLS (plain, STARTTLS) waits for the greeting before it checks whether
#: the port speaks TLS instead (``security = "starttls"`` on port 993); a server that greets later still
#: gets the rest of ``connect_timeout_s``.
GREETING_WAIT_S = 2.0
# Large literals are read in pieces of this size, with the call's deadline checked before each.
_READ_CHUNK = 64 * 1024


class CallBudget:
    """How long the current call may still wait on the network; read before every blocking socket operation.

    A call runs until its ``deadline`` (``math.inf`` between calls). Inside it, the connect phase (TCP
    connect, TLS handshake, greeting, STARTTLS) gets ``connect_timeout_s`` in total, and every later
    wait for the server (login, each command's reads and sends) at most ``command_timeout_s``, never
    past the deadline. Used only by the thread holding the account's lock.
    """

    def __init__(self, command_timeout_s: float) -> None:
        self.command_timeout_s = command_timeout_s
        self.deadline = math.inf
        self._connect_deadline: float | None = None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    @contextmanager
    def connecting(self, until: float) -> Iterator[None]:
        """Bound everything inside (a part of the connect phase) by the monotonic time ``until``."""
        self._connect_deadline = until
        try:
            yield
        finally:
            self._connect_deadline = None

    def timeout(self, *, strict: bool = True) -> float:
        """Socket timeout for the next operation; with ``strict`` raise ``TimeoutError`` once spent."""
        now = time.monotonic()
        if self._connect_deadline is not None:
            left = min(self.deadline, self._connect_deadline) - now
        else:
            left = min(self.deadline - now, self.command_timeout_s)
        if left <= 0:
            if strict:
                raise TimeoutError("the call's time budget is used up")
            return 0.001
        return left


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
        ssl_context: ssl.SSLContext | None,
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

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = self._connect_tcp()
        # Nagle would hold back the second write of a command (imapclient sends some in two).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._ssl_context is None:
            self._progress.phase = ConnectPhase.GREETING
            return sock
        self._progress.phase = ConnectPhase.TLS
        try:
            sock.settimeout(self._budget.timeout())  # the handshake draws on the same connect budget
            wrapped = self._ssl_context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self.round_trips += handshake_round_trips(wrapped)
        self._progress.phase = ConnectPhase.GREETING
        return wrapped

    def _connect_tcp(self) -> socket.socket:
        """``socket.create_connection``, except that each address tried gets only what is left."""
        if self._open_socket is not None:
            self.round_trips += 1
            return self._open_socket(self.host, self.port, self._budget.timeout())
        last_error: OSError = OSError(f"{self.host!r} resolved to no address")
        for family, kind, proto, _, address in socket.getaddrinfo(
            self.host, self.port, type=socket.SOCK_STREAM
        ):
            sock = socket.socket(family, kind, proto)
            self.round_trips += 1
            try:
                sock.settimeout(self._budget.timeout())
                sock.connect(address)
            except OSError as exc:
                sock.close()
                last_error = exc
                continue
            return sock
        raise last_error

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
        if self._sent_since_read:
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
        if select.select([self.sock], [], [], wait)[0]:
            return
        probe_s = min(TLS_PROBE_S, self._budget.timeout(strict=False))
        if answers_tls(self.sock.getpeername(), probe_s):
            raise ImplicitTlsPort(wait)

    def _count_wait(self) -> None:
        if self._sent_since_read:
            self.round_trips += 1
            self._sent_since_read = False

    def send(self, data: Any) -> None:
        self._sent_since_read = True
        with self._watch():
            # Not strict: imaplib reports any error from send as a dead connection, while a spent
            # budget is a timeout; the read of the answer right after raises it.
            self.sock.settimeout(self._budget.timeout(strict=False))
            super().send(data)

    @contextmanager
    def _watch(self) -> Iterator[None]:
        try:
            yield
        except OSError:  # includes timeouts: the stream is out of step either way
            self.unusable = True
            raise


class BudgetedIMAPClient(IMAPClient):  # type: ignore[misc]  # imapclient has no type hints
    """IMAPClient over a :class:`BudgetedIMAP4` (imapclient builds its connection in ``_create_IMAP4``),
    with public methods for what the session needs of imaplib's and imapclient's internals."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: bool,
        ssl_context: ssl.SSLContext,
        budget: CallBudget,
        progress: ConnectProgress,
        open_socket: OpenSocket | None = None,
    ) -> None:
        self._budget = budget
        self._progress = progress
        self._open_socket = open_socket
        self._enabled: set[str] = set()
        super().__init__(host, port=port, ssl=tls, ssl_context=ssl_context if tls else None)
        if not logging.getLogger("imapclient.imaplib").isEnabledFor(logging.DEBUG):
            # imapclient turns imaplib's protocol log fully on (level 5) and routes it to that logger;
            # imaplib formats each message before the logger drops it: about a third of the CPU of
            # reading a thousand response lines. Off unless someone listens.
            self._imap.debug = 0

    def _create_IMAP4(self) -> imaplib.IMAP4:
        context = self.ssl_context if self.ssl else None
        return BudgetedIMAP4(self.host, self.port, context, self._budget, self._progress, self._open_socket)

    # -- what the connection counts -------------------------------------------------------------------

    @property
    def commands_sent(self) -> int:
        """Commands sent on this connection (imaplib's tag counter)."""
        return int(self._imap.tagnum)

    @property
    def round_trips(self) -> int:
        """Waits for the server on this connection (see :attr:`BudgetedIMAP4.round_trips`)."""
        return int(self._imap.round_trips)

    @property
    def unusable(self) -> bool:
        """Whether the socket failed (error, timeout or EOF), even if a caller swallowed the exception."""
        return bool(self._imap.unusable)

    # -- connecting and logging in ----------------------------------------------------------------------

    @property
    def offered_capabilities(self) -> tuple[str, ...]:
        """Capabilities as imaplib holds them: from the greeting, or asked anew after STARTTLS (reading
        them costs no round trip, unlike imapclient's ``capabilities()`` after STARTTLS)."""
        return tuple(self._imap.capabilities)

    def take_login_capabilities(self, answer: Any) -> None:
        """Use the ``[CAPABILITY ...]`` code of LOGIN's tagged OK (RFC 3501 7.1, sent by Dovecot and
        Cyrus) as the session's capabilities, so no CAPABILITY command (and round trip) follows."""
        found = _CAPABILITY_CODE.match(answer) if isinstance(answer, bytes) else None
        if found is not None and found.group(1).strip():
            self._cached_capabilities = tuple(found.group(1).upper().split())

    def sasl_authenticate(self, mechanism: str, exchange: Callable[[bytes], bytes | None]) -> None:
        """``AUTHENTICATE mechanism``, answering each challenge with ``exchange`` (imaplib's errors pass)."""
        self._imap.authenticate(mechanism, exchange)

    def keepalive_noop(self) -> str:
        """NOOP whose untagged answers (EXISTS, EXPUNGE, FETCH) stay queued for the next call to read;
        returns the tagged status (``OK``, ``NO``, ``BAD``)."""
        typ, _ = self._imap.noop()
        return str(typ)

    def enable_ahead(self, extension: str) -> None:
        """ENABLE ``extension`` together with the next command (see :meth:`BudgetedIMAP4.enable_ahead`)."""
        self._imap.enable_ahead(extension)

    def enabled(self, extension: str) -> bool:
        """Whether the server enabled ``extension`` on this connection (an ENABLE sent with
        :meth:`enable_ahead`, answered OK with ``* ENABLED extension``). Reads that answer if no command
        has since (a round trip then), so ask after a command."""
        self._take_enable_answer()
        return extension.upper() in self._enabled

    def _take_enable_answer(self) -> None:
        imap = self._imap
        if imap.enabling is None:
            return
        asked, tag = imap.enabling
        imap.enabling = None
        try:
            typ, _ = self.complete("ENABLE", tag)
        except imaplib.IMAP4.abort:
            raise
        except imaplib.IMAP4.error:
            typ = "NO"
        self.untagged.pop("ENABLED", None)
        if typ == "OK" and asked.upper() in imap.enabled_extensions:
            self._enabled.add(asked.upper())

    def _consume_until_tagged_response(self, tag: bytes, command: str) -> Any:
        # imapclient's NOOP, EXPUNGE and IDLE DONE read every line up to their own tag as untagged: an
        # ENABLE sent ahead of them is answered first (in the same round trip), so it is read first.
        self._take_enable_answer()
        return super()._consume_until_tagged_response(tag, command)

    # -- waiting for what the server says unasked (IDLE, RFC 2177) ----------------------------------------

    @property
    def greeting(self) -> bytes:
        """The server's greeting line (``* OK ... Courier-IMAP ready ...``)."""
        welcome: bytes = self._imap.welcome
        return welcome

    def input_waiting(self, timeout: float) -> bool:
        """Whether a response line can be read now, waiting up to ``timeout`` seconds for one: bytes in
        imaplib's read buffer or TLS's, or on the socket. An EOF or a reset counts (the read then fails),
        a TLS record without data (a session ticket) does not. Unlike imapclient's ``idle_check``, the
        reads that follow keep the call budget's timeouts."""
        sock = self.socket()
        deadline = time.monotonic() + timeout
        while True:
            if self._buffered_input(sock):
                return True
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                return False

    def _buffered_input(self, sock: socket.socket) -> bool:
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return True
        sock.setblocking(False)
        try:
            # One non-blocking read at most: imaplib's buffer, else what the socket has. Over TLS, b""
            # is the EOF (no data raises); over plain TCP it may also be "nothing yet": the socket says.
            if self._imap.file.peek(1) or isinstance(sock, ssl.SSLSocket):
                return True
            sock.recv(1, socket.MSG_PEEK)  # data, or b"" at the EOF; raises when there is nothing
            return True
        except (BlockingIOError, ssl.SSLWantReadError, InterruptedError):
            return False
        except OSError:
            return True  # reset: the next read reports it
        finally:
            sock.settimeout(self._budget.command_timeout_s)

    def end_idle(self) -> list[bytes]:
        """DONE: the lines the server sent before IDLE's tagged answer (imapclient's ``idle_done``
        parses them; watching reads them as they came, like the lines read during IDLE)."""
        tag: bytes = self._idle_tag
        self._imap.send(b"DONE\r\n")
        lines = []
        while not (line := self.read_response_line()).startswith(tag + b" "):
            lines.append(line)
        status = line.split(b" ", 2)[1].decode("ascii", "replace").upper()
        self.check_ok("idle", status, [line])
        return lines

    def notify_set(self, mailboxes: Sequence[str], events: bytes) -> dict[str, dict[bytes, int]]:
        """``NOTIFY SET STATUS (mailboxes (...) (events))`` (RFC 5465): the server then reports changes of
        those mailboxes, when none of them is selected, as untagged STATUS responses, and answers at
        once with the STATUS of each, returned here by mailbox (in the same round trip)."""
        imaplib.Commands.setdefault("NOTIFY", ("AUTH", "SELECTED"))
        names = b" ".join(self.mailbox_argument(mailbox) for mailbox in mailboxes)
        self._imap.untagged_responses.pop("STATUS", None)
        typ, data = self._imap._simple_command(
            "NOTIFY", "SET", "STATUS", b"(mailboxes (" + names + b") (" + events + b"))"
        )
        self.check_ok("notify", typ, data)
        statuses = {}
        for rest in self._imap.untagged_responses.pop("STATUS", []):
            if not isinstance(rest, bytes):
                continue
            line = b"* STATUS " + rest
            mailbox, values = self.notified_mailbox(line), self.status_values(line)
            if mailbox is not None and values is not None:
                statuses[mailbox] = values
        return statuses

    def status_values(self, line: bytes) -> dict[bytes, int] | None:
        """The items of a ``* STATUS name (MESSAGES 3 UIDNEXT 4 ...)`` line by name; None for another line
        or one without numbers."""
        if not line.upper().startswith(b"* STATUS "):
            return None
        try:
            items = parse_response([line.split(b" ", 2)[2]])[1]
        except Exception:
            return None
        if not isinstance(items, tuple) or len(items) % 2:
            return None
        pairs = zip(items[::2], items[1::2], strict=True)
        values = {bytes(k).upper(): int(v) for k, v in pairs if isinstance(k, bytes) and isinstance(v, int)}
        return values or None

    def notified_mailbox(self, line: bytes) -> str | None:
        """The mailbox a NOTIFY report is about: ``* STATUS "name" (...)`` (its messages or flags
        changed) or ``* LIST (\\NonExistent) "/" "name"`` (deleted or renamed away); None for any
        other line (Dovecot also lists mailboxes that did not change)."""
        upper = line.upper()
        if upper.startswith(b"* STATUS "):
            position = 0
        elif upper.startswith(b"* LIST ") and b"\\NONEXISTENT" in upper:
            position = -1
        else:
            return None
        try:
            name = parse_response([line.split(b" ", 2)[2]])[position]
        except Exception:
            return None
        if isinstance(name, int):
            name = str(name).encode("ascii")
        if not isinstance(name, bytes):
            return None
        decoded: str = decode_utf7(name) if self.folder_encode else name.decode("utf-8", "replace")
        return decoded

    def read_response_line(self) -> bytes:
        """One line the server sent (an untagged response during IDLE), without its CRLF; a dead
        connection raises imaplib's ``abort``."""
        line: bytes = self._imap._get_line()
        return line

    # -- commands sent now, answered later (pipelining) --------------------------------------------------

    def send(self, *args: str | bytes) -> bytes:
        """Send one command without waiting for its answer; returns its tag for :meth:`complete`."""
        tag: bytes = self._imap._command(*args)
        return tag

    def complete(self, name: str, tag: bytes) -> tuple[str, list[Any]]:
        """Read up to the tagged answer of the command ``name`` sent as ``tag``: ``(status, data)``.
        NO raises ``imaplib.IMAP4.error``, a dead connection ``imaplib.IMAP4.abort``."""
        typ, data = self._imap._command_complete(name, tag)
        return typ, data

    def answer_of(self, name: str, tag: bytes) -> tuple[str, str]:
        """The tagged status (``OK``, ``NO`` or ``BAD``) of the command ``name`` sent as ``tag`` and the
        server's words: a refusal is an answer here; a dead connection raises."""
        try:
            typ, data = self._imap._command_complete(name, tag)
        except imaplib.IMAP4.abort:
            raise
        except imaplib.IMAP4.error as exc:
            if is_connection_broken(exc):
                raise
            return "BAD", str(exc)
        return typ, " ".join(parsing.as_text(part) or "" for part in data if isinstance(part, bytes | str))

    def send_examine(self, mailbox: str) -> bytes:
        """Send EXAMINE of ``mailbox`` and let the next command be sent before it is answered: the old
        view's untagged responses are dropped (as imaplib's ``select()`` does) and imaplib, which checks
        the state a command is sent in, is told a mailbox is selected read-only. Returns the tag."""
        imap = self._imap
        imap.untagged_responses = {}
        tag = self.send("EXAMINE", self.mailbox_argument(mailbox))
        imap.state, imap.is_readonly = "SELECTED", True
        return tag

    def note_unselected(self) -> None:
        """A failed EXAMINE or SELECT leaves no mailbox selected (RFC 3501 6.3.1): tell imaplib."""
        self._imap.state = "AUTH"

    @property
    def untagged(self) -> dict[str, list[Any]]:
        """The untagged responses received and not yet taken, by name (``EXISTS``, ``FETCH``, ...)."""
        untagged: dict[str, list[Any]] = self._imap.untagged_responses
        return untagged

    def take_untagged(self, typ: str, data: list[Any], name: str) -> list[Any]:
        """The untagged ``name`` responses that came with a command's answer ``(typ, data)``, taken."""
        _, found = self._imap._untagged_response(typ, data, name)
        taken: list[Any] = found
        return taken

    def check_ok(self, command: str, typ: str, data: list[Any]) -> None:
        """Raise imapclient's error when a command's status ``typ`` is not OK."""
        self._checkok(command, typ, data)

    def mailbox_argument(self, mailbox: str) -> bytes:
        """``mailbox`` as sent on the wire: modified UTF-7 where needed, quoted."""
        argument: bytes = self._normalise_folder(mailbox)
        return argument

    def select_answer(self) -> dict[bytes, Any]:
        """The queued answer of a SELECT or EXAMINE (EXISTS, UIDVALIDITY, ...), parsed as imapclient does."""
        answer: dict[bytes, Any] = self._process_select_response(self._imap.untagged_responses)
        return answer

    # -- commands sent and answered at once ---------------------------------------------------------------

    def uid_command(self, command: bytes, args: Sequence[bytes]) -> tuple[str, list[Any]]:
        """``UID command args``: ``(status, data)``; BAD raises, NO is left to :meth:`check_ok`."""
        typ, data = self._raw_command(command, list(args))
        return typ, data

    def uid_command_untagged(
        self, command: bytes, args: Sequence[bytes], *, response_name: str | None = None
    ) -> list[Any]:
        """``UID command args``, checked; the untagged responses it answered with (``response_name``,
        default the command's name)."""
        data: list[Any] = self._raw_command_untagged(command, list(args), response_name=response_name)
        return data

    def parse_fetch(self, data: list[Any]) -> dict[int, dict[bytes, Any]]:
        """The untagged FETCH responses ``data`` of a ``UID FETCH`` by UID, parsed as imapclient does."""
        parsed: dict[int, dict[bytes, Any]] = parse_fetch_response(data, self.normalise_times, True)
        return parsed

    def list_with_status(self, items: bytes) -> tuple[list[tuple[Any, Any, Any]], list[Any]]:
        """``LIST "" "*" RETURN (STATUS items)`` (LIST-EXTENDED, LIST-STATUS): the folder list as
        imapclient gives it (LIST lines of the usual shape read by :func:`.parsing.list_lines`) and the
        untagged STATUS responses that came with it."""
        self._imap.untagged_responses.pop("STATUS", None)
        pattern = (self.mailbox_argument(""), self.mailbox_argument("*"))
        typ, data = self._imap._simple_command("LIST", *pattern, "RETURN", b"(STATUS " + items + b")")
        self.check_ok("list", typ, data)
        statuses = self._imap.untagged_responses.pop("STATUS", [])
        lines = self.take_untagged(typ, data, "LIST")
        usual = parsing.list_lines(lines)
        if usual is None or not self.folder_encode:
            return self._proc_folder_list(lines), statuses
        return [(flags, delimiter, decode_utf7(name)) for flags, delimiter, name in usual], statuses


_CAPABILITY_CODE = re.compile(rb"^\[CAPABILITY ([^\]]*)\]")


def uid_list(uids: Sequence[int]) -> str:
    """UIDs as a comma-separated list, each one named (``1,2,3``)."""
    joined: str = join_message_ids(list(uids))
    return joined


def fetch_items(items: Sequence[str]) -> bytes:
    """FETCH items as sent: upper-cased, in parentheses."""
    encoded: bytes = seq_to_parenstr_upper(list(items))
    return encoded


# A flag as it may be sent: a system flag or an atom (RFC 3501 ATOM-CHAR, ASCII).
_FLAG_ATOM = re.compile(r"^\\?[!#$&'+,\-./0-9:;<=>?@A-Z\[^_`a-z|~]+$")


def is_flag_atom(flag: str) -> bool:
    """Whether ``flag`` can be sent as it is in a STORE (``\\Seen``, ``$Label1``): no quoting, no spaces."""
    return _FLAG_ATOM.match(flag) is not None


def is_literal(token: object) -> bool:
    """Whether a search token is sent as a literal (it then waits for the server's continuation)."""
    return isinstance(token, _literal)


def search_args(criteria: list[bytes | str | int], charset: str | None) -> list[bytes]:
    args: list[bytes] = [b"CHARSET", charset.encode("ascii")] if charset else []
    return args + [encode_search_token(item, charset) for item in criteria]


def encode_search_token(item: bytes | str | int, charset: str | None) -> bytes:
    """Keywords/ranges pass as given (bytes or int); every user string is quoted or a literal."""
    if isinstance(item, int):
        return str(item).encode("ascii")
    if isinstance(item, bytes):
        return item
    raw = item.encode(charset or "ascii")
    if any(b > 126 or b < 32 for b in raw):
        literal: bytes = _literal(raw)
        return literal
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
