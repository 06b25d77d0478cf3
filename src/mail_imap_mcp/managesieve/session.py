"""One ManageSieve session (RFC 5804): connect (implicit TLS, or STARTTLS as a rule), read the
capabilities, log in (PLAIN with a password; XOAUTH2 or OAUTHBEARER with a token, where offered), then
the commands of :class:`~mail_imap_mcp.mail.sieve.SieveScripts`. Every wait is bounded by the session's
:class:`~mail_imap_mcp.net.budget.CallBudget` (a caller sets its ``deadline`` per call); a refusal is a
domain error with the server's words; a change whose answer was lost is an unknown outcome, never retried.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from mail_imap_mcp.mail.sieve import (
    ScriptEntry,
    SieveCapabilities,
    check_script_name,
    check_script_text,
)
from mail_imap_mcp.mail.sieve_errors import (
    ScriptMissing,
    SieveCommandMissing,
    SieveError,
    SieveOutcomeUnknown,
    refusal,
)
from mail_imap_mcp.managesieve.errors import (
    SieveLoginRefused,
    SieveProtocolError,
    SieveTlsFailed,
    SieveUnavailable,
    Stage,
    classify,
)
from mail_imap_mcp.managesieve.wire import (
    Atom,
    Item,
    Reader,
    Response,
    final,
    literal,
    quoted_or_literal,
    text_of,
)
from mail_imap_mcp.net.budget import CallBudget
from mail_imap_mcp.net.sasl import OAUTH_MECHANISMS, SaslExchange, oauth_initial_response
from mail_imap_mcp.net.sockets import Socket, connect_tcp
from mail_imap_mcp.net.tls import client_context, is_tls, wrap

#: The commands that change the account's scripts: a lost answer is an unknown outcome.
_CHANGES = frozenset({"PUTSCRIPT", "SETACTIVE", "DELETESCRIPT", "RENAMESCRIPT"})
_MAX_SASL_ROUNDS = 4


@dataclass(frozen=True)
class SieveServer:
    """Where ManageSieve is and how: ``security`` ``starttls`` (RFC 5804's way), ``tls`` (implicit), or
    ``plain`` (loopback only)."""

    host: str
    port: int = 4190
    security: str = "starttls"
    ca_file: Path | None = None
    connect_timeout_s: float = 10.0
    command_timeout_s: float = 30.0


@dataclass(frozen=True)
class SieveLogin:
    """Who logs in: ``mechanism`` ``PLAIN`` (``secret(timeout)`` the password) or an OAuth mechanism
    (``secret(timeout)`` an access token); ``refused`` is told the secret the server refused."""

    username: str
    mechanism: str
    secret: Callable[[float], str] = field(repr=False)
    refused: Callable[[str], None] = field(default=lambda _: None, repr=False)


class ManageSieveSession:
    """A logged-in session implementing :class:`~mail_imap_mcp.mail.sieve.SieveScripts`; see the module.
    Open it with :func:`open_session`; :meth:`close` says LOGOUT."""

    def __init__(self, server: SieveServer, sock: Socket, budget: CallBudget) -> None:
        self.server = server
        self.budget = budget
        self._sock = sock
        self._reader = Reader(sock, budget.timeout)
        self._capabilities = SieveCapabilities()

    # -- the commands ----------------------------------------------------------------------------

    def capabilities(self) -> SieveCapabilities:
        return self._capabilities

    def list_scripts(self) -> list[ScriptEntry]:
        entries: list[ScriptEntry] = []
        self._command("LISTSCRIPTS", on_data=lambda items: _entry(items, entries))
        return entries

    def list_and_get(self, names: Sequence[str]) -> tuple[list[ScriptEntry], dict[str, str]]:
        """LISTSCRIPTS, then GETSCRIPT of each of ``names``, in one round trip: the commands written at
        once (pipelined; a name that needs a literal is sent as LITERAL+, which RFC 5804 requires), their
        answers read in order. A script of ``names`` the server does not have is left out."""
        commands = [b"LISTSCRIPTS", *(b"GETSCRIPT " + _name(name) for name in names)]
        entries: list[ScriptEntry] = []
        self._send(b"\r\n".join(commands))
        self._answer("LISTSCRIPTS", "", lambda items: _entry(items, entries))
        texts: dict[str, str] = {}
        for name in names:
            found: list[bytes] = []
            try:
                self._answer("GETSCRIPT", name, partial(_strings, into=found))
            except ScriptMissing:
                continue
            texts[name] = _one_script(found)
        return entries, texts

    def get_script(self, name: str) -> str:
        found: list[bytes] = []
        self._command("GETSCRIPT", _name(name), name=name, on_data=lambda items: _strings(items, found))
        return _one_script(found)

    def put_script(self, name: str, text: str) -> str:
        return self._command("PUTSCRIPT", _name(name), literal(check_script_text(text)), name=name).warnings

    def check_script(self, text: str) -> str:
        self._needs_version("CHECKSCRIPT")
        return self._command("CHECKSCRIPT", literal(check_script_text(text))).warnings

    def activate(self, name: str) -> None:
        self._command("SETACTIVE", _name(name), name=name)

    def deactivate(self) -> None:
        self._command("SETACTIVE", b'""')

    def delete_script(self, name: str) -> None:
        self._command("DELETESCRIPT", _name(name), name=name)

    def rename_script(self, name: str, new_name: str) -> None:
        self._needs_version("RENAMESCRIPT")
        self._command("RENAMESCRIPT", _name(name), _name(new_name, "new_name"), name=name)

    def have_space(self, name: str, size: int) -> None:
        self._command("HAVESPACE", _name(name), b"%d" % max(size, 0), name=name)

    def close(self) -> None:
        """LOGOUT (its answer awaited briefly), then the socket closed."""
        with contextlib.suppress(SieveError, OSError):
            self.budget.deadline = min(self.budget.deadline, time.monotonic() + 2.0)
            self._send(b"LOGOUT")
            self._reader.response()
        with contextlib.suppress(OSError):
            self._sock.close()

    # -- the wire --------------------------------------------------------------------------------

    def _needs_version(self, command: str) -> None:
        if not self._capabilities.checks_and_renames:
            raise SieveCommandMissing(command)

    def _send(self, *parts: bytes) -> None:
        self._sock.settimeout(self.budget.timeout())
        self._sock.sendall(b" ".join(parts) + b"\r\n")

    def _command(
        self,
        command: str,
        *args: bytes,
        name: str = "",
        on_data: Callable[[list[Item]], None] = lambda _: None,
    ) -> _Answer:
        """Send ``command`` and read its answer; ``NO`` raises its domain error, ``BYE`` or a lost
        connection :class:`SieveUnavailable` (or, for a change, :class:`SieveOutcomeUnknown`)."""
        try:
            self._send(command.encode("ascii"), *args)
        except SieveError:
            raise
        except Exception as exc:
            raise classify(exc, Stage.COMMAND) from None
        return self._answer(command, name, on_data)

    def _answer(self, command: str, name: str, on_data: Callable[[list[Item]], None]) -> _Answer:
        """Read the answer of ``command`` (sent already); ``NO`` raises its domain error, ``BYE`` or a
        lost connection :class:`SieveUnavailable` (or, for a change, :class:`SieveOutcomeUnknown`)."""
        try:
            answer = self._reader.response(on_data)
        except SieveError as exc:
            if command in _CHANGES and isinstance(exc, SieveUnavailable):
                raise SieveOutcomeUnknown(command, name) from None
            raise
        except Exception as exc:
            error = classify(exc, Stage.COMMAND)
            if command in _CHANGES:  # a TLS error too: the session's TLS was set up at its start
                raise SieveOutcomeUnknown(command, name) from None
            raise error from None
        if answer.kind == "OK":
            return _Answer(answer)
        if answer.kind == "BYE":
            if command in _CHANGES:
                raise SieveOutcomeUnknown(command, name)
            raise SieveUnavailable(Stage.COMMAND, answer.text or "the server said BYE")
        raise refusal(command, answer.text, answer.code, name)


@dataclass(frozen=True)
class _Answer:
    response: Response

    @property
    def warnings(self) -> str:
        """The text of an ``OK (WARNINGS)`` answer (RFC 5804 1.3), else ``""``."""
        return self.response.text if self.response.code == "WARNINGS" else ""


def _entry(items: list[Item], into: list[ScriptEntry]) -> None:
    """A line of LISTSCRIPTS' answer: a script's name, ``ACTIVE`` after the active one's."""
    if items:
        active = len(items) > 1 and isinstance(items[1], Atom) and items[1].upper() == "ACTIVE"
        into.append(ScriptEntry(text_of(items[0]), active))


def _one_script(found: list[bytes]) -> str:
    if len(found) != 1:
        raise SieveProtocolError(Stage.COMMAND, f"GETSCRIPT answered {len(found)} strings, not one")
    return found[0].decode("utf-8", "replace")


def _name(name: str, parameter: str = "name") -> bytes:
    return quoted_or_literal(check_script_name(name, parameter).encode("utf-8"))


def _strings(items: list[Item], into: list[bytes]) -> None:
    into.extend(item for item in items if isinstance(item, bytes))


def capabilities_of(lines: list[list[Item]]) -> SieveCapabilities:
    """The capabilities of the server's capability lines (``"NAME" ["value"]``)."""
    raw: dict[str, str] = {}
    for items in lines:
        if items:
            raw[text_of(items[0]).upper()] = text_of(items[1]) if len(items) > 1 else ""
    redirects = raw.get("MAXREDIRECTS", "")
    return SieveCapabilities(
        implementation=raw.get("IMPLEMENTATION", ""),
        extensions=frozenset(raw.get("SIEVE", "").lower().split()),
        sasl=tuple(raw.get("SASL", "").upper().split()),
        starttls="STARTTLS" in raw,
        version=raw.get("VERSION"),
        max_redirects=int(redirects) if redirects.isascii() and redirects.isdigit() else None,
        notify=tuple(raw.get("NOTIFY", "").lower().split()),
        raw=raw,
    )


def open_session(
    server: SieveServer, login: SieveLogin, budget: CallBudget | None = None
) -> ManageSieveSession:
    """A logged-in session on ``server`` (connected, encrypted as its ``security`` says, capabilities
    read); raises a :class:`~mail_imap_mcp.mail.sieve_errors.SieveError` where it cannot be had."""
    budget = budget or CallBudget(server.command_timeout_s)
    stage, sock = Stage.CONNECT, None
    try:
        with budget.connecting(time.monotonic() + server.connect_timeout_s):
            sock = connect_tcp(server.host, server.port, budget.timeout, lambda: None)
            if server.security == "tls":
                stage = Stage.TLS
                sock = wrap(sock, client_context(server.ca_file), server.host, budget.timeout())
            session = ManageSieveSession(server, sock, budget)
            session._capabilities = _greeting(session._reader)
            if server.security == "starttls":
                stage = Stage.TLS
                sock = _starttls(session, server, budget)
        stage = Stage.LOGIN
        _log_in(session, server, login)
        return session
    except Exception as exc:
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        raise classify(exc, stage) from None


def _greeting(reader: Reader) -> SieveCapabilities:
    lines: list[list[Item]] = []
    answer = reader.response(lines.append)
    if answer.kind != "OK":
        raise SieveUnavailable(Stage.CONNECT, answer.text or f"the server greeted with {answer.kind}")
    return capabilities_of(lines)


def _starttls(session: ManageSieveSession, server: SieveServer, budget: CallBudget) -> Socket:
    if not session._capabilities.starttls:
        raise SieveTlsFailed(Stage.TLS, "the server does not offer STARTTLS, which the account requires")
    session._send(b"STARTTLS")
    answer = session._reader.response()
    if answer.kind != "OK":
        raise SieveTlsFailed(Stage.TLS, f"STARTTLS refused: {answer.text}")
    sock = wrap(session._sock, client_context(server.ca_file), server.host, budget.timeout())
    session._sock = sock
    session._reader = Reader(sock, budget.timeout)
    session._capabilities = _greeting(session._reader)  # RFC 5804 2.2: said again after the handshake
    return sock


def _log_in(session: ManageSieveSession, server: SieveServer, login: SieveLogin) -> None:
    if not is_tls(session._sock) and server.security != "plain":
        raise SieveTlsFailed(Stage.TLS, "the connection is not encrypted")
    offered = session._capabilities.sasl
    if login.mechanism not in offered:
        raise SieveLoginRefused(
            Stage.LOGIN, f"the server offers SASL {' '.join(offered) or 'nothing'}, not {login.mechanism}"
        )
    secret = login.secret(session.budget.timeout())
    if login.mechanism in OAUTH_MECHANISMS:
        initial = oauth_initial_response(login.mechanism, login.username, secret, server.host, server.port)
        respond: Callable[[bytes], bytes | None] = SaslExchange(login.mechanism, initial)
    else:
        plain = f"\0{login.username}\0{secret}".encode()
        respond = lambda _: plain  # noqa: E731
    first = respond(b"") or b""
    session._send(b"AUTHENTICATE", quoted_or_literal(login.mechanism.encode()), _b64(first))
    for _ in range(_MAX_SASL_ROUNDS + 1):
        challenge: list[bytes] = []
        items = session._reader.items()
        if items and isinstance(items[0], Atom) and items[0].upper() in ("OK", "NO", "BYE"):
            answer = final(items)
            if answer.kind == "OK":
                return
            login.refused(secret)
            raise SieveLoginRefused(Stage.LOGIN, " ".join(answer.text.split())[:300] or answer.kind)
        _strings(items, challenge)
        reply = respond(base64.b64decode(challenge[0] if challenge else b"", validate=False))
        session._send(b'"*"' if reply is None else _b64(reply))
    raise SieveLoginRefused(Stage.LOGIN, "the server kept challenging")


def _b64(data: bytes) -> bytes:
    return b'"' + base64.b64encode(data) + b'"'


__all__ = ["ManageSieveSession", "SieveLogin", "SieveServer", "capabilities_of", "open_session"]
