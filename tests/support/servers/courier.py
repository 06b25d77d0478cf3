"""A throwaway, loopback-only Courier-IMAP 5.x server for integration tests.

Courier finds its configuration, the authentication daemon's socket and the user database at paths
compiled into its binaries (``/etc/courier/authdaemonrc``, ``/etc/courier/userdb.dat``,
``/run/courier/authdaemon/socket``). To leave the machine's own files alone and let several instances
coexist, ``Courier`` runs everything inside private mount and PID namespaces (``unshare``, so it needs
root): the instance's ``etc/`` and ``run/`` directories are bind-mounted over ``/etc/courier`` and
``/run/courier`` there, and killing ``unshare`` ends every process of the instance.

Inside, ``authdaemond`` (package ``courier-authdaemon``) authenticates against a ``userdb`` (package
``courier-authlib-userdb``): virtual users with numeric uid/gid, no system accounts. Two ``couriertcpd``
listeners start ``imaplogin``/``imapd`` from the ``courier-imap`` package unpacked by
``ensure_imap_matrix`` in scripts/_bootstrap.sh (installing it would remove Dovecot's IMAP service), with
the variables of that package's ``imapd`` and ``imapd-ssl`` files; implicit TLS goes through
``couriertls``. Mail is a Maildir per user, owned by ``nobody``.

Folders: separator ``.``, personal folders below ``INBOX.``. No SPECIAL-USE, no MULTIAPPEND, no
ESEARCH, no CONDSTORE, no LITERAL+; a failed LOGIN is answered after 5 seconds. Observed behaviour worth
knowing (Courier-IMAP 5.0):

* Only NOOP (or a new SELECT/EXAMINE) updates a session's view: mail appended by another session never
  shows in SEARCH or FETCH of a session that keeps the mailbox selected.
* A selected mailbox that another session deletes and recreates: SEARCH and FETCH keep answering with
  the old messages; NOOP then sends ``EXPUNGE`` for each and ``EXISTS 0`` (later ``EXISTS n`` for new
  mail) but never the new UIDVALIDITY, which only a new SELECT/EXAMINE shows. UIDVALIDITY comes from the
  clock, so ``recreate_mailbox()`` may take a second or two.
* A FETCH of ``BODY[HEADER.FIELDS (X)]`` is answered as ``BODY[HEADER.FIELDS ("X")]``; a message without
  ``MIME-Version`` has a text/plain BODYSTRUCTURE whatever its Content-Type says. All processes write their log
(otherwise syslog) to ``courier.log`` in the instance directory, see ``log_tail()``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import pwd
import shlex
import socket
import subprocess
import time
from pathlib import Path

from tests.support.patience import NotYet, eventually, patient
from tests.support.servers.imapserver import (
    READY_TIMEOUT,
    STOP_GRACE,
    AppendSeeding,
    ensure_imap_matrix,
    servers_dir,
    tail_file,
)

__all__ = ["Courier", "courier_files"]

AUTHDAEMOND = Path("/usr/lib/courier/courier-authlib/authdaemond")
COURIERTCPD = Path("/usr/sbin/couriertcpd")
COURIERTLS = Path("/usr/bin/couriertls")
MAKEUSERDB = Path("/usr/sbin/makeuserdb")
USERDB_MODULE = Path("/usr/lib/courier-authlib/libauthuserdb.so")
#: Private mount and PID namespaces; killing unshare kills the namespace's init and so all its processes.
UNSHARE_OPTIONS = ("unshare", "--mount", "--pid", "--fork", "--kill-child", "--propagation", "private")
#: The paths compiled into Courier, covered by the instance's directories inside its mount namespace.
ETC_COURIER = Path("/etc/courier")
RUN_COURIER = Path("/run/courier")


def courier_files() -> Path:
    """The unpacked ``courier-imap`` package, installing/unpacking what Courier needs first (as root)."""
    package = servers_dir() / "courier-imap"
    ensure_imap_matrix(
        [
            AUTHDAEMOND,
            COURIERTCPD,
            COURIERTLS,
            MAKEUSERDB,
            USERDB_MODULE,
            package / "usr" / "bin" / "imapd",
            package / "usr" / "lib" / "courier" / "courier" / "imaplogin",
        ]
    )
    return package


class Courier(AppendSeeding):
    """A private Courier-IMAP instance on loopback; see the module docstring. Use as a context manager."""

    kind = "courier"
    separator = "."
    personal_prefix = "INBOX."

    def __init__(
        self,
        *,
        default_user: str = "user",
        password: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        """Configure (but do not start) an instance; ``password`` (default: random) is every user's;
        ``extra_env`` overrides ``imapd`` settings (variables of /etc/courier/imapd, e.g.
        ``{"IMAP_CAPABILITY": "IMAP4rev1"}``)."""
        super().__init__(default_user=default_user, password=password)
        if os.geteuid() != 0:
            raise RuntimeError("the Courier test server needs root (private mount namespace)")
        self.package = courier_files()
        probe = subprocess.run([*UNSHARE_OPTIONS, "true"], capture_output=True, text=True, check=False)
        if probe.returncode != 0:
            raise RuntimeError(
                "the Courier test server needs private mount and PID namespaces (root with CAP_SYS_ADMIN; "
                f"in a container: --privileged or --cap-add SYS_ADMIN): {probe.stderr.strip()}"
            )
        self.extra_env = dict(extra_env or {})
        nobody = pwd.getpwnam("nobody")
        self.mail_uid, self.mail_gid = nobody.pw_uid, nobody.pw_gid
        # Every user has the same password; userdb takes it hashed.
        digest = base64.b64encode(hashlib.sha512(self.password.encode()).digest()).decode()
        self._password_hash = "{SHA512}" + digest

    @property
    def log_path(self) -> Path:
        """Where authdaemond, couriertcpd, couriertls and imapd write their messages."""
        return self.root / "courier.log"

    @property
    def userdb(self) -> Path:
        """The userdb source file (``makeuserdb`` compiles it to ``userdb.dat`` beside it)."""
        return self.root / "etc" / "userdb"

    # ------------------------------------------------------------------ lifecycle

    def _prepare(self) -> None:
        root = self.root
        self._pick_ports()
        self._write_tls(key_first_bundle="server-bundle.pem")
        # imaplogin runs couriertls for STARTTLS as user courier (like the package's own certificate).
        courier = pwd.getpwnam("courier")
        os.chown(root / "tls" / "server-bundle.pem", courier.pw_uid, courier.pw_gid)
        (root / "etc").mkdir()
        (root / "run" / "authdaemon").mkdir(parents=True)
        (root / "mail").mkdir()
        (root / "etc" / "authdaemonrc").write_text(
            'authmodulelist="authuserdb"\ndaemons=3\nauthdaemonvar=/run/courier/authdaemon\n'
            'DEBUG_LOGIN=0\nDEFAULTOPTIONS=""\nLOGGEROPTS=""\n'
        )
        self.userdb.touch(mode=0o600)
        self._make_userdb()
        (root / "run.sh").write_text(self._script())

    def _script(self) -> str:
        """The instance's init (PID 1 of its namespace): mounts, authdaemond and the two listeners."""
        root, package = self.root, self.package
        imaplogin = self._private_copy(package / "usr" / "lib" / "courier" / "courier" / "imaplogin")
        imapd = self._private_copy(package / "usr" / "bin" / "imapd")
        settings = {
            "TLS_CERTFILE": f"{root}/tls/server-bundle.pem",
            "TLS_DHPARAMS": f"{root}/tls/dh.pem",
            "TLS_CACHEFILE": "",
            # The system's CAs, which couriertls read on every connection (9 of its 18 ms of CPU per TLS
            # login) to check client certificates: none is asked for (the package's TLS_VERIFYPEER=NONE).
            "TLS_TRUSTCERTS": "",
            "IMAP_TLS_REQUIRED": "0",
            "IMAP_EMPTYTRASH": "",  # would purge old (seeded) messages from Trash at login
            "IMAP_ULIMITD": "",
            # imapd waits on FAM (gamin) for a folder's lock to go; gamin's server is found by an abstract
            # socket named by user and this id, one server for every instance on the host without it: one
            # instance's end broke the others' FAM connections, and SELECTs went unanswered in loaded runs.
            "GAM_CLIENT_ID": root.name,
            **self.extra_env,
        }
        tcpd = (
            f"{COURIERTCPD} -address={self.host} -maxprocs=200 -maxperip=200 -nodnslookup "
            f"-noidentlookup -stderr={self.log_path}"
        )
        login = f"{imaplogin} {imapd} Maildir"
        q = shlex.quote
        return "\n".join(
            [
                "# Generated by tests/support/servers/courier.py -- runs inside private mount and PID namespaces.",
                "set -e",
                f"mount --bind {q(str(root / 'etc'))} {ETC_COURIER}",
                f"mount --bind {q(str(root / 'run'))} {RUN_COURIER}",
                f"{AUTHDAEMOND} &",
                "set -a",
                f". {q(str(package / 'etc' / 'courier' / 'imapd'))}",
                f". {q(str(package / 'etc' / 'courier' / 'imapd-ssl'))}",
                *(f"{name}={q(value)}" for name, value in settings.items()),
                "set +a",
                f"IMAP_STARTTLS=YES {tcpd} {self.plain_port} {login} &",
                f"IMAP_TLS=1 IMAP_STARTTLS=NO {tcpd} {self.tls_port} {COURIERTLS} -server -tcpd "
                f"-user=courier {login} &",
                "wait",
                "",
            ]
        )

    def _spawn(self) -> None:
        RUN_COURIER.mkdir(parents=True, exist_ok=True)  # mount point; /run is emptied at boot
        if not ETC_COURIER.is_dir():
            raise RuntimeError(f"{ETC_COURIER} is missing: is courier-base installed?")
        self._launch(
            [*UNSHARE_OPTIONS, "/bin/sh", str(self.root / "run.sh")],
            self.log_path,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"},
        )
        socket_path = self.root / "run" / "authdaemon" / "socket"
        with contextlib.suppress(NotYet):  # _wait_ready says what went wrong
            eventually(lambda: socket_path.exists() or not self.running, within=READY_TIMEOUT, interval=0.01)
        self._wait_ready("Courier")

    def _terminate(self, grace: float = STOP_GRACE) -> None:
        """Killing ``unshare`` kills its namespace's init and so every process of the instance; wait
        until the listeners are gone (a restart reuses the ports)."""
        if self._proc is None:
            return
        super()._terminate(0)  # unshare ignores SIGTERM while it waits; nothing here needs a clean exit
        with contextlib.suppress(NotYet):
            eventually(
                lambda: not any(map(self._listens, (self.plain_port, self.tls_port))), within=5, interval=0.01
            )

    def _listens(self, port: int) -> bool:
        try:
            with socket.create_connection((self.host, port), timeout=patient(0.2)):
                return True
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of ``courier.log``."""
        if self._root is None:
            return "(not started)"
        return tail_file(self.log_path, lines) or "(no log output)"

    def lock_report(self, user: str, client_port: int | None = None) -> str:
        """What may hold ``user``'s folders: each lock file in the Maildir (Courier dot-locks a folder
        while it scans it, IMAP_USELOCKS, and a waiter takes a lock for stale only at 120 s) with its age
        and content, what each imapd of this instance waits in (its kernel wait channel), which processes
        hold the server's end of the connection from local port ``client_port`` (a stalled client's), and
        the end of ``courier.log``."""
        now = time.time()
        locks = []
        for lock in sorted((self.root / "mail" / user / "Maildir").rglob("*lock*")):
            with contextlib.suppress(OSError):  # gone meanwhile, or a directory
                content = lock.read_bytes()[:80]
                locks.append(
                    f"{lock.relative_to(self.root)}: {now - lock.stat().st_mtime:.1f} s old, {content!r}"
                )
        waits = [
            f"{pid}: {wait} ({command})"
            for pid, wait, command in _processes()
            if str(self.root) in command and "/bin/imapd" in command
        ]
        report = f"locks: {locks or 'none'}; imapd processes: {waits or 'none'}"
        if client_port is not None:
            report += f"; the server's end of port {client_port}: {_holders(client_port) or 'no process'}"
        return f"{report}; courier.log ends: {self.log_tail(15)!r}"

    # ------------------------------------------------------------------ users

    def _make_userdb(self) -> None:
        result = subprocess.run(
            [str(MAKEUSERDB), "-f", str(self.userdb)], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"makeuserdb failed: {result.stderr.strip()}")

    def _add_user(self, user: str) -> None:
        home = self.root / "mail" / user
        for sub in ("", "/Maildir", "/Maildir/cur", "/Maildir/new", "/Maildir/tmp"):
            path = Path(f"{home}{sub}")
            path.mkdir(mode=0o700)
            os.chown(path, self.mail_uid, self.mail_gid)
        fields = f"uid={self.mail_uid}|gid={self.mail_gid}|home={home}|systempw={self._password_hash}"
        with open(self.userdb, "a") as handle:
            handle.write(f"{user}\t{fields}\n")
        self._make_userdb()  # a new userdb.dat file: authdaemond notices and reopens it


def _processes() -> list[tuple[str, str, str]]:
    """Every process: its pid, kernel wait channel and command line."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):  # ended meanwhile
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found.append((stat.parent.name, (stat.parent / "wchan").read_text(), command.strip()))
    return found


def _holders(client_port: int) -> list[str]:
    """The processes (pid, wait, command) that hold the socket whose remote end is local ``client_port``."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                if int(fields[2].rsplit(":", 1)[1], 16) == client_port:
                    inodes.add(f"socket:[{fields[9]}]")
    holders = []
    for pid, wait, command in _processes():
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in inodes for fd in Path(f"/proc/{pid}/fd").iterdir()):
                holders.append(f"{pid}: {wait} ({command})")
    return holders
