"""A stdlib TCP fault proxy for tests: sits between the MCP server and Dovecot and breaks things on demand.

``FaultProxy(upstream_host, upstream_port)`` listens on ``127.0.0.1`` (a free port) and forwards every
accepted connection to the upstream address, one thread per direction. TLS passes through untouched, so
an account pointed at ``127.0.0.1:<proxy.port>`` still verifies Dovecot's certificate (issued for
127.0.0.1 and localhost).

Modes (persist until changed, switchable while connections are open):

* ``pass_through()`` -- forward everything (the initial mode); also ends blackhole, refuse and latency.
* ``set_latency(seconds)`` -- delay every forwarded chunk by ``seconds`` in each direction, so a round
  trip costs twice that. Data that queues behind a delayed chunk waits its own turn: a large response
  that arrives in many chunks is slowed by more than one delay. Chunks in flight follow a later change
  (``pass_through()`` releases them at once).
* ``blackhole()`` -- accept connections but never forward or answer: open connections go silent in both
  directions and new ones are accepted without contacting the upstream.
* ``refuse()`` -- close the listening socket, so new connections are refused (``ECONNREFUSED``); open
  connections keep working. Any other mode re-opens the listener on the same port.

Actions:

* ``reset_connections()`` -- send a TCP RST to every open client connection now (``shutdown(SHUT_RD)``
  wakes the forwarding threads, then a linger-0 ``close()`` makes the kernel send the RST at once).
* ``cut_after_sent(marker, times=1, then_refuse=False)`` -- once a client has sent bytes containing ``marker`` (e.g. ``b" UID MOVE "``;
  ``times``: that many times in all),
  reset that connection instead of forwarding the server's next answer (once; ``cuts`` counts them): a
  write command that reached the server whose answer never arrives (``then_refuse``: and new
  connections refused from then on, until another mode is set).
* ``drop_when_sent(marker, times=1)`` -- reset the connection whose client bytes would carry ``marker``
  for the ``times``-th time, instead of forwarding them (once; ``drops`` counts it): a write command
  the client sent that never reached the server.
* ``before_sent(marker, action)`` -- run ``action`` once, before forwarding the client bytes that first
  carry ``marker`` (``befores`` counts it): another client's change that lands just before a command.
* ``reset_after(server_bytes, connections=1)`` -- the next ``connections`` connections that carry server
  data (``None``: every one, until ``pass_through()``) are reset once ``server_bytes`` more bytes from
  the server have been handed on, counted from the first server chunk each connection forwards after
  arming (the client gets at most that many: the RST discards what is still in the send buffer). A warm
  connection reset this way dies in the middle of the next response, e.g. mid-FETCH.

Observation: ``accepted`` (connections accepted so far), ``open_connections`` (client connections not
yet closed), ``sent()`` (every byte the clients sent *that reached the upstream*, in arrival order; with
TLS these are ciphertext, so point a ``security = "plain"`` account at Dovecot's plaintext port to assert
on IMAP commands), ``server_bytes`` (bytes the server sent, over every connection: what a call's answer
weighs, to place a ``reset_after`` inside it) and ``threads()`` (the proxy's live threads). ``stop()`` closes everything and joins
every thread, raising if one does not finish.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import socket
import struct
import threading
import time
from collections.abc import Callable
from types import TracebackType

from tests.support.patience import NotYet, eventually, patient

__all__ = ["FaultProxy", "Mode"]

_CHUNK = 256 * 1024
_ACCEPT_POLL_S = 0.05
_UPSTREAM_CONNECT_TIMEOUT_S = patient(2.0)
_JOIN_TIMEOUT_S = patient(5.0)
THREAD_PREFIX = "faultproxy"


class Mode(enum.Enum):
    PASS = "pass"
    BLACKHOLE = "blackhole"
    REFUSE = "refuse"


def _set_linger_zero(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _shutdown(sock: socket.socket | None, how: int) -> None:
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(how)


class _ResetRule:
    """``reset_after``: how many bytes each claimed connection may still carry, and how many may claim."""

    def __init__(self, server_bytes: int, connections: int | None) -> None:
        self.server_bytes = server_bytes
        self.left = connections  # None: unlimited


class _Connection:
    """One proxied connection: the client socket, the upstream socket (None when blackholed), its pumps."""

    def __init__(
        self, ident: int, client: socket.socket, upstream: socket.socket | None, changed: threading.Condition
    ) -> None:
        self.ident = ident
        self.changed = changed  # the proxy's condition: notified so latency waits see the reset
        self.client = client
        self.upstream = upstream
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()
        self.pumps_running = 0
        self.reset = False  # close with RST instead of FIN
        self.closed = threading.Event()
        self.server_bytes = 0
        self.reset_budget: int | None = None  # server bytes left before a reset_after rule fires
        self.rule_seen: _ResetRule | None = None

    def abort(self) -> None:
        """Reset the connection: wake both pumps; the last one out closes with linger 0 (RST)."""
        with self.lock:
            self.reset = True
        with self.changed:
            self.changed.notify_all()
        _set_linger_zero(self.client)
        if self.upstream is not None:
            _set_linger_zero(self.upstream)
        _shutdown(self.client, socket.SHUT_RD)
        _shutdown(self.upstream, socket.SHUT_RD)

    def pump_finished(self) -> None:
        with self.lock:
            self.pumps_running -= 1
            last = self.pumps_running == 0
        if last:
            self.client.close()
            if self.upstream is not None:
                self.upstream.close()
            self.closed.set()


class FaultProxy:
    """A TCP proxy to ``(upstream_host, upstream_port)`` with switchable faults (see the module doc)."""

    def __init__(self, upstream_host: str, upstream_port: int, *, host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.host = host
        self.port = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._mode = Mode.PASS
        self._latency = 0.0
        self._cut_marker: bytes | None = None
        self._cut_times = 1
        self._refuse_after_cut = False
        self.cuts = 0
        self._drop_marker: bytes | None = None
        self._drop_times = 1
        self._refuse_after_drop = False
        self.drops = 0
        self._before: tuple[bytes, Callable[[], None], int] | None = None
        self.befores = 0
        self._rule: _ResetRule | None = None
        self._listening = False
        self._stopping = threading.Event()
        self._accept_thread: threading.Thread | None = None
        self._connections: dict[int, _Connection] = {}
        self._ids = itertools.count(1)
        self._log: list[tuple[int, bytes]] = []
        self.accepted = 0

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> FaultProxy:
        """Bind a free port on ``host`` and start accepting; returns ``self``."""
        if self._accept_thread is not None:
            return self
        listener = self._bind()
        self.port = listener.getsockname()[1]
        self._listening = True
        self._accept_thread = threading.Thread(
            target=self._accept_loop, args=(listener,), name=f"{THREAD_PREFIX}-accept", daemon=True
        )
        self._accept_thread.start()
        return self

    def stop(self) -> None:
        """Close the listener and every connection, join every thread; raise if one hangs."""
        if self._accept_thread is None:
            return
        self._stopping.set()
        with self._changed:
            self._changed.notify_all()
        self._accept_thread.join(_JOIN_TIMEOUT_S)
        with self._lock:
            connections = list(self._connections.values())
        with self._changed:
            self._changed.notify_all()
        for conn in connections:
            _shutdown(conn.client, socket.SHUT_RDWR)
            _shutdown(conn.upstream, socket.SHUT_RDWR)
        for conn in connections:
            for thread in conn.threads:
                thread.join(_JOIN_TIMEOUT_S)
        alive = self.threads()
        self._accept_thread = None
        if alive:
            raise RuntimeError(f"fault proxy threads did not stop: {[t.name for t in alive]}")

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def threads(self) -> list[threading.Thread]:
        """The proxy's threads that are still alive (accept loop and one per connection direction)."""
        with self._lock:
            threads = [t for c in self._connections.values() for t in c.threads]
        if self._accept_thread is not None:
            threads.append(self._accept_thread)
        return [t for t in threads if t.is_alive()]

    # ------------------------------------------------------------------ modes and actions

    @property
    def mode(self) -> Mode:
        return self._mode

    def pass_through(self) -> None:
        """Forward everything; clears latency, any ``reset_after`` or ``cut_after_sent`` rule, re-opens a
        refused listener."""
        with self._lock:
            self._latency = 0.0
            self._rule = None
            self._cut_marker = None
            self._drop_marker = None
        self._set_mode(Mode.PASS)

    def set_latency(self, seconds: float) -> None:
        """Delay every forwarded chunk by ``seconds``, in both directions (a round trip costs 2x)."""
        with self._lock:
            self._latency = max(0.0, seconds)
        self._set_mode(Mode.PASS)

    def blackhole(self) -> None:
        """Accept, but never forward or answer: open connections go silent, new ones never reach upstream."""
        self._set_mode(Mode.BLACKHOLE)

    def refuse(self) -> None:
        """Close the listener: new connections are refused; returns once the port is closed."""
        self._set_mode(Mode.REFUSE)

    def reset_connections(self) -> int:
        """RST every open client connection and wait until they are closed; returns how many."""
        with self._lock:
            connections = [c for c in self._connections.values() if not c.closed.is_set()]
        for conn in connections:
            conn.abort()
        for conn in connections:
            conn.closed.wait(_JOIN_TIMEOUT_S)
        return len(connections)

    def cut_after_sent(self, marker: bytes, times: int = 1, *, then_refuse: bool = False) -> None:
        """Reset the connection that sent ``marker`` (``times`` times in all) instead of forwarding the
        server's next answer (once). ``then_refuse``: and refuse new connections from then on (the link
        went down right after the command reached the server)."""
        with self._lock:
            self._cut_marker = marker
            self._cut_times = times
            self._refuse_after_cut = then_refuse

    def drop_when_sent(self, marker: bytes, times: int = 1, *, then_refuse: bool = False) -> None:
        """Reset the connection whose bytes would carry ``marker`` for the ``times``-th time, without
        forwarding them (once; ``drops`` counts it): a write command that never reaches the server.
        ``then_refuse``: and refuse new connections from then on (the server went away at that command)."""
        with self._lock:
            self._drop_marker = marker
            self._drop_times = times
            self._refuse_after_drop = then_refuse

    def before_sent(self, marker: bytes, action: Callable[[], None], times: int = 1) -> None:
        """Run ``action`` once, in the forwarding thread, before the client bytes that carry ``marker``
        for the ``times``-th time are forwarded: the change of another client that lands just before that
        command (an action that waits holds that connection's commands back meanwhile)."""
        with self._lock:
            self._before = (marker, action, times)

    def _run_before(self, data: bytes) -> None:
        with self._lock:
            before = self._before
            if before is None or before[0] not in data:
                return
            marker, action, times = before
            if times > 1:
                self._before = (marker, action, times - 1)
                return
            self._before = None
            self.befores += 1
        action()

    def reset_after(self, server_bytes: int, *, connections: int | None = 1) -> None:
        """Reset the next ``connections`` connections (None: all) after ``server_bytes`` more server bytes."""
        with self._lock:
            self._rule = _ResetRule(server_bytes, connections)

    def _set_mode(self, mode: Mode) -> None:
        with self._changed:
            self._mode = mode
            self._changed.notify_all()
            if self._accept_thread is None:
                return
            want = mode is not Mode.REFUSE
            if not self._changed.wait_for(lambda: self._listening == want, timeout=_JOIN_TIMEOUT_S):
                raise RuntimeError(f"fault proxy listener did not switch to listening={want}")

    # ------------------------------------------------------------------ observation

    @property
    def open_connections(self) -> int:
        """Client connections accepted and not yet closed."""
        with self._lock:
            return sum(1 for c in self._connections.values() if not c.closed.is_set())

    def wait_open_connections(self, at_most: int, within: float = 2.0) -> int:
        """Wait until at most ``at_most`` connections are open (closing takes a few ms); return the count."""
        with contextlib.suppress(NotYet):
            eventually(lambda: self.open_connections <= at_most, within=within, interval=0.01)
        return self.open_connections

    @property
    def server_bytes(self) -> int:
        """Bytes the server sent to clients so far, over every connection."""
        with self._lock:
            return sum(c.server_bytes for c in self._connections.values())

    def sent(self, connection: int | None = None) -> bytes:
        """Bytes clients sent that were forwarded upstream (one connection's, or all in arrival order)."""
        with self._lock:
            return b"".join(data for ident, data in self._log if connection in (None, ident))

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    # ------------------------------------------------------------------ internals

    def _bind(self) -> socket.socket:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        listener.settimeout(_ACCEPT_POLL_S)
        return listener

    def _accept_loop(self, listener: socket.socket | None) -> None:
        """Owns the listening socket: closes it while refusing, re-binds afterwards, accepts otherwise."""
        try:
            while not self._stopping.is_set():
                with self._changed:
                    want = self._mode is not Mode.REFUSE
                    if want and listener is None:
                        listener = self._bind()
                    elif not want and listener is not None:
                        listener.close()
                        listener = None
                    self._listening = listener is not None
                    self._changed.notify_all()
                    if listener is None:
                        self._changed.wait(_ACCEPT_POLL_S)
                        continue
                try:
                    client, _ = listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    if self._stopping.is_set():
                        break
                    raise
                self._open(client)
        finally:
            if listener is not None:
                listener.close()
            with self._changed:
                self._listening = False
                self._changed.notify_all()

    def _open(self, client: socket.socket) -> None:
        client.settimeout(None)
        self.accepted += 1
        upstream: socket.socket | None = None
        if self._mode is not Mode.BLACKHOLE:
            try:
                upstream = socket.create_connection(self.upstream, timeout=_UPSTREAM_CONNECT_TIMEOUT_S)
            except OSError:
                # The server is down: the client sees its connection reset, as a dead backend looks.
                _set_linger_zero(client)
                client.close()
                return
            upstream.settimeout(None)
        conn = _Connection(next(self._ids), client, upstream, self._changed)
        pumps = [(client, upstream, "c2s")]
        if upstream is not None:
            pumps.append((upstream, client, "s2c"))
        conn.pumps_running = len(pumps)
        for src, dst, direction in pumps:
            conn.threads.append(
                threading.Thread(
                    target=self._pump,
                    args=(conn, src, dst, direction),
                    name=f"{THREAD_PREFIX}-{conn.ident}-{direction}",
                    daemon=True,
                )
            )
        with self._lock:
            self._connections[conn.ident] = conn
        for thread in conn.threads:
            thread.start()

    def _pump(self, conn: _Connection, src: socket.socket, dst: socket.socket | None, direction: str) -> None:
        """Copy ``src`` to ``dst`` applying the current faults, until EOF, error, reset or stop."""
        try:
            while True:
                try:
                    data = src.recv(_CHUNK)
                except OSError:
                    break
                if not data or conn.reset:
                    break
                if not self._hold(conn, time.monotonic()):
                    break  # reset or stopped while the chunk was in flight
                if dst is None or self._mode is Mode.BLACKHOLE:
                    continue
                if direction == "s2c":
                    data, cut = self._apply_reset_rule(conn, data)
                else:
                    cut = False
                    self._run_before(data)
                    if self._drops(conn, data):
                        conn.abort()
                        break
                try:
                    dst.sendall(data)
                except OSError:
                    break
                if cut:
                    conn.abort()
                    break
        finally:
            if not conn.reset and dst is not None:
                # Forward the half-close (FIN) so the other side sees an orderly EOF.
                _shutdown(dst, socket.SHUT_WR)
            conn.pump_finished()

    def _drops(self, conn: _Connection, data: bytes) -> bool:
        """Log client bytes to be forwarded; True (nothing logged) when they are to be dropped instead."""
        with self._lock:
            marker = self._drop_marker
            if marker is not None:
                sent = b"".join(chunk for ident, chunk in self._log if ident == conn.ident)
                if (sent + data).count(marker) >= self._drop_times:
                    self._drop_marker = None
                    self.drops += 1
                    if self._refuse_after_drop:
                        self._refuse_now()
                    return True
            self._log.append((conn.ident, data))
            return False

    def _hold(self, conn: _Connection, arrival: float) -> bool:
        """Delay a chunk until ``arrival`` + the current latency; False when the connection is aborted.

        The latency is re-read whenever the mode changes, so ``pass_through()`` releases chunks in flight.
        """
        with self._changed:
            while True:
                if conn.reset or self._stopping.is_set():
                    return False
                wait = arrival + self._latency - time.monotonic()
                if wait <= 0:
                    return True
                self._changed.wait(wait)

    def _refuse_now(self) -> None:
        """Close the listener before the client can connect again (the lock held)."""
        self._mode = Mode.REFUSE
        self._changed.notify_all()
        self._changed.wait_for(lambda: not self._listening, timeout=_JOIN_TIMEOUT_S)

    def _apply_reset_rule(self, conn: _Connection, data: bytes) -> tuple[bytes, bool]:
        """Count server bytes; return the part to forward and whether to reset after it."""
        marker = self._cut_marker
        if marker is not None and self.sent(conn.ident).count(marker) >= self._cut_times:
            with self._lock:
                self._cut_marker = None
                self.cuts += 1
                if self._refuse_after_cut:
                    self._refuse_now()
            return b"", True
        with self._lock:
            conn.server_bytes += len(data)
            rule = self._rule
            if rule is not None and conn.rule_seen is not rule:
                conn.rule_seen = rule
                if rule.left is None or rule.left > 0:
                    conn.reset_budget = rule.server_bytes
                    if rule.left is not None:
                        rule.left -= 1
                else:
                    conn.reset_budget = None
            if rule is None:
                conn.reset_budget = None
            budget = conn.reset_budget
            if budget is None:
                return data, False
            if len(data) < budget:
                conn.reset_budget = budget - len(data)
                return data, False
            conn.reset_budget = None
            return data[:budget], True
