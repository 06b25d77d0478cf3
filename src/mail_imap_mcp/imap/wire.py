"""The wire: imapclient over the budgeted socket (:mod:`.budget`), and the protocol's syntax.

With :mod:`.budget`, this is the only module that touches imaplib's and imapclient's private internals (tags, pending
answers, the untagged-response queue, the connection state). :class:`BudgetedIMAPClient` offers what the
session needs of them as small public methods: send a command and read its answer later (pipelining),
the untagged responses, a mailbox name as sent, the search syntax. Every blocking socket operation
takes its timeout from the call's :class:`CallBudget` (see docs/reliability.md). A connection without
TLS whose greeting is late checks whether the port speaks TLS instead (:func:`.tls.answers_tls`).
"""

from __future__ import annotations

import imaplib
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError
from imapclient.imapclient import _literal, join_message_ids, seq_to_parenstr_upper
from imapclient.response_parser import parse_response

from mail_imap_mcp.imap import parsing
from mail_imap_mcp.imap.budget import BudgetedIMAP4
from mail_imap_mcp.imap.errors import ConnectProgress, ServerRefused, is_connection_broken
from mail_imap_mcp.imap.fetch_response import parse_fetch_response
from mail_imap_mcp.net.budget import CallBudget
from mail_imap_mcp.net.sockets import OpenSocket, wait_for_input
from mail_imap_mcp.net.tls import TlsContext


class BudgetedIMAPClient(IMAPClient):  # type: ignore[misc]  # imapclient has no type hints
    """IMAPClient over a :class:`BudgetedIMAP4` (imapclient builds its connection in ``_create_IMAP4``),
    with public methods for what the session needs of imaplib's and imapclient's internals."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: bool,
        ssl_context: TlsContext,
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
    def fastest_wait_s(self) -> float:
        """The shortest wait for an answer on this connection (see :attr:`BudgetedIMAP4.fastest_wait_s`)."""
        return float(self._imap.fastest_wait_s)

    @property
    def unanswered(self) -> int:
        """Commands sent whose tagged answer was not taken yet (between calls: none)."""
        return len(self._imap.tagged_commands)

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
        return wait_for_input(
            self.socket(), timeout, lambda: self._imap.file.peek(1), self._budget.command_timeout_s
        )

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

    def notify_personal(self, events: bytes) -> None:
        """``NOTIFY SET (personal (events))`` (RFC 5465): the server then reports every change of the
        personal namespace's mailboxes (none selected) as untagged STATUS (and LIST) responses."""
        imaplib.Commands.setdefault("NOTIFY", ("AUTH", "SELECTED"))
        typ, data = self._imap._simple_command("NOTIFY", "SET", b"(personal (" + events + b"))")
        self.check_ok("notify", typ, data)

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
        return self._name_at(line, position)

    def listed_name(self, line: bytes) -> str | None:
        """The mailbox of any ``* LIST (flags) "/" "name"`` line; None for another line."""
        return self._name_at(line, -1) if line.upper().startswith(b"* LIST ") else None

    def _name_at(self, line: bytes, position: int) -> str | None:
        try:
            name = parse_response([line.split(b" ", 2)[2]])[position]
        except Exception:
            return None
        if isinstance(name, int):
            name = str(name).encode("ascii")
        if not isinstance(name, bytes):
            return None
        decoded: str = parsing.decode_name(name) if self.folder_encode else name.decode("utf-8", "replace")
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
        """:meth:`send_selection` of EXAMINE."""
        return self.send_selection(mailbox)

    def send_selection(self, mailbox: str, *, readonly: bool = True) -> bytes:
        """Send EXAMINE (``readonly``) or SELECT of ``mailbox`` and let the next command be sent before it
        is answered: the old view's untagged responses are dropped (as imaplib's ``select()`` does) and
        imaplib, which checks the state a command is sent in, is told a mailbox is selected so. Returns
        the tag."""
        imap = self._imap
        imap.untagged_responses = {}
        tag = self.send("EXAMINE" if readonly else "SELECT", self.mailbox_argument(mailbox))
        imap.state, imap.is_readonly = "SELECTED", readonly
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
        return [(flags, delimiter, parsing.decode_name(name)) for flags, delimiter, name in usual], statuses


@contextmanager
def answers_typed() -> Iterator[None]:
    """Within: a NO or BAD answer that imaplib or imapclient raises becomes :class:`ServerRefused` (the
    server's text), so that no module above the wire catches their error types; a dead connection is
    raised as it is."""
    try:
        yield
    except imaplib.IMAP4.abort:
        raise
    except (imaplib.IMAP4.error, IMAPClientError) as exc:
        if is_connection_broken(exc):
            raise
        raise ServerRefused(str(exc)) from exc


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
