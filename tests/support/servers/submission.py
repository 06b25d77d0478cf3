"""The real submission chain for the sending tests: a Dovecot whose submission service (dovecot-submissiond)
logs users in with the same passdb as its IMAP (PLAIN, and XOAUTH2 where the Dovecot has an OAuth2
introspection URL) and relays to Exim (Debian's MTA) on a loopback port, which delivers by LMTP
(dovecot-lmtpd) into the same Dovecot: a message sent to ``<user>@<DOMAIN>`` lands in that user's INBOX.

``SubmissionDovecot`` is a :class:`~tests.support.servers.dovecot.Dovecot` with three more ports:
``submission_port`` (plaintext, STARTTLS offered, plaintext AUTH allowed: the fault proxy's port),
``submissions_port`` (implicit TLS) and ``lmtp_port``; Exim listens on ``mta_port`` with a configuration,
spool and logs of its own in the instance directory (never the system service). Exim refuses at RCPT any
recipient whose local part starts with ``refused`` (a per-recipient refusal the submission server passes
on), and accepts mail to any other address of :data:`DOMAIN`.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from tests.support.patience import NotYet, eventually, patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import PortTaken, free_ports, tail_file, terminate_group

__all__ = ["DOMAIN", "SubmissionDovecot", "ensure_submission_chain"]

#: The mail domain of every test user: ``<user>@mail.test``.
DOMAIN = "mail.test"
_SUBMISSION = "/usr/lib/dovecot/submission"
_LMTP = "/usr/lib/dovecot/lmtp"
_READY_S = 20.0


def ensure_submission_chain() -> str:
    """The Exim binary, after checking Dovecot's submission and LMTP services are installed (scripts/test
    installs them: dovecot-submissiond, dovecot-lmtpd, exim4-daemon-light)."""
    exim = shutil.which("exim4") or shutil.which("exim")
    missing = [p for p in (_SUBMISSION, _LMTP) if not Path(p).is_file()] + ([] if exim else ["exim4"])
    if missing:
        raise RuntimeError(
            f"the submission chain needs {missing}: run scripts/test once (apt-get install "
            "dovecot-submissiond dovecot-lmtpd exim4-daemon-light)"
        )
    assert exim is not None
    return exim


def _greets(port: int, prefix: bytes) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=patient(1.0)) as sock:
            return sock.recv(512).startswith(prefix)
    except OSError:
        return False


class SubmissionDovecot(Dovecot):
    """A Dovecot with submission and LMTP, and the Exim between them; see the module docstring."""

    kind = "dovecot-submission"

    def __init__(self, *, max_mail_size: int = 10_000_000, **options: Any) -> None:
        self.exim_binary = ensure_submission_chain()
        self.max_mail_size = max_mail_size
        self._extra_ports: tuple[int, int, int, int] | None = None
        self._exim: subprocess.Popen[bytes] | None = None
        super().__init__(**options)

    def address(self, user: str) -> str:
        """``user``'s address: mail to it is delivered into their INBOX."""
        return f"{user}@{DOMAIN}"

    @property
    def submission_port(self) -> int:
        """Plaintext submission (STARTTLS offered; AUTH PLAIN allowed without it)."""
        return self._extra(0)

    @property
    def submissions_port(self) -> int:
        """Implicit-TLS submission."""
        return self._extra(1)

    @property
    def lmtp_port(self) -> int:
        return self._extra(2)

    @property
    def mta_port(self) -> int:
        """Exim's SMTP port (the relay the submission service hands mail to)."""
        return self._extra(3)

    def _extra(self, index: int) -> int:
        if self._extra_ports is None:
            raise RuntimeError("instance not started")
        return self._extra_ports[index]

    @property
    def exim_dir(self) -> Path:
        return self.root / "exim"

    def _prepare(self) -> None:
        a, b, c, d = free_ports(self.host, self.host, self.host, self.host)
        self._extra_ports = (a, b, c, d)
        super()._prepare()
        self._prepare_exim()

    def _config(self) -> str:
        config = self._serving(super()._config(), "submission", "lmtp")
        chroot = "" if os.geteuid() == 0 else "  chroot =\n"
        return (
            config
            + f"""
hostname = submission.{DOMAIN}
submission_relay_host = 127.0.0.1
submission_relay_port = {self.mta_port}
submission_relay_trusted = yes
submission_max_mail_size = {self.max_mail_size}
recipient_delimiter =
protocol lmtp {{
  auth_username_format = %Ln
  postmaster_address = postmaster@{DOMAIN}
}}
protocol submission {{
  mail_max_userip_connections = 100
}}
service submission-login {{
{chroot}  inet_listener submission {{
    address = {self.host}
    port = {self.submission_port}
  }}
  inet_listener submissions {{
    address = {self.host}
    port = {self.submissions_port}
    ssl = yes
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = {self.host}
    port = {self.lmtp_port}
  }}
}}
"""
        )

    def _prepare_exim(self) -> None:
        base = self.exim_dir
        for sub in ("spool", "log"):
            (base / sub).mkdir(parents=True)
        if os.geteuid() == 0:  # Exim gives up root for a -C configuration: it runs as nobody
            user, group = "nobody", grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
            for sub in ("spool", "log"):
                shutil.chown(base / sub, user, group)
        else:
            user = pwd.getpwuid(os.geteuid()).pw_name
            group = grp.getgrgid(os.getegid()).gr_name
        (base / "exim.conf").write_text(f"""\
# Generated by tests/support/servers/submission.py -- throwaway relay, loopback only.
primary_hostname = mta.{DOMAIN}
spool_directory = {base}/spool
log_file_path = {base}/log/%slog
pid_file_path = {base}/exim.pid
exim_user = {user}
exim_group = {group}
never_users =
keep_environment =
daemon_smtp_ports = {self.mta_port}
local_interfaces = 127.0.0.1
host_lookup =
rfc1413_hosts =
tls_advertise_hosts =
acl_smtp_rcpt = check_rcpt
message_size_limit = {self.max_mail_size * 2}
ignore_bounce_errors_after = 0s
timeout_frozen_after = 1m

begin acl
check_rcpt:
  deny local_parts = ^refused
       message = no such recipient here
  accept

begin routers
to_dovecot:
  driver = manualroute
  route_list = * 127.0.0.1
  transport = dovecot_lmtp
  self = send

begin transports
dovecot_lmtp:
  driver = smtp
  protocol = lmtp
  port = {self.lmtp_port}
  allow_localhost
  hosts_avoid_tls = *
""")

    def _spawn(self) -> None:
        super()._spawn()
        self._start_exim()
        exim = self._exim

        def greeted_or_exited() -> bool:
            if (exim is not None and exim.poll() is not None) or self._exim_port_taken():
                return True
            return all(
                _greets(port, b"220") for port in (self.submission_port, self.mta_port, self.lmtp_port)
            )

        with contextlib.suppress(NotYet):
            eventually(greeted_or_exited, within=_READY_S)
            if self._exim_port_taken():  # Exim would retry its bind for 5 minutes: other ports instead
                raise PortTaken(f"Exim could not listen on port {self.mta_port}\n{self.log_tail()}")
            if exim is None or exim.poll() is None:
                return
        raise RuntimeError(f"the submission chain did not become ready\n{self.log_tail()}")

    def _exim_port_taken(self) -> bool:
        mainlog = self.exim_dir / "log" / "mainlog"
        return mainlog.is_file() and "Address already in use" in mainlog.read_text(errors="replace")

    def _start_exim(self) -> None:
        with open(self.exim_dir / "exim.stdout", "ab") as out:
            self._exim = subprocess.Popen(
                [self.exim_binary, "-C", str(self.exim_dir / "exim.conf"), "-bdf"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )

    def _terminate(self, grace: float = 2.0) -> None:
        exim, self._exim = self._exim, None
        if exim is not None:
            terminate_group(exim, grace)
        super()._terminate(grace)

    def stop_relay(self) -> None:
        """Stop Exim alone: the submission server then refuses mail it cannot relay."""
        exim, self._exim = self._exim, None
        if exim is not None:
            terminate_group(exim, 2.0)

    def mta_log(self) -> str:
        """Exim's main log (what it received and delivered)."""
        with contextlib.suppress(OSError):
            return (self.exim_dir / "log" / "mainlog").read_text(errors="replace")
        return ""

    def log_tail(self, lines: int = 40) -> str:
        exim = ""
        if self._root is not None:
            exim = "\n".join(
                filter(
                    None, (tail_file(self.exim_dir / name, lines) for name in ("log/mainlog", "exim.stdout"))
                )
            )
        return super().log_tail(lines) + ("\n" + exim if exim else "")
