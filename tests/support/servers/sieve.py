"""Dovecot's Sieve for the rules' tests: Pigeonhole (``dovecot-sieve``) and its ManageSieve service
(``dovecot-managesieved``, RFC 5804) beside the test Dovecot's IMAP, add-ons of the same Dovecot, not a
second IMAP server (scripts/test installs them: ``ensure_sieve`` in scripts/_bootstrap.sh).

``SieveDovecot`` is a :class:`~tests.support.servers.dovecot.Dovecot` with two more ports:
``managesieve_port`` (plaintext, STARTTLS offered, PLAIN allowed on loopback; XOAUTH2/OAUTHBEARER where
the instance has an OAuth2 introspection URL) and ``lmtp_port``, where ``deliver()`` hands a message to
LMTP (dovecot-lmtpd) with Pigeonhole's plugin: the user's active script files it. Each user's scripts
live in ``~/sieve``, the active one linked from ``~/.dovecot.sieve``. Limits are small so a test can reach them: at most ``max_scripts``
scripts, ``max_storage`` bytes in all, ``max_script_size`` bytes per script. ``sieve_test()`` runs
Pigeonhole's ``sieve-test`` on a script and a message: what the script would do, nothing delivered.
"""

from __future__ import annotations

import os
import shutil
import smtplib
import socket
import subprocess
from pathlib import Path
from typing import Any

from tests.support.patience import eventually, patient
from tests.support.servers.cyrus import Cyrus
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import free_ports

__all__ = ["SieveCyrus", "SieveDovecot", "ensure_sieve"]

_MANAGESIEVE = "/usr/lib/dovecot/managesieve"
_LMTP = "/usr/lib/dovecot/lmtp"
#: Cyrus's ManageSieve server (cyrus-common, installed beside the unpacked cyrus-imapd).
_TIMSIEVED = "/usr/lib/cyrus/bin/timsieved"
_CYRUS_LMTPD = "/usr/lib/cyrus/bin/lmtpd"
_READY_S = 20.0


def ensure_sieve() -> tuple[str, str]:
    """``sieve-test`` and ``sievec``, after checking the ManageSieve service is installed (scripts/test
    installs them: dovecot-sieve, dovecot-managesieved)."""
    sieve_test, sievec = shutil.which("sieve-test"), shutil.which("sievec")
    if not Path(_MANAGESIEVE).is_file() or not Path(_LMTP).is_file() or sieve_test is None or sievec is None:
        raise RuntimeError(
            "the rules' tests need Pigeonhole and LMTP: run scripts/test once (apt-get install dovecot-sieve "
            "dovecot-managesieved dovecot-lmtpd)"
        )
    return sieve_test, sievec


def _greets(host: str, port: int) -> bool:
    """Whether ManageSieve on ``port`` greets (its capabilities start with ``IMPLEMENTATION``)."""
    try:
        with socket.create_connection((host, port), timeout=patient(1.0)) as sock:
            return b'"IMPLEMENTATION"' in sock.recv(4096)
    except OSError:
        return False


class _ManageSieveListener:
    """What ManageSieve adds to a server of the harness: a free loopback port, waited for until it greets."""

    host: str
    _managesieve_port: int | None = None

    @property
    def managesieve_port(self) -> int:
        """ManageSieve, plaintext with STARTTLS offered (the IANA port is 4190; this one is free)."""
        if self._managesieve_port is None:
            raise RuntimeError("instance not started")
        return self._managesieve_port

    def _pick_managesieve_port(self) -> None:
        (self._managesieve_port,) = free_ports(self.host)

    def _spawn(self) -> None:
        super()._spawn()  # type: ignore[misc]  # the server's own, after this class in the MRO
        eventually(
            lambda: _greets(self.host, self.managesieve_port),
            within=_READY_S,
            what=f"ManageSieve's greeting on port {self.managesieve_port}\n{self.log_tail()}",  # type: ignore[attr-defined]
        )


