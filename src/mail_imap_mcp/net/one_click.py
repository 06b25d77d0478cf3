"""The one web request the server makes for the user: an RFC 8058 one-click unsubscribe POST.

Exactly one ``POST`` with the body ``List-Unsubscribe=One-Click`` to an ``https`` address on port 443
without a user or password in it; the name resolved once, every address it resolves to public (the
table of :mod:`.public_address`: no private, shared, loopback, link-local, documentation, reserved or
multicast range, nor an IPv6 address carrying such an IPv4 one), the connection made to a checked address (never a second resolution), the
certificate verified against the address's own host name; no cookie, no redirect followed, no proxy or
``.netrc`` from the environment (no HTTP library: a socket, TLS and one request); one deadline for
resolving, connecting and the answer, of which only the status line is read.

Whether a message's address may be posted to at all (one-click offered, a DKIM signature covering
both headers) is the policy of :mod:`mail_imap_mcp.services.unsubscribe`; this module knows no mail.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from .public_address import IpAddress, refusal

#: The body RFC 8058 section 3.1 prescribes.
ONE_CLICK_BODY = b"List-Unsubscribe=One-Click"
HTTPS_PORT = 443
#: Resolving, connecting and the answer together, by default.
DEADLINE_S = 10.0
#: The most of an answer read: its status line.
STATUS_LINE_MAX = 1024
_STATUS = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9])[ \r]")

#: ``(host as sent to DNS, seconds left)`` -> the addresses the name resolves to (tests replace it).
Resolve = Callable[[str, float], Sequence[str]]
#: ``(address, port, seconds left)`` -> a connected socket; tests record or refuse through it.
Connect = Callable[[str, int, float], socket.socket]
#: Where a request that got no answer stopped.
Stage = Literal["resolve", "connect", "answer"]


class OneClickRefused(Exception):
    """The address is not one the server posts to; nothing was sent (no connection was attempted)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OneClickFailed(Exception):
    """The request did not get an answer: at ``stage``; ``limit`` names the limit that ended it."""

    def __init__(self, stage: Stage, detail: str, limit: str | None = None):
        super().__init__(f"{stage}: {detail}")
        self.stage, self.detail, self.limit = stage, detail, limit


@dataclass(frozen=True)
class OneClickTarget:
    """An address the request may go to: its host (ASCII, as DNS and the certificate name it; and that
    name's Unicode form, for the person approving) and the path with its query."""

    url: str
    host: str
    host_unicode: str
    path: str

    @property
    def shown_host(self) -> str:
        """The host in both forms where they differ (``bücher.example (xn--bcher-kva.example)``)."""
        return self.host if self.host == self.host_unicode else f"{self.host_unicode} ({self.host})"


