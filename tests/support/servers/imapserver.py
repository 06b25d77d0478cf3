"""What the throwaway IMAP servers of the test harness (Dovecot, Cyrus, Courier) have in common.

``ImapServer`` is the base of ``Dovecot`` (tests/support/servers/dovecot.py), ``Cyrus`` (cyrus.py) and ``Courier``
(courier.py): one short temporary directory per instance, in the temporary directory or ``/tmp`` (unix
socket paths are limited to 108 bytes), two listeners on ``127.0.0.1`` with ports picked at start (``tls_port``: implicit TLS;
``plain_port``: plaintext with STARTTLS), a CA made with ``trustme`` (``ca_file``), one ``password`` for
every user, ``new_user()``, ``connect()``, ``seed()``, ``recreate_mailbox()`` (DELETE and CREATE from a
session of its own: a new UIDVALIDITY for sessions that have the folder selected) and a clean ``stop()``
(also at interpreter exit). ``mailbox_name(*levels)`` spells a folder the server's way (prefix and
separator). A subclass writes its configuration in ``_prepare()``, starts its processes in ``_spawn()``
(one process group, or one whose leader ends all the others when killed) and registers users in
``_add_user()``.

``AppendSeeding`` is the ``seed()`` of servers whose files the harness does not write itself: IMAP APPEND
with flags and INTERNALDATE, one MULTIAPPEND per batch where the server offers it.

Cyrus (and any other server that only logs to syslog) can read its log through ``SyslogSink``: a listener
on ``/dev/log`` for as long as some instance needs it, when no syslog daemon owns that socket.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import datetime as dt
import email.utils
import errno
import itertools
import os
import random
import re
import secrets
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import imapclient
import trustme

from tests.support.patience import NotYet, eventually, patient

__all__ = [
    "FFDHE2048_PEM",
    "AppendSeeding",
    "FlagSpec",
    "ImapServer",
    "SyslogSink",
    "free_ports",
    "header_date",
    "which",
]

#: RFC 7919 ``ffdhe2048`` group, for servers that want DH parameters (generating them takes tens of seconds).
FFDHE2048_PEM = """\
-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
"""

#: Flags for one message: a single flag string (``"\\Seen"``; whitespace separates several) or an
#: iterable of flag strings. Names without a leading backslash are keywords.
FlagSpec = str | Iterable[str]
#: ``seed()``'s ``flags``: one spec for every message, one per message, or a function of the index.
FlagsArg = str | Sequence[FlagSpec] | Callable[[int], FlagSpec] | None
#: ``seed()``'s ``internaldates``: one per message or a function of the index (POSIX time or datetime).
DatesArg = Sequence[dt.datetime | float] | Callable[[int], dt.datetime | float] | None

READY_TIMEOUT = 15.0
#: Instances started at once (one per pytest worker) can be handed the same "free" port; the one that
#: starts second is given new ones, at most this many times.
PORT_ATTEMPTS = 3
STOP_GRACE = 2.0  # restart(): let the server shut down cleanly
DISCARD_GRACE = 0.3  # stop(): the data is about to be deleted
USERNAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")

#: Where scripts/_bootstrap.sh (ensure_imap_matrix) unpacks the Cyrus and Courier server packages.
SERVERS_DIR_ENV = "MIM_IMAP_SERVERS_DIR"
REPO_ROOT = Path(__file__).resolve().parents[3]


def which(name: str) -> str | None:
    """``shutil.which`` that also looks in the sbin directories missing from non-root PATHs."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/sbin")


#: Where the kernel takes the local port of every outgoing connection, and of every ``bind`` to port 0.
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: The lowest port ``free_ports`` hands out below that range (under it: the usual ports of local services).
LISTEN_PORTS_FLOOR = 20000


