"""One account's connection: its lifecycle, the call's time budget, the read retry, never-replayed writes.

Reads run through :meth:`AccountConnection.run`, which hands the caller a live
:class:`~mail_imap_mcp.imap.session.ImapSession`. When the server has dropped the connection (idle
logout, reset, restart) the read is retried once on a fresh connection, so the caller sees success.
Every failure leaves as a typed domain error of :mod:`mail_imap_mcp.imap.errors`, for the tool runner
(``presentation/failures.py``) to word (see ``translate`` for the one exception left).

Every call has one time budget, ``connect_timeout_s + command_timeout_s`` (plus the retry's pause):
waiting for the account, connecting, each command and the retry all draw on it, and every blocking
socket operation gets at most what is left (see :class:`~mail_imap_mcp.imap.budget.CallBudget` and
docs/reliability.md).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from mail_imap_mcp.config import AccountConfig, Security
from mail_imap_mcp.imap.auth import Login
from mail_imap_mcp.imap.errors import (
    AccountBusy,
    AccountUnusable,
    CallTimedOut,
    ConnectFailed,
    ConnectionLost,
    ConnectPhase,
    ConnectProgress,
    LoginDisabled,
    ReconnectFailed,
    SelectionStale,
    StartTlsMissing,
    is_connection_broken,
)
from mail_imap_mcp.imap.personality import Personality, Profile, personality_for
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.summary_cache import SummaryCache
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.mail.cursors import MailboxesChanged
from mail_imap_mcp.mail.errors import MailboxGone, MailboxMissing, MailError, MessageGone, UidValidityChanged
from mail_imap_mcp.mail.part_errors import PartError
from mail_imap_mcp.mail.write_errors import (
    DestinationMissing,
    ExtensionMissing,
    MailboxCommandRefused,
    RoleMailboxMissing,
    WriteRefused,
)
from mail_imap_mcp.net.budget import CallBudget
from mail_imap_mcp.net.sockets import OpenSocket, closed_while_idle
from mail_imap_mcp.net.tls import TlsContext, client_context
from mail_imap_mcp.net.tokens import Credentials

log = logging.getLogger("mail_imap_mcp.imap")

#: Turns a domain error into what the callers of :meth:`AccountConnection.run` expect instead: given by
#: tests that drive a connection without the tool runner, and for now by the server's pool (app.py says
#: why); every caller handles the domain errors as they are.
Translate = Callable[[MailError], Exception]
#: Failures judged on the session's view of a mailbox: the view is checked before they count (and those
#: the connection's owner names, see ``judged_on_the_view``: the tools' own refusals).
_JUDGED_ON_THE_VIEW: tuple[type[Exception], ...] = (
    MailboxMissing,
    MailboxGone,
    UidValidityChanged,
    MessageGone,
    DestinationMissing,
    WriteRefused,
    ExtensionMissing,
    RoleMailboxMissing,
    MailboxesChanged,
    PartError,
    MailboxCommandRefused,
)

T = TypeVar("T")

#: Pause before the one retry of a read whose connection died; added to the call's budget.
RETRY_BACKOFF_S = 0.2


class AccountConnection:
    """The single reusable connection of one account. Thread-safe: calls are serialised."""

    def __init__(
        self,
        account_id: str,
        config: AccountConfig,
        *,
        credentials: Credentials,
        summary_cache_entries: int = 0,
        open_socket: OpenSocket | None = None,
        translate: Translate | None = None,
        judged_on_the_view: tuple[type[Exception], ...] = (),
        enable_qresync: bool = False,
    ) -> None:
        self.account_id = account_id
        #: How it logs in: a password, or the account's token source, shared with its other connections
        #: (the pool's), both handed in by the application root (:mod:`mail_imap_mcp.credentials`).
        self.credentials = credentials
        #: ENABLE QRESYNC (RFC 7162) after login where the server offers it: for the connection serving
        #: tool calls, whose view reads VANISHED like EXPUNGE (:mod:`.view`); not for a watch's.
        self.enable_qresync = enable_qresync
        self.config = config
        #: What a domain error leaving :meth:`run` becomes for its callers (see :data:`Translate`); None
        #: (the CLI's connection, a watch's): it leaves as it is, and the tool runner words it.
        self.translate = translate
        #: The failures an operation raises that are judged on the mailbox's view: when the view turns
        #: out stale, the read runs again instead (the imap layer's own, and what the owner adds).
        self.judged_on_the_view = _JUDGED_ON_THE_VIEW + judged_on_the_view
        self._open_socket = open_socket
        self.summaries = SummaryCache(summary_cache_entries)
        self._lock = threading.Lock()
        self._client: BudgetedIMAPClient | None = None
        self.selected: MailboxState | None = None
        #: What the server offers, as named facts (from the CAPABILITY answer after login).
        self.profile = Profile(frozenset())
        #: How the server means what it says (the standard personality unless one of its own fits).
        self.personality: Personality = personality_for(self.profile)
        self.logins = 0
        #: Commands whose answer came with another command's (no round trip of their own).
        self.pipelined_commands = 0
        #: Commands sent that change mail (see :meth:`ImapSession.write_command`).
        self.writes_sent = 0
        self._commands_before = 0
        self._round_trips_before = 0
        self._budget = CallBudget(config.command_timeout_s)
        self._ssl_context: TlsContext | None = None
        self._context_lock = threading.Lock()
        #: When the connection last carried a call or a keepalive (monotonic seconds).
        self.last_used = time.monotonic()
        #: NOOPs sent by the keepalive; connections found closed by the server before a call.
        self.keepalives = 0
        self.found_closed = 0

    @property
    def commands_sent(self) -> int:
        """IMAP commands sent over this account's lifetime (all connections)."""
        current = self._client.commands_sent if self._client is not None else 0
        return self._commands_before + current

    @property
    def round_trips(self) -> int:
        """Waits for the server over this account's lifetime (all connections), as the socket saw them."""
        current = self._client.round_trips if self._client is not None else 0
        return self._round_trips_before + current

    @property
    def busy(self) -> bool:
        """Whether a call is running on the connection now."""
        return self._lock.locked()

    @property
    def budget_s(self) -> float:
        """What one call may take: ``connect_timeout_s + command_timeout_s`` (plus the retry's pause)."""
        return self.config.connect_timeout_s + self.config.command_timeout_s

    def run_write(self, operation: Callable[[ImapSession], T]) -> T:
        """Run an ``operation`` that changes mail: never replayed, nothing pipelined but a SELECT's check.

        The operation selects its mailbox read-write (:meth:`ImapSession.select`, or ``select_ahead`` with
        the UID SEARCH of its UIDs) and sends each change in :meth:`ImapSession.write_command`. A dead
        connection found before any change was sent (the server dropped it while idle) is replaced and the
        operation runs once more; after a change was sent, :class:`OutcomeUnknown` reaches the caller.
        """
        return self.run(operation, write=True)

    def run(self, operation: Callable[[ImapSession], T], *, retry: bool = True, write: bool = False) -> T:
        """Run ``operation`` on a live session within the call's budget (see :meth:`_run`); a domain error
        that leaves it goes through :attr:`translate`, unless its caller handles it (``for_caller``)."""
        try:
            return self._run(operation, retry=retry, write=write)
        except MailError as exc:
            if exc.for_caller or self.translate is None:
                raise
            raise self.translate(exc) from None

    def _run(self, operation: Callable[[ImapSession], T], *, retry: bool, write: bool) -> T:
        """Run ``operation`` on a live session within the call's budget.

        If the connection turns out dead (idle logout, reset, restart) and ``retry`` is set, reconnect
        and run it once more after :data:`RETRY_BACKOFF_S`; with ``write`` (see :meth:`run_write`) only
        while no mail-changing command was sent. The wait for the account's lock, the connect, every
        command and the retry share one deadline, so a call returns within :attr:`budget_s` plus the
        backoff.
        """
        deadline = time.monotonic() + self.budget_s
        if not self._lock.acquire(timeout=self.budget_s):
            raise AccountBusy(self.account_id)
        self._budget.deadline = deadline
        commands_before = self.commands_sent
        round_trips_before = self.round_trips
        writes_before = self.writes_sent
        try:
            for attempt in Retrying(
                stop=stop_after_attempt(2 if retry else 1),
                wait=self._backoff,
                # Retry only while time is left: a retry never gets a budget of its own. A write is
                # retried only when no mail-changing command was sent (e.g. the connection had died
                # while idle): what was never sent cannot be replayed.
                retry=retry_if_exception(
                    lambda exc: (
                        isinstance(exc, ConnectionLost)
                        and self._budget.remaining() > 0
                        and self.writes_sent == writes_before
                    )
                ),
                reraise=True,
            ):
                with attempt:
                    return self._run_once(operation, retry=retry and not write, pipeline=not write)
            raise AssertionError("unreachable")  # pragma: no cover
        except ConnectionLost:
            if self._budget.remaining() <= 0:
                raise CallTimedOut(self.account_id, self.config, self.budget_s) from None
            raise ReconnectFailed(self.account_id, self.config) from None
        finally:
            self._budget.deadline = math.inf
            self.last_used = time.monotonic()
            # Benchmarks read this line (MAIL_IMAP_MCP_LOG_LEVEL=DEBUG) to count round trips per call.
            log.debug(
                "account=%s imap_commands=%d round_trips=%d",
                self.account_id,
                self.commands_sent - commands_before,
                self.round_trips - round_trips_before,
            )
            self._lock.release()

    def _backoff(self, retry_state: RetryCallState) -> float:
        """Tenacity wait before the retry; the pause is added to the call's deadline."""
        self._budget.deadline += RETRY_BACKOFF_S
        return RETRY_BACKOFF_S

    def _run_once(self, operation: Callable[[ImapSession], T], *, retry: bool, pipeline: bool) -> T:
        client = self.connect()
        try:
            try:
                result = self._on_fresh_view(operation, client, pipeline=pipeline)
            except SelectionStale:
                # The selection reused from an earlier call was stale: it was dropped, and this run
                # examines the mailbox anew. Or the mailbox changed under a pipelined command: the
                # revalidation brought the selection up to date, and this run reads it as it is now.
                current = None if self.selected is None else self.selected.name
                result = self._on_fresh_view(operation, client, pipeline=False, current=current)
        except MailError:
            raise
        except TimeoutError:
            self.discard()
            raise CallTimedOut(self.account_id, self.config, self.budget_s) from None
        except Exception as exc:
            if is_connection_broken(exc):
                log.info("account=%s connection lost (%s); reconnecting", self.account_id, type(exc).__name__)
                self.discard()
                raise ConnectionLost() from exc
            raise
        current = self._client
        if current is not None and current.unusable:
            # The connection died under the operation, which absorbed the error (per-item error
            # handling, e.g. a STATUS that "failed"): the answer may be incomplete, so a read runs again.
            log.info("account=%s connection lost during the call; dropping it", self.account_id)
            self.discard()
            if retry:
                raise ConnectionLost()
        return result

    def _on_fresh_view(
        self,
        operation: Callable[[ImapSession], T],
        client: BudgetedIMAPClient,
        *,
        pipeline: bool,
        current: str | None = None,
    ) -> T:
        """Run ``operation``; :class:`SelectionStale` when it ran on a view found stale afterwards."""
        session = ImapSession(self, client, pipeline=pipeline, current=current)
        try:
            result = operation(session)
        except self.judged_on_the_view:
            session.settle()  # a failure judged on a stale view is no answer either
            raise
        except SelectionStale:
            raise  # the session read what was in flight; the caller runs the call again on this view
        except BaseException:
            if client.unanswered:  # an answer left unread would be taken for the next call's
                log.warning(
                    "account=%s a call ended with commands unanswered; dropping the connection",
                    self.account_id,
                )
                self.discard()
            raise
        session.settle()
        return result

    @contextmanager
    def _connect_errors(self, progress: ConnectProgress) -> Iterator[None]:
        try:
            yield
        except ConnectFailed:
            raise
        except Exception as exc:
            raise ConnectFailed(self.account_id, self.config, progress.phase, exc) from None

    def ssl_context(self) -> TlsContext:
        """The account's TLS context, taken on first use and reused by every (re)connect: the process's
        one context for its CA file (:func:`~mail_imap_mcp.net.tls.client_context`), built in the
        background at start (:meth:`~mail_imap_mcp.imap.pool.ConnectionPool.prepare`)."""
        with self._context_lock:
            if self._ssl_context is None:
                self._ssl_context = client_context(self.config.ca_file)
            return self._ssl_context

    @property
    def capabilities(self) -> frozenset[str]:
        """The capability names the server announced after login (its profile's)."""
        return self.profile.capabilities

    def keep_alive(self, interval_s: float) -> None:
        """Send NOOP if the connection sat idle for ``interval_s``, unless a call holds it.

        NOOP changes nothing in the mailbox. What it reports (new or expunged messages, flag changes)
        stays queued in imaplib's untagged responses, where the next call's revalidation finds it and
        reads on an updated view (Courier updates a session's view only on NOOP or SELECT). A connection
        that fails the NOOP is dropped, so the next call connects at once instead of failing first.
        """
        if self._client is None or time.monotonic() - self.last_used < interval_s:
            return
        if not self._lock.acquire(blocking=False):
            return  # a call is using it: it is not idle
        try:
            client = self._client
            if client is None or time.monotonic() - self.last_used < interval_s:
                return
            if self._closed_by_server(client):
                return
            self._budget.deadline = time.monotonic() + min(self.config.command_timeout_s, 10.0)
            try:
                self.keepalives += 1
                typ = client.keepalive_noop()
                if typ != "OK":
                    raise ConnectionError(f"NOOP answered {typ}")
            except Exception as exc:
                log.info(
                    "account=%s keepalive NOOP failed (%s); dropping the connection", self.account_id, exc
                )
                self.discard()
            finally:
                self._budget.deadline = math.inf
                self.last_used = time.monotonic()
        finally:
            self._lock.release()

    def _closed_by_server(self, client: BudgetedIMAPClient) -> bool:
        """Whether the idle connection was closed or reset by the server (or a router on the way); such
        a connection is dropped, so the next command does not fail on it. Costs no round trip: with
        nothing asked, the socket is readable only for an EOF, a reset, a BYE (or a TLS record)."""
        if not closed_while_idle(client.socket(), self._budget.command_timeout_s, goodbye=b"* BYE"):
            return False
        log.info("account=%s connection closed by the server while idle; reconnecting", self.account_id)
        self.found_closed += 1
        self.discard()
        return True

    def connect(self) -> BudgetedIMAPClient:
        """The live client, connecting and logging in first when there is none (or the idle one was
        closed by the server)."""
        if self._client is not None and not self._closed_by_server(self._client):
            return self._client
        config = self.config
        if config.faults:
            raise AccountUnusable(self.account_id, config)
        started = time.perf_counter()
        progress = ConnectProgress()
        with self._connect_errors(progress):
            # The password, or a token from oauth2_token_command: before connecting, as that may take a while.
            login = Login(self.account_id, config, self._budget.remaining, self.credentials)
            context = self.ssl_context()
            # TCP connect, TLS handshake, greeting and STARTTLS share connect_timeout_s; login is a command.
            connect_until = time.monotonic() + config.connect_timeout_s
            with self._budget.connecting(connect_until):
                client = BudgetedIMAPClient(
                    config.host,
                    config.effective_port,
                    tls=config.security is Security.TLS,
                    ssl_context=context,
                    budget=self._budget,
                    progress=progress,
                    open_socket=self._open_socket,
                )
            try:
                if config.security is Security.STARTTLS:
                    if not Profile.of(client.offered_capabilities).starttls:
                        raise StartTlsMissing(self.account_id, config)
                    progress.phase = ConnectPhase.STARTTLS
                    with self._budget.connecting(connect_until):
                        client.starttls(context)
                progress.phase = ConnectPhase.LOGIN
                # imaplib's capabilities: after STARTTLS those asked anew over TLS (imapclient's
                # has_capability would send one more CAPABILITY there).
                if Profile.of(client.offered_capabilities).login_disabled:
                    raise LoginDisabled(self.account_id, config)
                client.take_login_capabilities(login.perform(client))
            except BaseException:
                _close_quietly(client)
                raise
            self.profile = Profile.of(client.capabilities())
            self.personality = personality_for(self.profile)
            if self.enable_qresync and self.profile.qresync:
                # Before any mailbox is selected (RFC 5161), with the call's first command: no round trip.
                client.enable_ahead("QRESYNC")
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
            self._commands_before += self._client.commands_sent
            self._round_trips_before += self._client.round_trips
            _close_quietly(self._client)
        self._client = None
        self.selected = None

    def close(self) -> None:
        """Log out (best effort) and forget the connection."""
        with self._lock:
            if self._client is not None:
                # A dead or stalled server must not hold up shutdown.
                self._budget.deadline = time.monotonic() + 1.0
                try:
                    self._client.logout()
                except Exception:
                    log.debug("account=%s logout failed", self.account_id, exc_info=True)
                finally:
                    self._budget.deadline = math.inf
            self.discard()


def _close_quietly(client: BudgetedIMAPClient) -> None:
    try:
        client.shutdown()
    except Exception:
        log.debug("socket shutdown failed", exc_info=True)
