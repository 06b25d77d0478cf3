"""Long-lived IMAP connections: one per account, reused, serialised, and re-established on demand.

Reads run through :meth:`AccountConnection.run`, which hands the caller a live
:class:`ImapSession`. When the server has dropped the connection (idle logout, reset,
restart) the read is retried once on a fresh connection, so the caller sees success. Every
failure leaves as a :class:`~mail_imap_mcp.envelope.ToolFailure` with a registry code.
"""

from __future__ import annotations

import imaplib
import itertools
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError, LoginError
from imapclient.imapclient import SocketTimeout, _literal
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from mail_imap_mcp.config import AccountConfig, ConfigError, Security
from mail_imap_mcp.envelope import ErrorCode, ToolFailure

log = logging.getLogger("mail_imap_mcp.imap")

T = TypeVar("T")

# Errors that mean "this connection is dead", as raised by imaplib, imapclient and the socket layer.
_DEAD_CONNECTION = (imaplib.IMAP4.abort, IMAPClientAbortError, ConnectionError, ssl.SSLEOFError, EOFError)


class ConnectionLost(Exception):
    """The connection died mid-command; safe to retry a read on a fresh one."""


class UidValidityChanged(Exception):
    """The mailbox's UIDVALIDITY differs from the one the cursor or id was made for."""

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"UIDVALIDITY changed from {expected} to {actual}")
        self.expected = expected
        self.actual = actual


@dataclass
class MailboxState:
    """What EXAMINE told us about the selected mailbox."""

    name: str
    uidvalidity: int
    uidnext: int
    exists: int


