"""``setup``'s sending: whether the account may send drafts (each approved by the user; writes are turned on
with it, as a draft is saved before it is sent), to whom, and over which SMTP submission server, security
and port where the provider table knows none. Asked on a terminal (the proposal: no); ``--send-enabled``
with ``--allowed-recipients`` (and ``--smtp-host``, ``--smtp-security``, ``--smtp-port``) in a script.
Settings only: an account that signs in asks for the send scope because ``send_enabled`` is among them
when it signs in; :mod:`.setup_submission` checks the server. Part of the command line
(:mod:`mail_imap_mcp.cli`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

from mail_imap_mcp.cli.setup_answers import NOT_A_PORT, SECURITIES, answered, is_port
from mail_imap_mcp.config import Security
from mail_imap_mcp.config.endpoints import SUBMISSION_PORTS, Endpoint, is_loopback_host
from mail_imap_mcp.config.providers import Provider
from mail_imap_mcp.config.recipients import AllowedRecipients, NotAnEntry

_YES, _NO = ("yes", "y"), ("no", "n")
#: What is said of an SMTP security that is none of the three, or plain to a server elsewhere.
_NOT_AN_SMTP_SECURITY = "is none of tls, starttls and plain (plain only for a server on this computer)"


def add_arguments(add: Callable[..., Any]) -> None:
    add(
        "--send-enabled",
        action="store_true",
        help="allow sending drafts, each approved by you; turns --write-enabled on too, as a draft is saved "
        "before it is sent (needs --allowed-recipients)",
    )
    add(
        "--allowed-recipients",
        metavar="LIST",
        help="with --send-enabled: who may be sent mail, comma-separated: bob@example.org, @example.org "
        "(that domain), *.example.org (its subdomains), * for anyone",
    )
    add("--smtp-host", metavar="HOST", help="with --send-enabled: the SMTP server (default: your provider's)")
    add(
        "--smtp-security",
        choices=[item.value for item in Security],
        help="with --smtp-host: tls (implicit TLS, the default) or starttls; plain only for this computer",
    )
    add(
        "--smtp-port",
        type=int,
        metavar="PORT",
        help="with --smtp-host: its port (default 465 with tls, 587 with starttls)",
    )


def sending_settings(
    args: argparse.Namespace,
    ask: Any,
    say: Callable[[str], None],
    refused: Callable[[str], Exception],
    provider: Provider | None,
    from_provider: bool,
) -> dict[str, Any]:
    """The account's sending settings (none when it does not send), writes on with them: a draft to send
    is saved first. A mistyped answer on a terminal is asked again, a wrong flag is ``refused``."""
    given = [args.allowed_recipients, args.smtp_host, args.smtp_security, args.smtp_port]
    if not args.send_enabled:
        if any(flag is not None for flag in given):
            raise refused(
                "--allowed-recipients, --smtp-host, --smtp-security and --smtp-port need --send-enabled"
            )
        if not _yes(ask, say, refused):
            return {}
    settings: dict[str, Any] = {
        "write_enabled": True,
        "send_enabled": True,
        "allowed_recipients": _recipients(args, ask, say, refused),
    }
    known = provider.submission_endpoint if provider is not None and from_provider else None
    if args.smtp_host is None and known is not None:
        return settings
    host = ask.text("SMTP server (submission)", "--smtp-host", args.smtp_host).strip()
    security = answered(
        ask,
        say,
        refused,
        "SMTP security (tls, starttls, plain)",
        "--smtp-security",
        args.smtp_security,
        Security.TLS.value,
        partial(_fits_smtp_security, host),
        _NOT_AN_SMTP_SECURITY,
    )
    proposal = str(SUBMISSION_PORTS[Security(security)])
    port = answered(
        ask, say, refused, "SMTP port", "--smtp-port", args.smtp_port, proposal, is_port, NOT_A_PORT
    )
    return {**settings, "smtp": {"host": host, "port": int(port), "security": security}}


def smtp_again(ask: Any, now: Endpoint) -> dict[str, Any]:
    """The SMTP server, security and port asked again on a terminal (after a failed check), each earlier
    answer the proposal; where the security changed, the port proposed is the new security's only where
    the one typed was the old one's (a port of its own, typed on purpose, is proposed again)."""
    host = ask.again("SMTP server (submission)", now.host)
    fits = partial(_fits_smtp_security, host)
    security = ask.again(
        "SMTP security (tls, starttls, plain)", now.security.value, fits, _NOT_AN_SMTP_SECURITY
    )
    followed_security = now.port == SUBMISSION_PORTS[now.security] and security != now.security.value
    proposal = SUBMISSION_PORTS[Security(security)] if followed_security else now.port
    port = ask.again("SMTP port", str(proposal), is_port, NOT_A_PORT)
    return {"host": host, "port": int(port), "security": security}


def _fits_smtp_security(host: str, answer: str) -> bool:
    return answer in SECURITIES and (answer != Security.PLAIN.value or is_loopback_host(host))


def _yes(ask: Any, say: Callable[[str], None], refused: Callable[[str], Exception]) -> bool:
    question = (
        "Allow changes to mail (flags, moves, Trash, drafts) and sending drafts, each sent only once you "
        "approved it in your browser (yes or no)"
    )
    answer = answered(
        ask, say, refused, question, "--send-enabled", None, "no", _yes_or_no, "is neither yes nor no"
    )
    return answer.lower() in _YES


def _yes_or_no(answer: str) -> bool:
    return answer.lower() in _YES + _NO


def _recipients(
    args: argparse.Namespace, ask: Any, say: Callable[[str], None], refused: Callable[[str], Exception]
) -> list[str]:
    question = (
        "Who may be sent mail (comma-separated: bob@example.org, @example.org for a domain, * for anyone)"
    )
    while True:
        answer = ask.text(question, "--allowed-recipients", args.allowed_recipients)
        entries = [entry.strip() for entry in answer.split(",") if entry.strip()]
        try:
            AllowedRecipients.parse(entries)
            if entries:
                return entries
            problem = "nobody is named"
        except NotAnEntry as exc:
            problem = str(exc)
        if args.allowed_recipients is not None or not ask.interactive:
            raise refused(f"--allowed-recipients: {problem}")
        say(f"{problem}; try again.")
