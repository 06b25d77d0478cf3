"""A throwaway, loopback-only Dovecot IMAP server for integration tests.

``Dovecot`` runs ``dovecot -F -c <generated config>`` as a child process in its own session, with all
configuration, TLS material, sockets, logs and mail kept in one short temporary directory under ``/tmp``
(unix socket paths are limited to 108 bytes, so deep pytest ``tmp_path`` directories are unusable).

What an instance offers:

* ``tls_port`` (implicit TLS, "imaps") and ``plain_port`` (plaintext, STARTTLS available) on ``127.0.0.1``;
  optionally ``strict_port`` on ``127.0.0.2`` where plaintext authentication is refused until STARTTLS
  (Dovecot treats a connection whose local and remote addresses are equal as secure, so only a second
  loopback address can exercise "STARTTLS required"; connect to it from the default source ``127.0.0.1``).
* A certificate authority made at start with ``trustme``; ``ca_file`` is its PEM for client verification.
* Any username matching ``user_patterns`` logs in with the per-instance random ``password``; each user gets
  a fresh, empty Maildir under ``<root>/mail/<user>``. ``new_user()`` hands out unique names.
* ``seed()`` writes Maildir files directly (orders of magnitude faster than APPEND), with flags, keywords
  and INTERNALDATE, before the first SELECT of the folder.
* ``doveadm()`` / ``kick()`` / ``set_uidvalidity()`` for server-side fault and state manipulation, and
  ``restart()`` which keeps ports, password and data.
* Optionally (``oauth2_introspection_url``) OAuth2 login: SASL ``XOAUTH2`` / ``OAUTHBEARER`` checked by
  Dovecot's ``oauth2`` passdb against a token introspection endpoint (tests/support/servers/oauth2.py).

Folder names: the IMAP hierarchy separator is ``/``; on disk Dovecot's Maildir++ layout uses ``.`` and the
``listescape`` plugin is enabled, so names containing ``.``, ``~`` or ``\\`` work too. ``:`` needs nothing.

Running as root (what CI does) the server drops privileges to ``nobody``/``nogroup``; running as an
ordinary user everything runs as that user.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fnmatch
import grp
import itertools
import os
import pwd
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from imapclient import imap_utf7

from tests.support.patience import eventually, patient
from tests.support.servers.imapserver import (
    FFDHE2048_PEM,
    FlagSpec,
    ImapServer,
    header_date,
    remove_tree,
    which,
)

__all__ = [
    "FFDHE2048_PEM",
    "Dovecot",
    "FlagSpec",
    "ensure_dovecot",
    "maildir_folder_name",
]

_SYSTEM_FLAG_LETTERS = {
    "\\draft": "D",
    "\\flagged": "F",
    "\\answered": "R",
    "\\seen": "S",
    "\\deleted": "T",
}
_USERNAME_RE = re.compile(r"[a-z0-9][a-z0-9._@-]*")
_LISTESCAPE_CHAR = "\\"
#: The IMAP service of dovecot-imapd; dovecot-core (which has the `dovecot` binary) can be there without it.
DOVECOT_IMAP_SERVICE = "/usr/lib/dovecot/imap"
#: ``extra_config`` of a Dovecot with ACLs (a folder's ``dovecot-acl`` file), so that a folder's
#: PERMANENTFLAGS can lack ``\\*``.
ACL_CONFIG = """
mail_plugins = $mail_plugins acl
protocol imap {
  mail_plugins = $mail_plugins imap_acl
}
plugin {
  acl = vfile
}
"""


def ensure_dovecot() -> str:
    """Return the path of the ``dovecot`` binary, installing ``dovecot-imapd`` if possible.

    Installation happens only as root on Debian/Ubuntu (``apt-get``); otherwise a ``RuntimeError`` names
    the packages to install. Services are kept from auto-starting during the install.
    """
    found = which("dovecot")
    if found and which("doveadm") and Path(DOVECOT_IMAP_SERVICE).is_file():
        return found
    apt = shutil.which("apt-get")
    if os.geteuid() != 0 or apt is None or not Path("/etc/debian_version").exists():
        raise RuntimeError(
            "Dovecot is required for these tests: install the 'dovecot-imapd' package "
            "(Debian/Ubuntu: `sudo apt-get install -y dovecot-imapd`; it pulls in dovecot-core, "
            "which provides the `dovecot` and `doveadm` binaries)."
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    policy = Path("/usr/sbin/policy-rc.d")
    added_policy = False
    if not policy.exists():
        # Keep the package's system-wide dovecot service (listening on all interfaces) from starting.
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        added_policy = True
    try:
        subprocess.run([apt, "update"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(
            [apt, "install", "-y", "dovecot-imapd"], env=env, check=True, stdout=subprocess.DEVNULL
        )
    finally:
        if added_policy:
            policy.unlink(missing_ok=True)
    found = which("dovecot")
    if not found:
        raise RuntimeError("apt-get installed dovecot-imapd but no `dovecot` binary was found")
    return found


def maildir_folder_name(mailbox: str) -> str:
    """Map an IMAP mailbox name (separator ``/``) to its Maildir++ directory name (``""`` for INBOX).

    Each level is encoded in modified UTF-7, then ``.``, ``~`` (leading) and ``\\`` are escaped the way
    Dovecot's ``listescape`` plugin does (``\\2e``), and the levels are joined with ``.``:
    ``"Archiv/2024.Q1"`` -> ``".Archiv.2024\\2eQ1"``, ``"Entwürfe"`` -> ``".Entw&APw-rfe"``.
    """
    if mailbox.upper() == "INBOX":
        return ""
    parts = mailbox.split("/")
    if any(not part for part in parts):
        raise ValueError(f"invalid mailbox name {mailbox!r}: empty hierarchy level")
    if parts[0].upper() == "INBOX":
        parts[0] = "INBOX"
    encoded: list[str] = []
    for part in parts:
        text = imap_utf7.encode(part).decode("ascii")
        out = []
        for pos, char in enumerate(text):
            if char in "." + _LISTESCAPE_CHAR or (char == "~" and pos == 0):
                out.append(f"{_LISTESCAPE_CHAR}{ord(char):02x}")
            else:
                out.append(char)
        encoded.append("".join(out))
    return "." + ".".join(encoded)


def _flag_letters(spec: FlagSpec, keywords: dict[str, int]) -> str:
    """Maildir info letters (ASCII-sorted) for one message; new keywords are added to ``keywords``."""
    flags = spec.split() if isinstance(spec, str) else list(spec)
    letters: set[str] = set()
    for flag in flags:
        if flag.startswith("\\"):
            letter = _SYSTEM_FLAG_LETTERS.get(flag.lower())
            if letter is None:
                raise ValueError(f"cannot seed system flag {flag!r}")
            letters.add(letter)
            continue
        if not flag or any(c in flag for c in ' ()[]{}%*"\\') or not flag.isascii():
            raise ValueError(f"invalid keyword {flag!r}")
        index = keywords.get(flag)
        if index is None:
            index = max(keywords.values(), default=-1) + 1
            if index >= 26:
                raise ValueError("Maildir supports at most 26 keywords per folder")
            keywords[flag] = index
        letters.add(chr(ord("a") + index))
    return "".join(sorted(letters))


def _to_ns(value: dt.datetime | float) -> int:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1_000_000_000)
    return int(value * 1_000_000_000)


class Dovecot(ImapServer):
    """A private Dovecot instance on loopback; see the module docstring. Use as a context manager."""

    kind = "dovecot"
    strict_host = "127.0.0.2"

    def __init__(
        self,
        *,
        strict_listener: bool = False,
        user_patterns: Sequence[str] = ("u*", "t*"),
        default_user: str = "user",
        max_userip_connections: int = 100,
        capabilities: str | None = None,
        extra_config: str = "",
        password: str | None = None,
        oauth2_introspection_url: str | None = None,
        oauth2_introspection_mode: str = "post",
        oauth2_mechanisms: Sequence[str] = ("xoauth2", "oauthbearer"),
        oauth2_master: bool = False,
    ) -> None:
        """Configure (but do not start) an instance.

        ``strict_listener`` adds ``strict_port`` on 127.0.0.2 with ``disable_plaintext_auth = yes``.
        ``user_patterns`` are Dovecot wildcards for accepted usernames (Dovecot lowercases usernames).
        ``capabilities`` replaces what the server advertises (Dovecot's ``imap_capability``), e.g.
        ``"IMAP4rev1"`` for a server with no extensions: after login CAPABILITY lists exactly these
        (Dovecot then adds not even ``LITERAL+``); before login Dovecot appends ``STARTTLS`` (plaintext
        ports), ``LOGINDISABLED`` (where plaintext login is refused) and ``AUTH=PLAIN AUTH=LOGIN``.
        Dovecot still accepts unadvertised commands, so only a wire recording shows what a client used.
        ``extra_config`` is appended verbatim to the generated ``dovecot.conf``. ``password`` (default:
        random) is every user's password.

        ``oauth2_introspection_url`` adds Dovecot's ``oauth2`` passdb: the SASL mechanisms
        ``oauth2_mechanisms`` (advertised as ``AUTH=XOAUTH2``/``AUTH=OAUTHBEARER``) log a user in with an
        access token that the URL (e.g. tests/support/servers/oauth2.py) says is active for that user;
        ``oauth2_introspection_mode`` is ``post`` (form field ``token``) or ``get`` (the token appended to
        the URL). Passwords then work only with PLAIN and LOGIN. ``oauth2_master`` makes that passdb a
        master passdb: ``<user>*<application>`` logs in to ``<user>``'s mailbox with a token the URL says
        is active for ``<application>`` (an application's own token, as Microsoft 365 lets an app an
        admin allowed open mailboxes).
        """
        if not user_patterns:
            raise ValueError("user_patterns must not be empty")
        super().__init__(default_user=default_user, password=password)
        self.user_patterns = tuple(user_patterns)
        self.default_user = self._check_user(default_user)
        self.strict_listener = strict_listener
        self.max_userip_connections = max_userip_connections
        if capabilities is not None and (not capabilities.strip() or not capabilities.isprintable()):
            raise ValueError(f"invalid capabilities {capabilities!r}")
        self.capabilities = capabilities
        self.extra_config = extra_config
        if oauth2_introspection_mode not in {"post", "get"}:
            raise ValueError(f"invalid oauth2_introspection_mode {oauth2_introspection_mode!r}")
        if any(mech not in {"xoauth2", "oauthbearer"} for mech in oauth2_mechanisms):
            raise ValueError(f"invalid oauth2_mechanisms {oauth2_mechanisms!r}")
        self.oauth2_introspection_url = oauth2_introspection_url
        self.oauth2_introspection_mode = oauth2_introspection_mode
        self.oauth2_mechanisms = tuple(oauth2_mechanisms)
        self.oauth2_master = oauth2_master
        self.binary = ensure_dovecot()
        self.doveadm_binary = which("doveadm") or "doveadm"
        self._file_seq = itertools.count(1)
        self._name_ts = int(time.time())
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            self.mail_uid, self.mail_gid = nobody.pw_uid, nobody.pw_gid
            self._run_user = "nobody"
        else:
            self.mail_uid, self.mail_gid = os.geteuid(), os.getegid()
            self._run_user = pwd.getpwuid(self.mail_uid).pw_name
        self._run_group = grp.getgrgid(self.mail_gid).gr_name

    # ------------------------------------------------------------------ properties

    @property
    def conf_path(self) -> Path:
        """The generated ``dovecot.conf``."""
        return self.root / "dovecot.conf"

    @property
    def log_path(self) -> Path:
        """Dovecot's log file (all services)."""
        return self.root / "dovecot.log"

    @property
    def strict_port(self) -> int:
        """Plaintext port on 127.0.0.2 where login requires STARTTLS (needs ``strict_listener=True``)."""
        if not self.strict_listener:
            raise RuntimeError("instance was created without strict_listener=True")
        return self._port(2)

    # ------------------------------------------------------------------ lifecycle

    def _prepare(self) -> None:
        root = self.root
        for sub in ("run", "state"):
            (root / sub).mkdir()
        mail = root / "mail"
        mail.mkdir(mode=0o700)
        os.chown(mail, self.mail_uid, self.mail_gid)
        self._pick_ports(*([self.strict_host] if self.strict_listener else []))
        self._write_tls(self.strict_host)
        (root / "no-users.passwd").touch(mode=0o644)
        if self.oauth2_introspection_url is not None:
            url = self.oauth2_introspection_url
            if self.oauth2_introspection_mode == "get":
                url += "?token="  # Dovecot appends the token (and "&client_id=...")
            (root / "oauth2.conf.ext").write_text(
                f"introspection_mode = {self.oauth2_introspection_mode}\n"
                f"introspection_url = {url}\n"
                "force_introspection = yes\n"
                "username_attribute = username\n"
                "active_attribute = active\n"
                "active_value = true\n"
                "scope = mail\n"
            )
        self.conf_path.write_text(self._config())

    def _config(self) -> str:
        root = self.root
        is_root = os.geteuid() == 0
        chroot = "" if is_root else "  chroot =\n"
        strict = ""
        if self.strict_listener:
            strict = (
                f"  inet_listener imap_strict {{\n    address = {self.strict_host}\n"
                f"    port = {self.strict_port}\n  }}\n"
            )
        capability = f"imap_capability = {self.capabilities}\n" if self.capabilities else ""
        mechanisms, password_only, oauth2_passdb = "plain login", "", ""
        if self.oauth2_introspection_url is not None:
            oauth2 = " ".join(self.oauth2_mechanisms)
            mechanisms += " " + oauth2
            # Otherwise the static passdb would compare the token with the password and refuse it.
            password_only = "  mechanisms = plain login\n"
            master = "  master = yes\n" if self.oauth2_master else ""
            oauth2_passdb = (
                ("auth_master_user_separator = *\n" if self.oauth2_master else "")
                + f"passdb {{\n  driver = oauth2\n  mechanisms = {oauth2}\n  args = {root}/oauth2.conf.ext\n"
                + f"{master}}}\n"
            )
        specials = "".join(
            f"  mailbox {name} {{\n    special_use = \\{use}\n  }}\n"
            for name, use in (
                ("Drafts", "Drafts"),
                ("Sent", "Sent"),
                ("Trash", "Trash"),
                ("Junk", "Junk"),
                ("Archive", "Archive"),
            )
        )
        return f"""\
# Generated by tests/support/servers/dovecot.py -- throwaway test instance, loopback only.
instance_name = {root.name}
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
info_log_path = {root}/dovecot.log
protocols = imap
listen = {self.host}
shutdown_clients = yes

default_internal_user = {self._run_user}
default_internal_group = {self._run_group}
default_login_user = {self._run_user}
first_valid_uid = 1
first_valid_gid = 1
mail_uid = {self.mail_uid}
mail_gid = {self.mail_gid}
default_process_limit = 256

ssl = yes
ssl_cert = <{root}/tls/server.pem
ssl_key = <{root}/tls/server.key
ssl_dh = <{root}/tls/dh.pem
ssl_min_protocol = TLSv1.2

disable_plaintext_auth = no
auth_mechanisms = {mechanisms}
auth_failure_delay = 0
auth_verbose = yes
{capability}
passdb {{
  driver = static
  args = password={self.password}
  username_filter = {" ".join(self.user_patterns)}
{password_only}}}
# Everyone else is an unknown user (an empty passwd-file), i.e. a normal authentication failure.
passdb {{
  driver = passwd-file
  args = {root}/no-users.passwd
{password_only}}}
{oauth2_passdb}userdb {{
  driver = static
  args = uid={self.mail_uid} gid={self.mail_gid} home={root}/mail/%u
}}

# No process reports to the stats service (no test reads Dovecot's metrics): each login's login,
# auth and imap processes cost the stats process about a tenth of what serving the login costs.
stats_writer_socket_path =
mail_location = maildir:~/Maildir
mail_fsync = never
mail_plugins = $mail_plugins listescape
namespace inbox {{
  inbox = yes
  separator = /
{specials}}}

protocol imap {{
  mail_max_userip_connections = {self.max_userip_connections}
}}

service anvil {{
{chroot}  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
# The login process serves one connection after another (one kept ready) instead of one process per
# connection: that cost Dovecot about 22 ms of CPU per login, this about 12, and nearly every test logs
# in. IMAP behaves the same; the imap processes stay one per session, so that `doveadm kick` ends a
# session as it does on a real server (reused, one once outlived a kick in a loaded run).
service imap-login {{
{chroot}  inet_listener imap {{
    address = {self.host}
    port = {self.plain_port}
  }}
  inet_listener imaps {{
    address = {self.host}
    port = {self.tls_port}
    ssl = yes
  }}
  service_count = 0
  process_min_avail = 1
{strict}}}

local {self.strict_host} {{
  disable_plaintext_auth = yes
}}
{self.extra_config}
"""

    def _serving(self, config: str, *protocols: str) -> str:
        """``config`` (this class's) serving ``protocols`` beside IMAP. With ``lmtp``, every user of
        ``user_patterns`` is one: LMTP looks recipients up in the userdb alone, and with an oauth2 passdb
        the static userdb cannot ask the passdb whether a user exists."""
        config = config.replace("protocols = imap\n", f"protocols = imap {' '.join(protocols)}\n")
        if "lmtp" in protocols:
            home = f"home={self.root}/mail/%u"
            config = config.replace(f"{home}\n", f"{home} allow_all_users=yes\n")
        return config

    def _spawn(self) -> None:
        root = self.root
        (root / "run" / "master.pid").unlink(missing_ok=True)
        self._launch([self.binary, "-F", "-c", str(self.conf_path)], root / "dovecot.stdout")
        self._wait_ready("Dovecot")

    # ------------------------------------------------------------------ users and clients

    def _check_user(self, user: str) -> str:
        user = user.lower()
        if not _USERNAME_RE.fullmatch(user):
            raise ValueError(f"invalid username {user!r}")
        if not any(fnmatch.fnmatchcase(user, pattern) for pattern in self.user_patterns):
            raise ValueError(f"username {user!r} matches none of {self.user_patterns}")
        return user

    def new_user(self, prefix: str = "t") -> str:
        """A fresh username (``<prefix>-<n>``) with an empty mailbox; it must match ``user_patterns``."""
        return super().new_user(prefix)

    # ------------------------------------------------------------------ server-side control

    def doveadm(
        self, *args: str, check: bool = True, within: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run ``doveadm -c <conf> <args>``; with ``check`` a non-zero exit raises ``RuntimeError``."""
        result = subprocess.run(
            [self.doveadm_binary, "-c", str(self.conf_path), *args],
            capture_output=True,
            text=True,
            timeout=patient(within),
            check=False,
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"doveadm {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}\n"
                f"{self.log_tail(20)}"
            )
        return result

    def remove_user(self, user: str) -> None:
        """End ``user``'s sessions and delete all of its mail. For a test whose mail is large (100,000
        messages): removed when the test ends, it is not left for the run's last teardown."""
        self.doveadm("kick", user.lower(), check=False)  # exits 68 when it had no session to end
        home = self.root / "mail" / self._check_user(user)
        remove_tree(home)
        if home.exists():  # remove_tree goes on past errors; a user left behind must not pass unseen
            raise RuntimeError(f"could not delete {home}")

    def kick(self, user: str, within: float = 10.0) -> None:
        """Disconnect all IMAP sessions of ``user`` (clients see EOF), returning once Dovecot lists none
        of them: ``doveadm kick`` only signals a session, which may still answer a command sent before
        it ends (a test's next call then ran on the old connection, never logging in again)."""
        self.doveadm("kick", user.lower())
        eventually(
            lambda: user.lower() not in self.doveadm("who", "-1", user.lower()).stdout.split(),
            within=within,
            interval=0.02,
            what=f"the end of the sessions of {user} after the kick",
        )

    def set_uidvalidity(self, user: str, mailbox: str, value: int) -> None:
        """Change UIDVALIDITY of an existing mailbox (works for INBOX; selecting clients get dropped)."""
        self.doveadm("mailbox", "update", "-u", user.lower(), "--uid-validity", str(value), mailbox)

    def log_tail(self, lines: int = 40) -> str:
        """Last ``lines`` lines of the Dovecot log and of its stdout/stderr (for error messages)."""
        chunks = []
        for path in (self.log_path, self.root / "dovecot.stdout") if self._root else ():
            with contextlib.suppress(OSError):
                text = path.read_text(errors="replace").splitlines()[-lines:]
                if text:
                    chunks.append(f"--- {path.name} ---\n" + "\n".join(text))
        return "\n".join(chunks) or "(no log output)"

    # ------------------------------------------------------------------ seeding

    def maildir(self, user: str) -> Path:
        """The user's Maildir root (INBOX); it may not exist yet."""
        return self.root / "mail" / self._check_user(user) / "Maildir"

    def _mkdir_owned(self, path: Path) -> None:
        """``mkdir -p`` below ``<root>/mail``, giving new directories to the mail user."""
        if path.is_dir():
            return
        mail_root = self.root / "mail"
        missing = []
        current = path
        while not current.is_dir():
            if current == mail_root or mail_root not in current.parents:
                raise ValueError(f"{path} is outside {mail_root}")
            missing.append(current)
            current = current.parent
        for directory in reversed(missing):
            with contextlib.suppress(FileExistsError):
                directory.mkdir(mode=0o700)
            self._chown(directory)

    def _chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            os.chown(path, self.mail_uid, self.mail_gid)

    def folder_path(self, user: str, mailbox: str) -> Path:
        """Directory of ``mailbox`` (IMAP name, ``/`` separated) in the user's Maildir."""
        return self.maildir(user) / maildir_folder_name(mailbox)

    def ensure_folder(self, user: str, mailbox: str) -> Path:
        """Create ``mailbox`` on disk (with ``cur``/``new``/``tmp`` and ``maildirfolder``); return its path."""
        folder = self.folder_path(user, mailbox)
        for sub in ("cur", "new", "tmp"):
            self._mkdir_owned(folder / sub)
        if folder != self.maildir(user):
            marker = folder / "maildirfolder"
            if not marker.exists():
                marker.touch(mode=0o600)
                self._chown(marker)
        return folder

    def seed(
        self,
        user: str,
        mailbox: str,
        messages: Iterable[bytes],
        *,
        flags: str | Sequence[FlagSpec] | Callable[[int], FlagSpec] | None = None,
        internaldates: Sequence[dt.datetime | float] | Callable[[int], dt.datetime | float] | None = None,
    ) -> None:
        """Write ``messages`` into ``mailbox`` of ``user`` as Maildir files, creating the folder if needed.

        Preferably call this before any session SELECTs the folder: UIDs are then assigned in
        ``messages`` order (seeding an already indexed folder works too; new messages get new UIDs).
        ``flags[i]`` / ``internaldates[i]`` (or callables of the index) apply to the i-th message; a
        plain string ``flags`` (e.g. ``"\\Seen"``) applies to every message.
        INTERNALDATE defaults to the Date header (else now); naive datetimes are taken as UTC.
        Messages are stored byte-for-byte (CRLF or LF line endings both work).
        """
        folder = self.ensure_folder(user, mailbox)
        cur = str(folder / "cur")
        keywords_path = folder / "dovecot-keywords"
        keywords = self._read_keywords(keywords_path)
        known_keywords = len(keywords)
        is_root = os.geteuid() == 0
        uid, gid = self.mail_uid, self.mail_gid
        now_ns = time.time_ns()
        open_flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        prefix = f"{cur}/{self._name_ts}."
        letters_cache: dict[str, str] = {}
        for index, message in enumerate(messages):
            if flags is None:
                letters = ""
            else:
                if isinstance(flags, str):
                    spec: FlagSpec = flags
                elif callable(flags):
                    spec = flags(index)
                else:
                    spec = flags[index]
                if isinstance(spec, str):
                    if spec not in letters_cache:
                        letters_cache[spec] = _flag_letters(spec, keywords)
                    letters = letters_cache[spec]
                else:
                    letters = _flag_letters(spec, keywords)
            if internaldates is None:
                stamp = header_date(message)
                mtime_ns = now_ns if stamp is None else int(stamp * 1_000_000_000)
            else:
                mtime_ns = _to_ns(internaldates(index) if callable(internaldates) else internaldates[index])
            size = len(message)
            vsize = size + message.count(b"\n") - message.count(b"\r\n")
            name = f"{prefix}mim{next(self._file_seq):010d}.seed,S={size},W={vsize}:2,{letters}"
            fd = os.open(name, open_flags, 0o600)
            try:
                view = memoryview(message)
                while view:
                    view = view[os.write(fd, view) :]
                if is_root:
                    os.fchown(fd, uid, gid)
                os.utime(fd, ns=(mtime_ns, mtime_ns))
            finally:
                os.close(fd)
        if len(keywords) != known_keywords:
            keywords_path.write_text("".join(f"{i} {name}\n" for name, i in keywords.items()))
            self._chown(keywords_path)
        # Dovecot rescans cur/ on every SELECT while its mtime is within the last couple of seconds;
        # back-date it (to a value never used before, so a folder already indexed still notices).
        past_ns = time.time_ns() - 3_000_000_000
        for sub in ("cur", "new"):
            os.utime(folder / sub, ns=(past_ns, past_ns))

    def settle(self, user: str, mailbox: str) -> None:
        """Have Dovecot take in the files :meth:`seed` wrote, as a delivery through it would have: one
        session opens ``mailbox``, and Dovecot gives each file its UID (``dovecot-uidlist``) meanwhile.

        Until a session has done so, the files are mail Dovecot has not yet seen: a ``STATUS`` (or
        ``LIST ... RETURN (STATUS ...)``) answered while another session's first ``SELECT`` takes them
        in may still count none (2 of 40 and 3 of 60 such pairs, where ``EXAMINE`` counted them in 60 of
        60), as for mail that arrived a moment later. A test whose server opens a seeded folder in two
        sessions at once (an index's build beside a search) settles it first."""
        with self.connect(user, tls=False, starttls=False) as client:
            client.select_folder(mailbox, readonly=True)

    @staticmethod
    def _read_keywords(path: Path) -> dict[str, int]:
        keywords: dict[str, int] = {}
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text().splitlines():
                number, _, name = line.partition(" ")
                if number.isdigit() and name:
                    keywords[name] = int(number)
        return keywords