class ImapSession:
    """A logged-in connection, borrowed for one call. All methods are read-only.

    Wraps imapclient so callers never build protocol syntax themselves: search terms are
    always quoted or sent as literals, never as atoms.
    """

    def __init__(self, owner: AccountConnection, client: IMAPClient) -> None:
        self._owner = owner
        self.client = client

    @property
    def capabilities(self) -> frozenset[str]:
        return self._owner.capabilities

    def examine(self, mailbox: str) -> MailboxState:
        """Select ``mailbox`` read-only (EXAMINE), reusing the selection when it is already current."""
        state = self._owner.selected
        if state is not None and state.name == mailbox:
            return self.refresh_counts(state)
        try:
            response = self.client.select_folder(mailbox, readonly=True)
        except IMAPClientError as exc:
            if is_connection_broken(exc):
                raise
            self._owner.selected = None
            raise ToolFailure(
                ErrorCode.NOT_FOUND,
                f"Mailbox {mailbox!r} does not exist or cannot be opened; call imap_list_mailboxes "
                "to see the available names.",
                details={"parameter": "mailbox", "mailbox": mailbox},
            ) from None
        state = MailboxState(
            name=mailbox,
            uidvalidity=int(response.get(b"UIDVALIDITY", 0)),
            uidnext=int(response.get(b"UIDNEXT", 0)),
            exists=int(response.get(b"EXISTS", 0)),
        )
        self._owner.selected = state
        return state

    def reopen(self, mailbox: str) -> MailboxState:
        """Replace a connection the server closed mid-call with a fresh one, and re-select ``mailbox``.

        Lets a multi-item operation skip an item that makes the server drop the connection
        (Dovecot disconnects when it cannot read a stored message) and carry on with the rest.
        """
        self._owner.discard()
        self.client = self._owner.connect()
        return self.examine(mailbox)

    def refresh_counts(self, state: MailboxState) -> MailboxState:
        """Apply EXISTS/EXPUNGE updates the server sent with earlier responses."""
        untagged = self.client._imap.untagged_responses
        expunged = untagged.pop("EXPUNGE", [])
        exists = untagged.pop("EXISTS", [])
        if exists:
            state.exists = int(exists[-1])
        elif expunged:
            state.exists = max(0, state.exists - len(expunged))
        return state

    def uid_search(self, criteria: list[bytes | str | int], *, charset: str | None = None) -> list[int]:
        """``UID SEARCH`` with criteria already tokenised; strings are quoted or sent as literals."""
        args: list[bytes] = []
        if charset:
            args += [b"CHARSET", charset.encode("ascii")]
        args += [_encode_search_token(item, charset) for item in criteria]
        data = self.client._raw_command_untagged(b"SEARCH", args)
        uids: list[int] = []
        for line in data:
            if line:
                uids.extend(int(tok) for tok in line.split() if tok.isdigit())
        return uids

    def uid_search_count(self, criteria: list[bytes | str | int], *, charset: str | None = None) -> int:
        """``UID SEARCH RETURN (COUNT)`` (RFC 4731) when supported, else the length of a full search."""
        if "ESEARCH" not in self.capabilities:
            return len(self.uid_search(criteria, charset=charset))
        args: list[bytes] = [b"RETURN", b"(COUNT)"]
        if charset:
            args += [b"CHARSET", charset.encode("ascii")]
        args += [_encode_search_token(item, charset) for item in criteria]
        data = self.client._raw_command_untagged(b"SEARCH", args, response_name="ESEARCH")
        for line in data:
            tokens = (line or b"").split()
            for key, value in itertools.pairwise(tokens):
                if key.upper() == b"COUNT":
                    return int(value)
        return 0

    def fetch(self, uids: list[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        """``UID FETCH`` of ``items`` for ``uids`` (items must be PEEK/metadata: never sets \\Seen)."""
        if not uids:
            return {}
        result: dict[int, dict[bytes, Any]] = self.client.fetch(uids, items)
        return result


def _encode_search_token(item: bytes | str | int, charset: str | None) -> bytes:
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


# Dovecot answers NO with this text once the selected mailbox changed under the session (e.g. a
# new UIDVALIDITY or a repaired index); only a new session sees the mailbox as it now is.
_SESSION_BROKEN_MARKERS = ("please relogin", "session state is inconsistent")


def is_connection_broken(exc: BaseException) -> bool:
    """True when ``exc`` means this connection can no longer be used (retry on a fresh one)."""
    if isinstance(exc, imaplib.IMAP4.error | IMAPClientError) and not isinstance(exc, _DEAD_CONNECTION):
        text = str(exc).lower()
        return any(marker in text for marker in _SESSION_BROKEN_MARKERS)
    return isinstance(exc, _DEAD_CONNECTION) or (
        isinstance(exc, OSError) and not isinstance(exc, socket.timeout | TimeoutError)
    )


class AccountConnection:
    """The single reusable connection of one account. Thread-safe: calls are serialised."""

    def __init__(self, account_id: str, config: AccountConfig) -> None:
        self.account_id = account_id
        self.config = config
        self._lock = threading.Lock()
        self._client: IMAPClient | None = None
        self.selected: MailboxState | None = None
        self.capabilities: frozenset[str] = frozenset()
        self.logins = 0
        self._commands_before = 0

    @property
    def commands_sent(self) -> int:
        """IMAP commands sent over this account's lifetime (all connections)."""
        current = int(self._client._imap.tagnum) if self._client is not None else 0
        return self._commands_before + current

    def run(self, operation: Callable[[ImapSession], T], *, retry: bool = True) -> T:
        """Run ``operation`` on a live session; reconnect and retry once if the connection died."""
        budget = self.config.connect_timeout_s + self.config.command_timeout_s
        if not self._lock.acquire(timeout=budget):
            raise ToolFailure(
                ErrorCode.TIMEOUT,
                f"Account {self.account_id!r} is busy with another call; try again shortly.",
                details={"account_id": self.account_id},
            )
        commands_before = self.commands_sent
        try:
            attempts = 2 if retry else 1
            for attempt in Retrying(
                stop=stop_after_attempt(attempts),
                wait=wait_fixed(0.2),
                retry=retry_if_exception_type(ConnectionLost),
                reraise=True,
            ):
                with attempt:
                    return self._run_once(operation)
            raise AssertionError("unreachable")  # pragma: no cover
        except ConnectionLost:
            raise ToolFailure(
                ErrorCode.UNAVAILABLE,
                f"Lost the connection to {self.config.host} and could not re-establish it; retry shortly.",
                details={"account_id": self.account_id},
            ) from None
        finally:
            # Benchmarks read this line (MAIL_IMAP_MCP_LOG_LEVEL=DEBUG) to count round trips per call.
            log.debug("account=%s imap_commands=%d", self.account_id, self.commands_sent - commands_before)
            self._lock.release()

    def _run_once(self, operation: Callable[[ImapSession], T]) -> T:
        client = self.connect()
        try:
            return operation(ImapSession(self, client))
        except ToolFailure:
            raise
        except TimeoutError:
            self.discard()
            raise ToolFailure(
                ErrorCode.TIMEOUT,
                f"The IMAP server {self.config.host} did not answer within "
                f"{self.config.command_timeout_s:g}s; retry shortly.",
                details={"account_id": self.account_id, "timeout_s": self.config.command_timeout_s},
            ) from None
        except Exception as exc:
            if is_connection_broken(exc):
                log.info("account=%s connection lost (%s); reconnecting", self.account_id, type(exc).__name__)
                self.discard()
                raise ConnectionLost() from exc
            raise

    @contextmanager
    def _connect_errors(self) -> Iterator[None]:
        host = f"{self.config.host}:{self.config.effective_port}"
        try:
            yield
        except ToolFailure:
            raise
        except ConfigError as exc:
            raise ToolFailure(
                ErrorCode.AUTH_FAILED,
                f"No password for account {self.account_id!r}: {exc}. Fix the account's password "
                "source in the configuration.",
                details={"account_id": self.account_id},
            ) from None
        except LoginError:
            raise ToolFailure(
                ErrorCode.AUTH_FAILED,
                f"The server {host} rejected the login for account {self.account_id!r}; check the "
                "username and password in the configuration (mail-imap-mcp check diagnoses it).",
                details={"account_id": self.account_id},
            ) from None
        except ssl.SSLCertVerificationError as exc:
            raise ToolFailure(
                ErrorCode.UNAVAILABLE,
                f"The TLS certificate of {host} could not be verified ({exc.verify_message}); if the "
                "server uses a self-signed certificate, set ca_file for this account.",
                details={"account_id": self.account_id},
                retryable=False,
            ) from None
        except TimeoutError:
            raise ToolFailure(
                ErrorCode.TIMEOUT,
                f"Connecting to {host} timed out after {self.config.connect_timeout_s:g}s.",
                details={"account_id": self.account_id, "timeout_s": self.config.connect_timeout_s},
            ) from None
        except socket.gaierror:
            raise ToolFailure(
                ErrorCode.UNAVAILABLE,
                f"The host name {self.config.host!r} does not resolve; check `host` for account "
                f"{self.account_id!r}.",
                details={"account_id": self.account_id},
                retryable=False,
            ) from None
        except (OSError, imaplib.IMAP4.error, IMAPClientError) as exc:
            raise ToolFailure(
                ErrorCode.UNAVAILABLE,
                f"Cannot reach the IMAP server {host} ({type(exc).__name__}); check that it is running "
                "and that host, port and security are right.",
                details={"account_id": self.account_id},
            ) from None

    def connect(self) -> IMAPClient:
        """The live client, connecting and logging in first when there is none."""
        if self._client is not None:
            return self._client
        config = self.config
        started = time.perf_counter()
        with self._connect_errors():
            password = config.resolve_password()
            context = ssl.create_default_context()
            if config.ca_file is not None:
                context.load_verify_locations(cafile=str(config.ca_file.expanduser()))
            client = IMAPClient(
                config.host,
                port=config.effective_port,
                ssl=config.security is Security.TLS,
                ssl_context=context if config.security is Security.TLS else None,
                timeout=SocketTimeout(connect=config.connect_timeout_s, read=config.command_timeout_s),
            )
            try:
                if config.security is Security.STARTTLS:
                    if not client.has_capability("STARTTLS"):
                        raise ToolFailure(
                            ErrorCode.UNAVAILABLE,
                            f"The server {config.host}:{config.effective_port} does not offer STARTTLS; "
                            "refusing to send the password unencrypted. Use security = 'tls' with the "
                            "server's TLS port.",
                            details={"account_id": self.account_id},
                            retryable=False,
                        )
                    client.starttls(context)
                client.login(config.username, password)
            except BaseException:
                _close_quietly(client)
                raise
            self.capabilities = frozenset(
                c.decode("ascii", "replace").upper() if isinstance(c, bytes) else str(c).upper()
                for c in client.capabilities()
            )
        self.logins += 1
        self.selected = None
        self._client = client
        log.info(
            "account=%s connected in %d ms", self.account_id, int((time.perf_counter() - started) * 1000)
        )
        return client

    def discard(self) -> None:
        """Drop the current connection without logging out (it is dead or unusable)."""
        if self._client is not None:
            self._commands_before += int(self._client._imap.tagnum)
            _close_quietly(self._client)
        self._client = None
        self.selected = None

    def close(self) -> None:
        """Log out (best effort) and forget the connection."""
        with self._lock:
            if self._client is not None:
                try:
                    # A dead or stalled server must not hold up shutdown.
                    self._client.socket().settimeout(1.0)
                    self._client.logout()
                except Exception:
                    log.debug("account=%s logout failed", self.account_id, exc_info=True)
            self.discard()


def _close_quietly(client: IMAPClient) -> None:
    try:
        client.shutdown()
    except Exception:
        log.debug("socket shutdown failed", exc_info=True)


class ConnectionPool:
    """One :class:`AccountConnection` per configured account."""

    def __init__(self, accounts: dict[str, AccountConfig]) -> None:
        self._connections = {aid: AccountConnection(aid, cfg) for aid, cfg in accounts.items()}

    def get(self, account_id: str) -> AccountConnection:
        try:
            return self._connections[account_id]
        except KeyError:
            known = ", ".join(sorted(self._connections)) or "none"
            raise ToolFailure(
                ErrorCode.NOT_FOUND,
                f"Account {account_id!r} is not configured (configured: {known}); call "
                "imap_list_accounts to see them.",
                details={
                    "parameter": "account_id",
                    "account_id": account_id,
                    "configured": sorted(self._connections),
                },
            ) from None

    def close_all(self) -> None:
        for connection in self._connections.values():
            connection.close()
