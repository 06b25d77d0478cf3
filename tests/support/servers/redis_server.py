"""A throwaway Redis (Debian's ``redis-server``) on a free loopback port, for the tests of shared
state: no persistence, its directory under the test's temporary directory. ``stop`` and ``start``
again (same port) let a test take Redis away and bring it back."""

from __future__ import annotations

import socket

from tests.support.patience import patient
from tests.support.servers.daemon import LoopbackDaemon


class RedisServer(LoopbackDaemon):
    """``with RedisServer(tmp) as redis: redis.url``; ``stop`` kills it, as a crash would."""

    program = "redis-server"
    package = "redis-server"
    graceful = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        return [
            self.binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.directory),
            "--daemonize", "no",
            "--protected-mode", "yes",
        ]  # fmt: skip

    def answers(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=patient(1)) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")

    def holds(self, key: str) -> bool:
        """Whether Redis holds ``key`` (``EXISTS``)."""
        request = f"*2\r\n$6\r\nEXISTS\r\n${len(key.encode())}\r\n{key}\r\n".encode()
        with socket.create_connection(("127.0.0.1", self.port), timeout=patient(1)) as sock:
            sock.sendall(request)
            return sock.recv(64).startswith(b":1")