def listen_ports() -> range | None:
    """The ports below the kernel's ephemeral range that ``free_ports`` picks from (None: bind to port 0).

    A port in that range is free only until the next connection: a client connecting to any other
    server of the run can be given it as its local port between the check and the server's own bind
    (a CI run lost a worker's session Dovecot, "listen(127.0.0.1, 45437) failed: Address already in
    use", and the 99 tests that needed it). No connection is ever given a port below the range."""
    try:
        low, _high = (int(field) for field in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return None
    return range(LISTEN_PORTS_FLOOR, low) if low - LISTEN_PORTS_FLOOR >= 1000 else None


#: Every port ``free_ports`` handed out in this process, never handed out again: a server given one may
#: not have bound it yet (a CI run gave a Submission chain's Exim the port its own Dovecot was given next).
_HANDED_OUT: set[int] = set()


def _bind_free(sock: socket.socket, host: str, candidates: range | None) -> None:
    """Bind ``sock`` to a free port of ``candidates`` (a random one: workers pick at once) that this
    process has not handed out before, else port 0."""
    for port in random.sample(candidates, 100) if candidates else ():
        if port in _HANDED_OUT:
            continue
        try:
            sock.bind((host, port))
            return
        except OSError:  # taken: another one
            continue
    sock.bind((host, 0))


def free_ports(*hosts: str) -> list[int]:
    """One currently free TCP port per host, all different (the sockets are held open together) and
    none handed out before by this process, below the kernel's ephemeral range where it has one
    (``listen_ports``)."""
    candidates = listen_ports()
    socks = []
    try:
        for host in hosts:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            _bind_free(sock, host, candidates)
        ports = [int(sock.getsockname()[1]) for sock in socks]
        _HANDED_OUT.update(ports)
        return ports
    finally:
        for sock in socks:
            sock.close()


def _greeting_line(sock: socket.socket, limit: int = 4096) -> bytes:
    """The server's first line (a greeting may carry a long CAPABILITY list), at most ``limit`` bytes."""
    line = b""
    while not line.endswith(b"\n") and len(line) < limit:
        chunk = sock.recv(limit - len(line))
        if not chunk:
            break
        line += chunk
    return line


def header_date(message: bytes) -> float | None:
    """POSIX time of the message's Date header, or None if absent/unparseable (cheap, no MIME parsing)."""
    ends = [pos for pos in (message.find(b"\n\n"), message.find(b"\n\r\n")) if pos >= 0]
    limit = min(ends) if ends else len(message)
    if message.startswith(b"Date:"):
        start = 0
    else:
        start = message.find(b"\nDate:", 0, limit)
        if start < 0:
            return None
        start += 1
    end = message.find(b"\n", start)
    value = message[start + 5 : end if end >= 0 else len(message)].decode("ascii", "replace").strip()
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    try:
        return float(email.utils.mktime_tz(parsed))
    except (OverflowError, ValueError):
        return None


def flag_spec(flags: FlagsArg, index: int) -> FlagSpec:
    """The flags ``seed()`` gives message ``index``."""
    if flags is None:
        return ()
    if isinstance(flags, str):
        return flags
    if callable(flags):
        return flags(index)
    return flags[index]


def flag_list(spec: FlagSpec) -> list[str]:
    return spec.split() if isinstance(spec, str) else list(spec)


def internaldate(dates: DatesArg, index: int) -> dt.datetime | float | None:
    """The INTERNALDATE ``seed()`` gives message ``index`` (None: the server's default)."""
    if dates is None:
        return None
    return dates(index) if callable(dates) else dates[index]


def servers_dir() -> Path:
    """Where the unpacked Cyrus/Courier server packages live (``$MIM_IMAP_SERVERS_DIR`` overrides)."""
    return Path(os.environ.get(SERVERS_DIR_ENV) or REPO_ROOT / ".cache" / "imap-servers")


def ensure_imap_matrix(required: Iterable[Path]) -> Path:
    """Make sure the ``required`` files exist, running ``ensure_imap_matrix`` of scripts/_bootstrap.sh
    (as root on Debian/Ubuntu) when one is missing; return ``servers_dir()``."""
    required = list(required)
    if all(path.exists() for path in required):
        return servers_dir()
    bootstrap = REPO_ROOT / "scripts" / "_bootstrap.sh"
    if os.geteuid() == 0 and shutil.which("apt-get") and bootstrap.exists():
        env = dict(os.environ, **{SERVERS_DIR_ENV: str(servers_dir())})
        result = subprocess.run(
            ["bash", "-c", 'source "$1" && ensure_imap_matrix', "bash", str(bootstrap)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode == 0 and all(path.exists() for path in required):
            return servers_dir()
        raise RuntimeError(f"ensure_imap_matrix failed ({result.returncode}):\n{result.stderr.strip()}")
    missing = ", ".join(str(path) for path in required if not path.exists())
    raise RuntimeError(
        f"Cyrus/Courier test servers are missing ({missing}): run scripts/test as root on Debian/Ubuntu "
        "once, or `source scripts/_bootstrap.sh && ensure_imap_matrix` (see that function)."
    )


def remove_tree(root: Path) -> None:
    """Delete ``root`` and everything below it, each directory's files in inode order.

    ``shutil.rmtree`` unlinks in directory order, which on ext4 visits a large Maildir's inodes at
    random: removing the 100,000-message mailbox of test_search took 30 s on an idle machine and 173 s
    under load (failing a session's teardown at the 300 s timeout), against 3.6 s in inode order.
    """
    for directory, _, _ in os.walk(root, topdown=False):
        files: list[tuple[int, str]] = []
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            files = sorted((e.inode(), e.path) for e in entries if not e.is_dir(follow_symlinks=False))
        for _, path in files:
            with contextlib.suppress(OSError):
                os.unlink(path)
    shutil.rmtree(root, ignore_errors=True)  # the directories, and anything that failed above


def terminate_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process group led by ``proc``, wait up to ``grace`` s for ``proc``, then SIGKILL it.

    Signalling the group (not only the leader) makes Dovecot's shutdown take ~10 ms instead of ~1.1 s, and
    SIGKILL afterwards also ends session processes of clients that outlive the leader. While ``proc`` is an unreaped zombie its pid (and so the group id) cannot be reused, so signalling the
    group can never hit an unrelated process.
    """
    if proc.returncode is None:
        pgid = proc.pid  # session leader: its pid is the group id
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(NotYet):  # then SIGKILL
            eventually(
                lambda: os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None,
                within=grace,
                interval=0.01,
            )
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    proc.wait()


#: The shell that starts a server (``sh -c LIFELINE lifeline ARGV...``, its stdin the read end of a pipe
#: whose write end only this process holds, see ``_lifeline_fd``): a watcher in the server's process
#: group blocks reading that pipe, and the shell ``exec``s the server (so ``_proc`` is the server itself,
#: its stdin /dev/null). When this process is gone, however it ended (SIGKILL, a CI time limit, a crash:
#: ``atexit`` and fixture teardown never run), the read sees end-of-file and the watcher SIGKILLs the
#: whole group. Signalling only the server's main process is not enough: Dovecot's and Cyrus' children
#: outlive a killed master, and PR_SET_PDEATHSIG fires when the *thread* that started the server ends
#: (servers are also restarted from worker threads).
LIFELINE = 'exec 3<&0; (read _ <&3; kill -9 0) & exec "$@" 3<&- </dev/null'
_lifeline: tuple[int, int] | None = None
_lifeline_lock = threading.Lock()


def _lifeline_fd() -> int:
    """The read end of this process's lifeline pipe (created on first use; the write end is never written
    to and is closed, by the kernel, only when this process ends). A forked child re-creates its own."""
    global _lifeline
    with _lifeline_lock:
        if _lifeline is None or _lifeline[0] != os.getpid():
            read_end, write_end = os.pipe()  # both non-inheritable: no other child holds the write end
            _lifeline = (os.getpid(), read_end)
            _LIFELINE_WRITE_ENDS.append(write_end)
        return _lifeline[1]


#: Kept open for the life of the process (a closed write end would end every server at once).
_LIFELINE_WRITE_ENDS: list[int] = []


def tail_file(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a log file, headed by its name ("" if missing or empty)."""
    with contextlib.suppress(OSError):
        text = path.read_text(errors="replace").splitlines()[-lines:]
        if text:
            return f"--- {path.name} ---\n" + "\n".join(text)
    return ""


def _instances_parent() -> str:
    """Where instance directories go: the run's temporary directory (``scripts/test`` points it at a RAM
    disk, where Cyrus's and Courier's syncs cost nothing) when it leaves room for socket paths, else /tmp."""
    parent = tempfile.gettempdir()
    return parent if len(parent) <= 48 else "/tmp"


class SyslogSink:
    """A ``/dev/log`` listener for servers that only log to syslog, shared by all instances in a process.

    ``acquire()`` starts listening when no syslog daemon owns ``/dev/log`` (absent, or a stale socket left
    behind) and we may create it; ``release()`` by the last user removes the socket again. ``lines(tag)``
    are the received messages that contain ``tag`` (e.g. a per-instance syslog prefix).
    """

    path = "/dev/log"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._sock: socket.socket | None = None
        self._inode: int | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lines: collections.deque[str] = collections.deque(maxlen=50_000)

    @property
    def listening(self) -> bool:
        return self._sock is not None

    def acquire(self) -> bool:
        """Count one more user; return whether messages are being collected."""
        with self._lock:
            self._users += 1
            if self._sock is None and self._users == 1:
                self._listen()
            return self._sock is not None

    def release(self) -> None:
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users or self._sock is None:
                return
            self._stop.set()
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as wake:
                wake.sendto(b"", self.path)  # end the listener's recv() now
            if self._thread is not None:
                self._thread.join(timeout=patient(2))
            self._sock.close()
            self._sock = None
            with contextlib.suppress(OSError):
                if os.lstat(self.path).st_ino == self._inode:
                    os.unlink(self.path)

    def lines(self, tag: str) -> list[str]:
        return [line for line in list(self._lines) if tag in line]

    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            mode = os.lstat(self.path).st_mode
            if not stat.S_ISSOCK(mode):
                return  # e.g. a symlink to journald's socket: not ours to replace
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                probe.connect(self.path)
                return  # a syslog daemon is listening
            except OSError as exc:
                if exc.errno != errno.ECONNREFUSED:
                    return
                os.unlink(self.path)  # stale socket of a listener that died
            finally:
                probe.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(self.path)
            os.chmod(self.path, 0o666)  # servers log after dropping privileges
        except OSError:
            sock.close()
            return
        sock.settimeout(0.2)
        self._sock = sock
        self._inode = os.lstat(self.path).st_ino
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(sock,), name="syslog-sink", daemon=True)
        self._thread.start()
        atexit.register(self._remove_socket)

    def _remove_socket(self) -> None:
        with contextlib.suppress(OSError):
            if self._sock is not None and os.lstat(self.path).st_ino == self._inode:
                os.unlink(self.path)

    def _run(self, sock: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                continue
            text = data.decode("utf-8", "replace").rstrip("\n\x00")
            # "<pri>Mmm dd hh:mm:ss ident[pid]: message": keep the time, drop the priority.
            self._lines.append(re.sub(r"^<\d+>", "", text))


#: The process-wide ``/dev/log`` listener.
SYSLOG = SyslogSink()


class _NotGreeted(Exception):
    """A server's port answered with something other than a greeting (yet)."""


class _Exited(Exception):
    """A server exited while it was waited for."""


class PortTaken(RuntimeError):
    """A port given to the instance is answered by another server: the instance did not get it."""


class ImapServer:
    """A private IMAP server on loopback; see the module docstring. Use as a context manager."""

    host = "127.0.0.1"
    #: Short name used in temporary directory names and error messages.
    kind = "imap"
    #: Hierarchy separator and the prefix of the personal namespace (``"INBOX."`` or ``""``).
    separator = "/"
    personal_prefix = ""

    @property
    def greeting_mark(self) -> bytes | None:
        """Text in this instance's greeting and in no other instance's (None: the greeting is not checked).

        ``free_ports`` can only say that a port *was* free: two instances started at the same moment (a
        pytest worker each) can be handed the same one. A server that exits when it cannot listen is
        seen to fail; one that keeps running without the port (Cyrus's master) would have the other
        instance answer in its place, and a test would seed one server and read another."""
        return None

    def __init__(self, *, default_user: str = "user", password: str | None = None) -> None:
        """``password`` (default: random) is every user's password."""
        self.password = secrets.token_hex(12) if password is None else password
        self.default_user = default_user
        self._root: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._ports: tuple[int, ...] | None = None
        self._user_seq = itertools.count(1)

    # ------------------------------------------------------------------ properties

    @property
    def root(self) -> Path:
        """The instance's temporary directory (config, TLS files, sockets, logs, mail)."""
        if self._root is None:
            raise RuntimeError(f"{self.kind} instance not started")
        return self._root

    @property
    def ca_file(self) -> Path:
        """PEM of the CA that signed the server certificate (for ``localhost`` and the listen addresses)."""
        return self.root / "tls" / "ca.pem"

    @property
    def plain_port(self) -> int:
        """Plaintext IMAP port on 127.0.0.1 (STARTTLS offered, plaintext LOGIN allowed)."""
        return self._port(0)

    @property
    def tls_port(self) -> int:
        """Implicit-TLS IMAP port on 127.0.0.1."""
        return self._port(1)

    @property
    def running(self) -> bool:
        """Whether the server's main process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def _port(self, index: int) -> int:
        if self._ports is None:
            raise RuntimeError(f"{self.kind} instance not started")
        return self._ports[index]

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Create the instance directory (first time), start the server and wait until it answers."""
        if self.running:
            return
        fresh = self._root is None
        for attempt in range(1, PORT_ATTEMPTS + 1):
            atexit.register(self.stop)
            if fresh:
                self._root = Path(tempfile.mkdtemp(prefix=f"mim-{self.kind[:2]}-", dir=_instances_parent()))
                self._root.chmod(0o755)  # servers that drop privileges must traverse into it
                (self._root / "tls").mkdir()
                self._prepare()
            try:
                self._spawn()
                break
            except PortTaken:
                if not fresh or attempt == PORT_ATTEMPTS:
                    raise
                self.stop()  # a fresh instance on other ports
        if fresh:
            self._add_user(self._check_user(self.default_user))

    def stop(self) -> None:
        """Stop the server (all its processes) and delete its directory. Idempotent; a later ``start()``
        creates a fresh, empty instance."""
        self._terminate(grace=DISCARD_GRACE)
        if self._root is not None:
            remove_tree(self._root)
            self._root = None
            self._ports = None
        atexit.unregister(self.stop)

    def restart(self) -> None:
        """Stop and start the server again with the same ports, password, CA and mail data."""
        self._terminate(grace=STOP_GRACE)
        self._spawn()

    def _prepare(self) -> None:
        """Write the configuration into ``root`` (``_ports`` and the TLS files are set up by then)."""
        raise NotImplementedError

    def _spawn(self) -> None:
        """Start the server processes (``self._proc`` leads them) and return once it answers."""
        raise NotImplementedError

    def _terminate(self, grace: float = STOP_GRACE) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            terminate_group(proc, grace)

    def _pick_ports(self, *hosts: str) -> tuple[int, ...]:
        """Ports for ``plain_port``, ``tls_port`` (on ``host``) and one more per extra host."""
        self._ports = tuple(free_ports(self.host, self.host, *hosts))
        return self._ports

    def _write_tls(self, *names: str, key_first_bundle: str | None = None) -> None:
        """CA (``ca_file``) and a server certificate for ``localhost``, ``host`` and ``names``:
        ``tls/server.pem`` (chain), ``tls/server.key`` and ``tls/dh.pem``; ``key_first_bundle`` names one
        more file with key and chain together (what Courier wants)."""
        tls = self.root / "tls"
        ca = trustme.CA(organization_name="mail-imap-mcp tests")
        leaf = ca.issue_cert("localhost", self.host, *names)
        ca.cert_pem.write_to_path(str(self.ca_file))
        chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
        (tls / "server.pem").write_bytes(chain)
        secrets_files = {"server.key": leaf.private_key_pem.bytes()}
        if key_first_bundle is not None:
            secrets_files[key_first_bundle] = leaf.private_key_pem.bytes() + chain
        for name, data in secrets_files.items():
            (tls / name).touch(mode=0o600)
            (tls / name).write_bytes(data)
        (tls / "dh.pem").write_text(FFDHE2048_PEM)

    def _private_copy(self, binary: Path) -> Path:
        """A copy of ``binary`` in the instance directory: a server that drops privileges must be able to
        run it wherever the checkout (with the unpacked packages) lives, e.g. below a 0700 home."""
        target = self.root / "bin" / binary.name
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(binary, target)
        target.chmod(0o755)
        return target

    def _launch(self, argv: Sequence[str], output: Path, env: dict[str, str] | None = None) -> None:
        """Start the server's main process (``self._proc``) in a session of its own, stdout and stderr
        appended to ``output``; ``env`` replaces the environment. The server's process group ends with
        this process, however it ends (see ``LIFELINE``)."""
        lifeline = _lifeline_fd()
        with open(output, "ab") as out:
            self._proc = subprocess.Popen(
                ["/bin/sh", "-c", LIFELINE, "lifeline", *argv],
                env=env,
                stdin=lifeline,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )

    def _wait_ready(self, what: str) -> None:
        """Wait for a greeting on ``plain_port`` and a TLS handshake plus greeting on ``tls_port``."""
        context = self.client_ssl_context()

        def greeted(greeting: bytes, port: int) -> None:
            if not greeting.startswith(b"* OK"):
                raise _NotGreeted(f"unexpected greeting {greeting!r}")
            self._check_greeting(what, port, greeting)

        def ready() -> bool:
            if not self.running:
                raise _Exited(f"{what} exited with status {self._proc.returncode if self._proc else '?'}")
            with socket.create_connection((self.host, self.plain_port), timeout=patient(2.0)) as sock:
                greeted(_greeting_line(sock), self.plain_port)
            with (
                socket.create_connection((self.host, self.tls_port), timeout=patient(2.0)) as raw,
                context.wrap_socket(raw, server_hostname="localhost") as sock,
            ):
                greeted(_greeting_line(sock), self.tls_port)
            return True

        try:
            eventually(ready, within=READY_TIMEOUT, interval=0.02, retry_on=(OSError, _NotGreeted))
            return
        except (NotYet, _Exited) as failure:
            last_error, exited = str(failure), isinstance(failure, _Exited)
        self._terminate(grace=DISCARD_GRACE)
        log = self.log_tail()
        if exited and os.strerror(errno.EADDRINUSE) in log:  # start() tries fresh ports
            raise PortTaken(f"{what} could not listen on its ports ({last_error}).\n{log}")
        raise RuntimeError(f"{what} did not become ready ({last_error}).\n{log}")

    def _check_greeting(self, what: str, port: int, greeting: bytes) -> None:
        mark = self.greeting_mark
        if mark is not None and mark not in greeting:
            self._terminate(grace=DISCARD_GRACE)
            raise PortTaken(f"{what}: port {port} is answered by another server ({greeting[:200]!r})")

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's logs (for error messages)."""
        return "(no log output)"

    # ------------------------------------------------------------------ users and clients

    def _check_user(self, user: str) -> str:
        user = user.lower()
        if not USERNAME_RE.fullmatch(user):
            raise ValueError(f"invalid username {user!r}")
        return user

    def new_user(self, prefix: str = "t") -> str:
        """A fresh username (``<prefix>-<n>``) with an empty INBOX that logs in with ``password``."""
        user = self._check_user(f"{prefix}-{next(self._user_seq):03d}")
        self._add_user(user)
        return user

    def _add_user(self, user: str) -> None:
        """Make ``user`` able to log in with ``password``, with an empty INBOX (servers whose password
        database accepts any user need nothing)."""

    def delete_mailbox(self, user: str, mailbox: str, client: imapclient.IMAPClient | None = None) -> None:
        """DELETE ``user``'s ``mailbox`` as another client of the user would (on ``client`` when given),
        e.g. behind the back of a session under test."""
        if client is not None:
            client.delete_folder(mailbox)
            return
        with self.connect(user, tls=False, starttls=False) as own:
            own.delete_folder(mailbox)

    def mailbox_name(self, *parts: str) -> str:
        """The server's name for a personal folder given by its levels: ``mailbox_name("A", "b")`` is
        ``"INBOX.A.b"`` with prefix ``INBOX.`` and separator ``.``, ``"A/b"`` with ``/`` and no prefix."""
        if not parts:
            raise ValueError("no mailbox name levels")
        if len(parts) == 1 and parts[0].upper() == "INBOX":
            return "INBOX"
        return self.personal_prefix + self.separator.join(parts)

    def client_ssl_context(self) -> ssl.SSLContext:
        """An ``SSLContext`` that trusts only this instance's CA (hostname checking on)."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def connect(
        self,
        user: str | None = None,
        *,
        tls: bool = True,
        starttls: bool = True,
        password: str | None = None,
        within: float = 10.0,
    ) -> imapclient.IMAPClient:
        """A logged-in ``IMAPClient`` for ``user`` (default ``default_user``), TLS verified against the CA.

        ``tls=True`` uses ``tls_port``; ``tls=False`` uses ``plain_port`` and upgrades with STARTTLS
        unless ``starttls=False`` (plaintext LOGIN).
        """
        user = self.default_user if user is None else user
        if tls:
            client = imapclient.IMAPClient(
                self.host,
                port=self.tls_port,
                ssl=True,
                ssl_context=self.client_ssl_context(),
                timeout=patient(within),
            )
        else:
            client = imapclient.IMAPClient(
                self.host, port=self.plain_port, ssl=False, timeout=patient(within)
            )
            if starttls:
                client.starttls(self.client_ssl_context())
        try:
            client.login(user, self.password if password is None else password)
        except BaseException:
            with contextlib.suppress(Exception):
                client.shutdown()
            raise
        return client

    @staticmethod
    def ensure_mailbox(client: imapclient.IMAPClient, mailbox: str) -> None:
        """CREATE ``mailbox`` unless it exists (INBOX always does)."""
        if mailbox.upper() != "INBOX" and not client.folder_exists(mailbox):
            client.create_folder(mailbox)

    def recreate_mailbox(self, user: str, mailbox: str, *, within: float = 5.0) -> tuple[int, int]:
        """DELETE and CREATE ``mailbox`` (not INBOX) of ``user`` in a session of its own, so that other
        sessions see it empty with a new UIDVALIDITY; return ``(old, new)`` UIDVALIDITY.

        Servers that derive UIDVALIDITY from the clock (Courier) could give the same value within one
        second: the DELETE/CREATE is repeated until the value differs.
        """
        if mailbox.upper() == "INBOX":
            raise ValueError("INBOX cannot be deleted")
        with self.connect(user, tls=False, starttls=False) as client:
            old = int(client.folder_status(mailbox, [b"UIDVALIDITY"])[b"UIDVALIDITY"])

            def recreated() -> int | None:
                self.delete_mailbox(user, mailbox, client)
                client.create_folder(mailbox)
                new = int(client.folder_status(mailbox, [b"UIDVALIDITY"])[b"UIDVALIDITY"])
                return new if new != old else None

            try:
                return old, eventually(recreated, within=within, interval=0.25)
            except NotYet:
                raise RuntimeError(f"UIDVALIDITY of {mailbox!r} stays {old}") from None


class AppendSeeding(ImapServer):
    """``seed()`` over IMAP APPEND, for servers whose storage the harness leaves alone."""

    #: Messages per MULTIAPPEND command.
    append_batch = 100

    def seed(
        self,
        user: str,
        mailbox: str,
        messages: Iterable[bytes],
        *,
        flags: FlagsArg = None,
        internaldates: DatesArg = None,
    ) -> None:
        """APPEND ``messages`` to ``mailbox`` (the server's own name, see ``mailbox_name()``) of ``user``,
        creating the folder if needed; UIDs follow the order of ``messages``.

        ``flags[i]`` / ``internaldates[i]`` (or callables of the index) apply to the i-th message; a plain
        string ``flags`` (e.g. ``"\\Seen"``) applies to every message. INTERNALDATE defaults to the Date
        header (else the server's clock); naive datetimes are taken as UTC. One MULTIAPPEND per
        ``append_batch`` messages where the server offers it, else one APPEND each (over plaintext
        loopback: a handful of milliseconds per message).
        """
        items: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            item: dict[str, Any] = {"msg": message, "flags": flag_list(flag_spec(flags, index))}
            stamp = internaldate(internaldates, index)
            if stamp is None:
                stamp = header_date(message)
            if stamp is not None:
                item["date"] = _aware(stamp)
            items.append(item)
        with self.connect(user, tls=False, starttls=False, within=60.0) as client:
            # APPEND's literal goes out in several writes: without this each costs a delayed ACK (40 ms).
            client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.ensure_mailbox(client, mailbox)
            if client.has_capability("MULTIAPPEND"):
                for start in range(0, len(items), self.append_batch):
                    # imapclient returns a NO (e.g. Cyrus: "Message contains bare newlines") instead of
                    # raising, unlike append(): without this check the batch would be lost silently.
                    typ, data = client.multiappend(mailbox, items[start : start + self.append_batch])
                    if typ != "OK":
                        raise RuntimeError(f"MULTIAPPEND to {mailbox!r} answered {typ}: {data!r}")
            else:
                for item in items:
                    client.append(mailbox, item["msg"], item["flags"], item.get("date"))


def _aware(value: dt.datetime | float) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return dt.datetime.fromtimestamp(value, dt.UTC)