def one_click_target(url: str) -> OneClickTarget:
    """``url`` as a target, or :class:`OneClickRefused` saying why not (``https`` on 443 only, no user or
    password, a host name that is no address literal)."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme.lower() != "https":
        raise OneClickRefused("only an https address is posted to")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise OneClickRefused("an address with a user or password is not posted to")
    try:
        port = parts.port
    except ValueError:
        raise OneClickRefused("the address's port is malformed") from None
    if port not in (None, HTTPS_PORT):
        raise OneClickRefused("only port 443 is posted to")
    name = (parts.hostname or "").rstrip(".")
    if not name or any(ch in name for ch in "[]%\\") or _is_address(name):
        raise OneClickRefused("the address names no host")
    try:
        host = name.encode("idna").decode("ascii").lower()
        host_unicode = host.encode("ascii").decode("idna")
    except UnicodeError:
        raise OneClickRefused("the host name is not a valid international name") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return OneClickTarget(url=url, host=host, host_unicode=host_unicode, path=path)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def system_resolve(host: str, timeout: float) -> list[str]:
    """The addresses ``host`` resolves to (the system's resolver), within ``timeout`` seconds: the lookup
    runs in a thread of its own, abandoned when the deadline passes (``getaddrinfo`` takes no timeout)."""
    found: list[str] = []
    failure: list[BaseException] = []

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(host, HTTPS_PORT, type=socket.SOCK_STREAM)
            found.extend(dict.fromkeys(str(info[4][0]) for info in infos))
        except OSError as exc:
            failure.append(exc)

    thread = threading.Thread(target=lookup, name="mail-imap-mcp-resolve", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError("resolving took longer than the deadline")
    if failure:
        raise failure[0]
    return found


def tcp_connect(address: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to the address literal ``address`` (no name: nothing is resolved again)."""
    return socket.create_connection((address, port), timeout=timeout)


@dataclass(frozen=True)
class LoopbackAllowance:
    """For tests only, and only in code (no setting reaches it): lets the client reach a loopback test
    server, ``port`` standing in for 443 and ``context`` trusting the test's certificate authority."""

    port: int
    context: ssl.SSLContext

    def permits(self, address: IpAddress) -> bool:
        return address.is_loopback


@dataclass
class OneClickClient:
    """Posts one RFC 8058 request (:meth:`post`); its resolver and connector are replaceable by tests."""

    resolve: Resolve = system_resolve
    connect: Connect = tcp_connect
    deadline_s: float = DEADLINE_S
    clock: Callable[[], float] = time.monotonic
    #: Off unless a test hands one in (:class:`LoopbackAllowance`).
    allowance: LoopbackAllowance | None = None
    #: The system's trust store, loaded on the first request (about 20 ms of CPU, which every server
    #: start paid for a request most sessions never make).
    context: ssl.SSLContext | None = None

    def post(self, target: OneClickTarget) -> int:
        """POST ``List-Unsubscribe=One-Click`` to ``target`` once; the answer's status code.

        :class:`OneClickRefused` where the name resolves to an address that is not public (nothing was
        connected to), :class:`OneClickFailed` where the request got no answer in time or at all.
        """
        deadline = self.clock() + self.deadline_s

        def left(stage: Stage = "answer") -> float:
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise OneClickFailed(stage, "nothing within the deadline", limit="deadline")
            return remaining

        addresses = self._checked_addresses(target, left)
        sock = self._connected(addresses, left)
        try:
            return self._exchange(sock, target, left)
        finally:
            sock.close()

    def _checked_addresses(self, target: OneClickTarget, left: Callable[[Stage], float]) -> list[str]:
        try:
            resolved = list(self.resolve(target.host, left("resolve")))
        except TimeoutError:
            raise OneClickFailed("resolve", "no address within the deadline", limit="deadline") from None
        except OSError as exc:
            raise OneClickFailed("resolve", f"the name does not resolve ({exc.__class__.__name__})") from None
        if not resolved:
            raise OneClickFailed("resolve", "the name resolves to no address")
        checked = []
        for text in resolved:
            address = ipaddress.ip_address(text.split("%")[0])
            why = refusal(address)
            if why is not None and not (self.allowance is not None and self.allowance.permits(address)):
                raise OneClickRefused(
                    f"{target.host} resolves to {address}, which is not a public address ({why})"
                )
            checked.append(str(address))
        return checked

    def _connected(self, addresses: list[str], left: Callable[[Stage], float]) -> socket.socket:
        port = HTTPS_PORT if self.allowance is None else self.allowance.port
        last: OSError | None = None
        for address in addresses:
            try:
                return self.connect(address, port, left("connect"))
            except OSError as exc:
                last = exc
        if last is not None and isinstance(last, TimeoutError):
            raise OneClickFailed("connect", "no connection within the deadline", limit="deadline")
        raise OneClickFailed("connect", f"no connection ({last.__class__.__name__})")

    def _tls_context(self) -> ssl.SSLContext:
        if self.context is None:
            self.context = ssl.create_default_context()
        return self.context

    def _exchange(self, sock: socket.socket, target: OneClickTarget, left: Callable[[Stage], float]) -> int:
        context = self._tls_context() if self.allowance is None else self.allowance.context
        request = (
            f"POST {target.path} HTTP/1.1\r\n"
            f"Host: {target.host}\r\n"
            "User-Agent: mail-imap-mcp (RFC 8058 one-click unsubscribe)\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(ONE_CLICK_BODY)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode("ascii") + ONE_CLICK_BODY
        try:
            sock.settimeout(left("connect"))
            with context.wrap_socket(sock, server_hostname=target.host) as tls:
                tls.settimeout(left("answer"))
                tls.sendall(request)
                answer = b""
                while b"\n" not in answer and len(answer) < STATUS_LINE_MAX:
                    tls.settimeout(left("answer"))
                    chunk = tls.recv(STATUS_LINE_MAX - len(answer))
                    if not chunk:
                        break
                    answer += chunk
        except TimeoutError:
            raise OneClickFailed("answer", "no answer within the deadline", limit="deadline") from None
        except ssl.SSLCertVerificationError as exc:
            detail = f"the certificate is not valid for {target.host}: {exc.verify_message}"
            raise OneClickFailed("connect", detail) from None
        except OSError as exc:
            raise OneClickFailed("answer", f"the connection failed ({exc.__class__.__name__})") from None
        matched = _STATUS.match(answer)
        if matched is None:
            raise OneClickFailed("answer", "the answer is no HTTP status line")
        return int(matched.group(1))
