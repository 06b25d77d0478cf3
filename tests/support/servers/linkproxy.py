"""A loopback TCP proxy that behaves like a network link: a fixed one-way delay on every chunk, pipelined.

``LinkProxy(upstream_host, upstream_port, one_way_s=0.010)`` listens on ``127.0.0.1`` (a free port) and
forwards each accepted connection to the upstream address. Every chunk read from one side is delivered
to the other ``one_way_s`` after it arrived, whatever else is in flight: per direction a reader thread
time-stamps chunks into a queue and a writer thread sends each at ``arrival + one_way_s``. So a round
trip costs ``2 * one_way_s`` and a response that arrives in many chunks is delayed once, as on a link
(not once per chunk, as a serial sleep would do). Nagle is off on the proxy's own sockets, so the proxy
adds no coalescing delay of its own. TLS passes through untouched.

Idle drops, as a NAT or a server's idle timeout does them:

* ``idle_timeout_s`` (constructor or attribute): a connection that carried no byte in either direction
  for that long is reset (RST to both sides) by a watchdog thread.
* ``drop_idle(at_least_s=0)`` resets every connection idle for at least that long, now.

``dropped`` counts connections reset for idleness, ``accepted`` connections accepted. ``stop()`` closes
everything and joins every thread (raises if one hangs).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import socket
import struct
import threading
import time
from types import TracebackType

from tests.support.patience import patient

__all__ = ["LinkProxy"]

_CHUNK = 256 * 1024
_POLL_S = 0.05
_JOIN_TIMEOUT_S = patient(5.0)
THREAD_PREFIX = "linkproxy"


def _no_delay(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Link:
    """One proxied connection: two sockets, and per direction a queue of (deliver_at, chunk)."""

    def __init__(self, ident: int, client: socket.socket, upstream: socket.socket) -> None:
        self.ident = ident
        self.client = client
        self.upstream = upstream
        self.last_activity = time.monotonic()
        self.closed = False
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.running = 4  # reader and writer per direction

    def touch(self) -> None:
        self.last_activity = time.monotonic()

    def reset(self) -> None:
        """RST both sides (linger 0), which also ends the four threads."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self.lock:
            self.closed = True
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.close()


class _Direction:
    """Chunks read from ``src`` waiting to be written to ``dst`` at their delivery time."""

    def __init__(self, link: _Link, src: socket.socket, dst: socket.socket) -> None:
        self.link = link
        self.src = src
        self.dst = dst
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.ready = threading.Condition()
        self.eof = False


