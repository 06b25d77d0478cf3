"""A throwaway, loopback-only Cyrus IMAP 3.x server for integration tests.

``Cyrus`` runs Cyrus' ``master`` (from the installed ``cyrus-common``) in the foreground with a generated
``imapd.conf`` and ``cyrus.conf`` in a short temporary directory under ``/tmp``; the ``imapd`` it starts
comes from the ``cyrus-imapd`` package unpacked by ``ensure_imap_matrix`` in scripts/_bootstrap.sh
(installing that package would remove Dovecot's IMAP service). As root, master drops privileges to the
``cyrus`` user, so the instance directory belongs to ``cyrus:mail``; running as another user is not
supported.

Namespaces (a constructor option):

* default (``altnamespace=False``): separator ``.``, personal folders below ``INBOX.``
  (``mailbox_name("Archive", "2024")`` is ``"INBOX.Archive.2024"``);
* ``altnamespace=True`` (Cyrus' ``altnamespace`` + ``unixhierarchysep``): separator ``/``, folders beside
  INBOX (``"Archive/2024"``).

Users are SASL accounts in the instance's own sasldb (``saslpasswd2``); a user's first login creates its
INBOX and, unless ``special_use=False``, ``Drafts``, ``Sent``, ``Trash`` and ``Junk`` with their special-use
attributes (Cyrus reports them in lower case: ``\\drafts``). ``new_user()`` logs in once, so all of that
exists when it returns. The administrator ``admin`` (same password) sees every user's folders.

Observed behaviour worth knowing (Cyrus 3.6, default ``delete_mode: delayed``):

* New mail appended by another session is announced (``EXISTS``/``RECENT``) with the response to any
  command of a session that keeps the mailbox selected, SEARCH and FETCH included.
* A selected mailbox that another session deletes and recreates: the next SEARCH sends ``EXPUNGE`` for
  every message and finds nothing, FETCH answers ``NO Mailbox does not exist``, NOOP shows nothing; only a
  new SELECT/EXAMINE reveals the new UIDVALIDITY. With ``delete_mode: immediate`` (``extra_config``)
  Cyrus instead ends the sessions that have the deleted mailbox selected.
* APPEND replaces 8-bit bytes in headers with ``X`` and rejects messages with NUL bytes.

Cyrus logs only to syslog: ``log_tail()`` shows what ``SyslogSink`` collected on ``/dev/log`` (when no
syslog daemon owns it) for this instance's ``syslog_prefix``, plus master's stdout/stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import subprocess
from pathlib import Path

from tests.support.servers.imapserver import (
    STOP_GRACE,
    SYSLOG,
    AppendSeeding,
    ensure_imap_matrix,
    servers_dir,
    tail_file,
    which,
)

__all__ = ["Cyrus", "cyrus_binaries"]

MASTER = Path("/usr/lib/cyrus/bin/master")
CTL_MBOXLIST = Path("/usr/lib/cyrus/bin/ctl_mboxlist")
SPECIAL_FOLDERS = ("Drafts", "Sent", "Trash", "Junk")
#: The C source of the ``rand()`` every process of an instance gets (see :func:`rand_library`).
RAND_SOURCE = Path(__file__).with_name("cyrus_rand.c")
C_COMPILER = Path("/usr/bin/cc")


def cyrus_binaries() -> tuple[Path, Path, Path]:
    """``(master, imapd, saslpasswd2)``, installing/unpacking them first if needed (as root)."""
    imapd = servers_dir() / "cyrus-imapd" / "usr" / "lib" / "cyrus" / "bin" / "imapd"
    saslpasswd2 = Path(which("saslpasswd2") or "/usr/sbin/saslpasswd2")
    ensure_imap_matrix([MASTER, imapd, saslpasswd2])
    return MASTER, imapd, saslpasswd2


def rand_library() -> Path:
    """The shared library that gives every Cyrus process its own ``rand()`` (preloaded into master and
    the imapd it starts), compiled once per version of :data:`RAND_SOURCE` into ``servers_dir()``.

    Cyrus 3.6 as Debian builds it names a new mailbox with 24 characters of ``rand()``, which no imapd
    seeds: each process draws the same sequence, so mailboxes created by two processes (the seeding
    connection and the server under test, or a fresh spare process) get the same id, about one in ten
    instances. Mailboxes sharing an id share their files (a mailbox seeded with two messages is found
    empty, UIDNEXT 1) and their annotations (a plain mailbox is refused DELETE with "SPECIAL-USE flag
    conflict"). ``tests/integration/harness/test_matrix_harness.py`` pins it.
    """
    source = RAND_SOURCE.read_bytes()
    library = servers_dir() / "cyrus-rand" / f"rand-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if library.exists():
        return library
    ensure_imap_matrix([C_COMPILER])
    library.parent.mkdir(parents=True, exist_ok=True)
    # Workers may build it at the same moment: each into a file of its own, renamed into place.
    partial = library.with_name(f"{library.name}.{os.getpid()}")
    subprocess.run(
        [str(C_COMPILER), "-shared", "-fPIC", "-O2", "-o", str(partial), str(RAND_SOURCE)],
        check=True,
        capture_output=True,
    )
    os.replace(partial, library)
    return library


class Cyrus(AppendSeeding):
    """A private Cyrus instance on loopback; see the module docstring. Use as a context manager."""

    kind = "cyrus"
    admin = "mimadmin"

    def __init__(
        self,
        *,
        altnamespace: bool = False,
        special_use: bool = True,
        default_user: str = "user",
        password: str | None = None,
        extra_config: str = "",
    ) -> None:
        """Configure (but do not start) an instance.

        ``altnamespace`` selects the namespace (see the module docstring); ``special_use=False`` leaves a
        new user with INBOX only; ``password`` (default: random) is every user's; ``extra_config`` is
        appended verbatim to ``imapd.conf``.
        """
        super().__init__(default_user=default_user, password=password)
        if os.geteuid() != 0:
            raise RuntimeError("the Cyrus test server needs root (its processes run as the cyrus user)")
        self.altnamespace = altnamespace
        self.separator = "/" if altnamespace else "."
        self.personal_prefix = "" if altnamespace else "INBOX."
        self.special_folders = SPECIAL_FOLDERS if special_use else ()
        self.extra_config = extra_config
        self.master_binary, self.imapd_binary, self.saslpasswd2 = cyrus_binaries()
        cyrus = pwd.getpwnam("cyrus")
        self.cyrus_uid, self.cyrus_gid = cyrus.pw_uid, cyrus.pw_gid
        self._syslog = False

    @property
    def conf_path(self) -> Path:
        """The generated ``imapd.conf``."""
        return self.root / "imapd.conf"

    @property
    def tag(self) -> str:
        """The instance's ``syslog_prefix`` and ``servername`` (its directory name)."""
        return self.root.name

    @property
    def greeting_mark(self) -> bytes:
        """The instance's ``servername``, which Cyrus names in its greeting: its master keeps running when
        it cannot listen on a port, so another instance could answer there instead."""
        return f" {self.tag} ".encode()

    # ------------------------------------------------------------------ lifecycle

    def _prepare(self) -> None:
        root = self.root
        plain, tls = self._pick_ports()
        self._write_tls()
        imapd = self._private_copy(self.imapd_binary)
        self._private_copy(rand_library())
        for sub in ("conf/db", "conf/socket", "conf/proc", "conf/lock", "spool"):
            (root / sub).mkdir(parents=True)
        self.conf_path.write_text(self._imapd_conf())
        (root / "cyrus.conf").write_text(
            "START {\n"
            f'  recover cmd="ctl_cyrusdb -r -C {self.conf_path}"\n'
            "}\nSERVICES {\n"
            f'  imap cmd="{imapd} -C {self.conf_path}" listen="{self.host}:{plain}" prefork=1\n'
            f'  imaps cmd="{imapd} -s -C {self.conf_path}" listen="{self.host}:{tls}" prefork=1\n'
            "}\nEVENTS {\n}\n"
        )
        self._set_password(self.admin)
        for path in [root, *root.rglob("*")]:
            os.chown(path, self.cyrus_uid, self.cyrus_gid, follow_symlinks=False)

    def _imapd_conf(self) -> str:
        root = self.root
        yes_no = "yes" if self.altnamespace else "no"
        folders = " | ".join(self.special_folders)
        specials = "".join(f"xlist-{name.lower()}: {name}\n" for name in self.special_folders)
        autocreate = (
            f"autocreate_inbox_folders: {folders}\nautocreate_subscribe_folders: {folders}\n{specials}"
            if folders
            else ""
        )
        return f"""\
# Generated by tests/support/servers/cyrus.py -- throwaway test instance, loopback only.
configdirectory: {root}/conf
partition-default: {root}/spool
proc_path: {root}/conf/proc
mboxname_lockpath: {root}/conf/lock
lmtpsocket: {root}/conf/socket/lmtp
idlesocket: {root}/conf/socket/idle
notifysocket: {root}/conf/socket/notify
servername: {self.tag}
syslog_prefix: {self.tag}
admins: {self.admin}
allowplaintext: yes
sasl_pwcheck_method: auxprop
sasl_auxprop_plugin: sasldb
sasl_sasldb_path: {root}/conf/sasldb2
sasl_mech_list: PLAIN LOGIN
failedloginpause: 0
tls_server_cert: {root}/tls/server.pem
tls_server_key: {root}/tls/server.key
tls_versions: tls1_2 tls1_3
altnamespace: {yes_no}
unixhierarchysep: {yes_no}
autocreate_quota: 0
{autocreate}imapidlepoll: 1
{self.extra_config}
"""

    def _spawn(self) -> None:
        root = self.root
        (root / "conf" / "master.pid").unlink(missing_ok=True)
        if not self._syslog:
            self._syslog = True
            SYSLOG.acquire()
        conf = root / "conf"
        # master stays in the foreground (no -d); its stdout/stderr go to master.log.
        argv = [
            self.master_binary,
            "-C",
            self.conf_path,
            "-M",
            root / "cyrus.conf",
            "-p",
            conf / "master.pid",
        ]
        self._launch(
            [str(arg) for arg in argv],
            conf / "master.log",
            env={
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                "CYRUS_SYSLOG_PREFIX": self.tag,
                "LD_PRELOAD": str(self.root / "bin" / rand_library().name),
            },
        )
        self._wait_ready("Cyrus master")

    def _terminate(self, grace: float = STOP_GRACE) -> None:
        super()._terminate(grace)
        if self._syslog:
            self._syslog = False
            SYSLOG.release()

    def log_tail(self, lines: int = 40) -> str:
        """This instance's syslog messages (when ``/dev/log`` is ours) and master's own output."""
        if self._root is None:
            return "(not started)"
        chunks = []
        if SYSLOG.listening:
            logged = SYSLOG.lines(f" {self.tag}/")[-lines:]
            chunks.append("--- syslog ---\n" + ("\n".join(logged) or "(nothing)"))
        else:
            chunks.append("(Cyrus logs to syslog, and /dev/log belongs to a syslog daemon)")
        chunks.append(tail_file(self.root / "conf" / "master.log", lines))
        return "\n".join(chunk for chunk in chunks if chunk)

    # ------------------------------------------------------------------ users

    def _set_password(self, user: str) -> None:
        sasldb = self.root / "conf" / "sasldb2"
        result = subprocess.run(
            # The realm is the servername.
            [str(self.saslpasswd2), "-p", "-c", "-f", str(sasldb), "-u", self.tag, user],
            input=self.password,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"saslpasswd2 {user} failed: {result.stderr.strip()}")
        os.chown(sasldb, self.cyrus_uid, self.cyrus_gid)

    def _add_user(self, user: str) -> None:
        self._set_password(user)
        # The first login creates INBOX and the special-use folders.
        with self.connect(user, tls=False, starttls=False):
            pass

    def new_users_together(self, count: int, prefix: str = "t") -> list[str]:
        """``count`` fresh users whose first logins (which create their mailboxes) happen at once, each on
        a connection, and so an imapd process, of its own (implicit TLS and plain in turn)."""
        users = [self._check_user(f"{prefix}-{next(self._user_seq):03d}") for _ in range(count)]
        for user in users:
            self._set_password(user)
        clients = [self.connect(user, tls=n % 2 == 0, starttls=False) for n, user in enumerate(users)]
        for client in clients:
            client.logout()
        return users

    def mailbox_ids(self, user: str | None = None) -> dict[str, str]:
        """Cyrus's unique id of each mailbox of ``user`` (default: of every user), by internal name (e.g.
        ``user.t-001.Box``), read from the mailbox list with ``ctl_mboxlist``."""
        dump = subprocess.run(
            [str(CTL_MBOXLIST), "-C", str(self.conf_path), "-d"],
            capture_output=True,
            text=True,
            check=True,
            user=self.cyrus_uid,
        ).stdout
        entries: dict[str, dict[str, object]] = json.loads(dump)
        own = f"user.{user}"  # internal names always use "."
        return {
            name: str(entry["uniqueid"])
            for name, entry in entries.items()
            if user is None or name == own or name.startswith(own + ".")
        }

    def delete_as_admin(self, user: str, mailbox: str) -> None:
        """Delete ``user``'s ``mailbox`` (named as the user sees it) as the administrator, who may delete
        what the user may not (a mailbox with a special use)."""
        name = self.separator.join(("user", user, mailbox.removeprefix(self.personal_prefix)))
        with self.connect(self.admin) as client:
            client.setacl(name, self.admin, "lrx")  # an administrator may grant itself any right
            client.delete_folder(name)
