"""A plain IMAP connection on loopback that reads line by line: what ``scripts/push_flush`` and
``scripts/push_latency`` speak to a throwaway Dovecot (LOGIN, APPEND, STATUS, IDLE, NOTIFY), with no
client library between them and the server's words."""

from __future__ import annotations

import socket
import time


class RawImap:
    """One connection: commands tagged ``t1``, ``t2``...; the greeting read on opening."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buffer = b""
        self.tag = 0
        self.read()

    def login(self, user: str, password: str) -> RawImap:
        self.command(b'LOGIN "%s" "%s"' % (user.encode(), password.encode()))
        return self

    def read(self) -> bytes:
        """The next line, waiting as long as it takes."""
        line = self.read_within(None)
        assert line is not None
        return line

    def read_within(self, timeout: float | None) -> bytes | None:
        """The next line, or None when none came within ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        while b"\r\n" not in self.buffer:
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return None
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def send(self, text: bytes, literal: bytes | None = None) -> bytes:
        """Send a command (with ``literal`` as a non-synchronising literal); its tag."""
        self.tag += 1
        tag = b"t%d" % self.tag
        if literal is None:
            self.sock.sendall(tag + b" " + text + b"\r\n")
        else:
            self.sock.sendall(tag + b" " + text + b" {%d+}\r\n" % len(literal) + literal + b"\r\n")
        return tag

    def until(self, tag: bytes) -> list[bytes]:
        """The untagged lines up to the tagged answer of ``tag`` (which must be OK)."""
        untagged = []
        while not (line := self.read()).startswith(tag + b" "):
            untagged.append(line)
        if not line.startswith(tag + b" OK"):
            raise RuntimeError(line.decode(errors="replace"))
        return untagged

    def command(self, text: bytes, literal: bytes | None = None) -> list[bytes]:
        """Send a command and wait for its OK: the untagged lines before it."""
        return self.until(self.send(text, literal))

    def wait_for(self, word: bytes, timeout: float) -> bool:
        """Whether a line holding ``word`` came within ``timeout`` seconds."""
        until = time.monotonic() + timeout
        while (left := until - time.monotonic()) > 0:
            line = self.read_within(left)
            if line is not None and word in line:
                return True
        return False