class LinkProxy:
    """A TCP proxy adding ``one_way_s`` to every chunk in each direction (see the module doc)."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        one_way_s: float = 0.0,
        idle_timeout_s: float | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.one_way_s = one_way_s
        self.idle_timeout_s = idle_timeout_s
        self.host = host
        self.port = 0
        self.accepted = 0
        self.dropped = 0
        self._listener: socket.socket | None = None
        self._links: dict[int, _Link] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> LinkProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def start(self) -> LinkProxy:
        listener = socket.create_server((self.host, 0))
        listener.settimeout(_POLL_S)
        self._listener = listener
        self.port = listener.getsockname()[1]
        for target, name in ((self._accept_loop, "accept"), (self._watchdog, "idle")):
            thread = threading.Thread(target=target, name=f"{THREAD_PREFIX}-{name}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            links = list(self._links.values())
        for link in links:
            link.reset()
        for thread in self.threads():
            thread.join(_JOIN_TIMEOUT_S)
        if self._listener is not None:
            self._listener.close()
        for link in links:
            link.close()
        alive = [t.name for t in self.threads() if t.is_alive()]
        if alive:
            raise RuntimeError(f"link proxy threads did not stop: {alive}")

    def threads(self) -> list[threading.Thread]:
        with self._lock:
            threads = [*self._threads, *(t for link in self._links.values() for t in link.threads)]
        return [t for t in threads if t.is_alive()]

    @property
    def open_connections(self) -> int:
        with self._lock:
            return sum(1 for link in self._links.values() if not link.closed)

    def drop_idle(self, at_least_s: float = 0.0) -> int:
        """Reset every connection idle for at least ``at_least_s``; returns how many."""
        now = time.monotonic()
        with self._lock:
            idle = [
                link
                for link in self._links.values()
                if not link.closed and now - link.last_activity >= at_least_s
            ]
        for link in idle:
            link.reset()
        with self._lock:
            self.dropped += len(idle)
        return len(idle)

    # ------------------------------------------------------------------ internals

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.upstream, timeout=patient(5))
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            _no_delay(client)
            _no_delay(upstream)
            self.accepted += 1
            link = _Link(next(self._ids), client, upstream)
            for src, dst, name in ((client, upstream, "c2s"), (upstream, client, "s2c")):
                direction = _Direction(link, src, dst)
                for target, role in ((self._read, "read"), (self._write, "write")):
                    link.threads.append(
                        threading.Thread(
                            target=target,
                            args=(direction,),
                            name=f"{THREAD_PREFIX}-{link.ident}-{name}-{role}",
                            daemon=True,
                        )
                    )
            with self._lock:
                self._links[link.ident] = link
            for thread in link.threads:
                thread.start()

    def _read(self, direction: _Direction) -> None:
        try:
            while True:
                try:
                    data = direction.src.recv(_CHUNK)
                except OSError:
                    break
                if not data:
                    break
                direction.link.touch()
                with direction.ready:
                    direction.queue.append((time.monotonic() + self.one_way_s, data))
                    direction.ready.notify()
        finally:
            with direction.ready:
                direction.eof = True
                direction.ready.notify()
            self._finished(direction.link)

    def _write(self, direction: _Direction) -> None:
        try:
            while True:
                with direction.ready:
                    while not direction.queue and not direction.eof:
                        direction.ready.wait()
                    if not direction.queue:
                        break  # EOF and nothing left to deliver
                    due, data = direction.queue.popleft()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if direction.link.closed:
                    break
                try:
                    direction.dst.sendall(data)
                except OSError:
                    break
                direction.link.touch()
        finally:
            with contextlib.suppress(OSError):
                direction.dst.shutdown(socket.SHUT_WR)
            self._finished(direction.link)

    def _finished(self, link: _Link) -> None:
        with link.lock:
            link.running -= 1
            last = link.running == 0
        if last:
            link.close()
            with self._lock:
                self._links.pop(link.ident, None)

    def _watchdog(self) -> None:
        while not self._stopping.wait(_POLL_S):
            if self.idle_timeout_s is not None:
                self.drop_idle(self.idle_timeout_s)


def main(argv: list[str] | None = None) -> int:
    """Run a link in its own process (so the delays do not compete for a benchmark's GIL).

    Prints ``port <n>`` once listening; then reads commands from stdin, one per line, answering each
    with one line: ``drop`` (reset idle connections now: ``dropped <n>``), ``stats`` (``accepted <n>
    dropped <n> open <n>``). Stops at EOF.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m tests.support.servers.linkproxy")
    parser.add_argument("--upstream", required=True, help="host:port")
    parser.add_argument("--one-way-s", type=float, default=0.0)
    parser.add_argument("--idle-timeout-s", type=float, default=None)
    args = parser.parse_args(argv)
    host, _, port = args.upstream.rpartition(":")
    with LinkProxy(host, int(port), one_way_s=args.one_way_s, idle_timeout_s=args.idle_timeout_s) as link:
        print(f"port {link.port}", flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "drop":
                print(f"dropped {link.drop_idle()}", flush=True)
            elif command == "stats":
                print(
                    f"accepted {link.accepted} dropped {link.dropped} open {link.open_connections}",
                    flush=True,
                )
            else:
                print(f"unknown {command}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