class SieveDovecot(_ManageSieveListener, Dovecot):
    """A Dovecot with ManageSieve and Pigeonhole's limits; see the module docstring."""

    kind = "dovecot-sieve"

    def __init__(
        self,
        *,
        max_scripts: int = 5,
        max_storage: int = 20_000,
        max_script_size: int = 8_000,
        **options: Any,
    ) -> None:
        self.sieve_test_binary, self.sievec_binary = ensure_sieve()
        self.max_scripts = max_scripts
        self.max_storage = max_storage
        self.max_script_size = max_script_size
        self._lmtp_port: int | None = None
        super().__init__(**options)

    @property
    def lmtp_port(self) -> int:
        """LMTP (dovecot-lmtpd) with Pigeonhole's plugin: a message delivered to ``<user>@mail.test``
        runs the user's active script and lands where it says."""
        if self._lmtp_port is None:
            raise RuntimeError("instance not started")
        return self._lmtp_port

    def _prepare(self) -> None:
        self._pick_managesieve_port()
        (self._lmtp_port,) = free_ports(self.host)
        super()._prepare()

    def _config(self) -> str:
        config = self._serving(super()._config(), "sieve", "lmtp")
        chroot = "" if os.geteuid() == 0 else "  chroot =\n"
        return (
            config
            + f"""
protocol lmtp {{
  auth_username_format = %Ln
  postmaster_address = postmaster@mail.test
  mail_plugins = $mail_plugins sieve
}}
service lmtp {{
  inet_listener lmtp {{
    address = {self.host}
    port = {self.lmtp_port}
  }}
}}
plugin {{
  sieve = file:~/sieve;active=~/.dovecot.sieve
  sieve_quota_max_scripts = {self.max_scripts}
  sieve_quota_max_storage = {self.max_storage}
  sieve_max_script_size = {self.max_script_size}
}}
protocol sieve {{
  managesieve_implementation_string = Dovecot Pigeonhole (mail-imap-mcp tests)
  mail_max_userip_connections = 100
}}
service managesieve-login {{
{chroot}  inet_listener sieve {{
    address = {self.host}
    port = {self.managesieve_port}
  }}
}}
"""
        )

    def deliver(self, user: str, message: bytes) -> None:
        """Deliver ``message`` to ``user`` through LMTP, as an MTA would: the user's active script runs."""
        with smtplib.LMTP(self.host, self.lmtp_port, timeout=patient(10.0)) as lmtp:
            lmtp.sendmail("sender@mail.test", [f"{user}@mail.test"], message)

    def sieve_test(
        self, script: str, message: bytes, *, sender: str | None = None, recipient: str | None = None
    ) -> str:
        """What Pigeonhole's ``sieve-test`` says ``script`` does with ``message``, its "Performed
        actions" and "Implicit keep" (nothing delivered), run with this instance's configuration;
        ``sender`` and ``recipient``: the envelope's (``-f``, ``-r``), where a test names them."""
        work = self.root / "sieve-test"
        if not work.is_dir():
            work.mkdir()
            if os.geteuid() == 0:  # sieve-test drops to the mail user, who saves the compiled script here
                os.chown(work, self.mail_uid, self.mail_gid)
        (work / "rule.sieve").write_text(script)
        (work / "message.eml").write_bytes(message)
        result = subprocess.run(
            [
                self.sieve_test_binary,
                "-c",
                str(self.conf_path),
                *(["-f", sender] if sender is not None else []),
                *(["-r", recipient] if recipient is not None else []),
                str(work / "rule.sieve"),
                str(work / "message.eml"),
            ],
            capture_output=True,
            text=True,
            timeout=patient(30.0),
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"sieve-test failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout


class SieveCyrus(_ManageSieveListener, Cyrus):
    """A Cyrus whose ``timsieved`` (from cyrus-common, beside the unpacked imapd) serves ManageSieve on
    ``managesieve_port`` (plaintext, STARTTLS offered), each user's scripts under the instance's
    ``sievedir``; at most ``max_scripts`` scripts of ``max_script_kb`` KiB each (Cyrus counts no storage)."""

    kind = "cyrus-sieve"

    def __init__(self, *, max_scripts: int = 5, max_script_kb: int = 8, **options: Any) -> None:
        if not Path(_TIMSIEVED).is_file():
            raise RuntimeError("timsieved is missing: run scripts/test once (it installs cyrus-common)")
        self.max_scripts = max_scripts
        self.max_script_kb = max_script_kb
        super().__init__(**options)

    def _prepare(self) -> None:
        self._pick_managesieve_port()
        (self.root / "sieve").mkdir()
        super()._prepare()
        conf = self.root / "cyrus.conf"
        service = (
            f'  sieve cmd="{_TIMSIEVED} -C {self.conf_path}" listen="{self.host}:{self.managesieve_port}" prefork=0\n'
            f'  lmtpunix cmd="{_CYRUS_LMTPD} -C {self.conf_path}" listen="{self.lmtp_socket}" prefork=0\n'
        )
        conf.write_text(conf.read_text().replace("}\nEVENTS {", service + "}\nEVENTS {"))

    @property
    def lmtp_socket(self) -> str:
        """lmtpd's unix socket (the ``lmtpsocket`` of imapd.conf): Cyrus takes mail over TCP only with a login."""
        return f"{self.root}/conf/socket/lmtp"

    def deliver(self, user: str, message: bytes) -> None:
        """Deliver ``message`` to ``user`` through lmtpd, as an MTA would: the user's active script runs."""
        with smtplib.LMTP(self.lmtp_socket, timeout=patient(10.0)) as lmtp:
            lmtp.sendmail("sender@mail.test", [user], message)

    def _imapd_conf(self) -> str:
        return super()._imapd_conf() + (
            f"sievedir: {self.root}/sieve\nsieve_maxscripts: {self.max_scripts}\n"
            f"sieve_maxscriptsize: {self.max_script_kb}\nsieve_allowreferrals: no\n"
        )
