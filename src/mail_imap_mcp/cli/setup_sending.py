"""``setup``'s sending: whether the account may send drafts (each approved by the user), to whom, and over
which SMTP submission server where the provider table knows none. Asked on a terminal (the proposal: no);
``--send-enabled`` with ``--allowed-recipients`` (and ``--smtp-host``) in a script. Settings only: an
account that signs in asks for the send scope because ``send_enabled`` is among them when it signs in.
Part of the command line (:mod:`mail_imap_mcp.cli`): only ``cli/setup.py`` imports it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from mail_imap_mcp.cli.setup_answers import answered
from mail_imap_mcp.config import Security
from mail_imap_mcp.config.providers import Provider
from mail_imap_mcp.config.recipients import AllowedRecipients, NotAnEntry

_YES, _NO = ("yes", "y"), ("no", "n")
#: The submission port proposed where no provider's is known (RFC 8314: implicit TLS).
_SMTPS_PORT = 465


def add_arguments(add: Callable[..., Any]) -> None:
    add(
        "--send-enabled",
        action="store_true",
        help="allow sending drafts, each approved by you (needs --allowed-recipients)",
    )
    add(
        "--allowed-recipients",
        metavar="LIST",
        help="with --send-enabled: who may be sent mail, comma-separated: bob@example.org, @example.org "
        "(that domain), *.example.org (its subdomains), * for anyone",
    )
    add("--smtp-host", metavar="HOST", help="with --send-enabled: the SMTP server (default: your provider's)")
    add("--smtp-port", type=int, metavar="PORT", help="with --smtp-host: its port (default 465, TLS)")


def sending_settings(
    args: argparse.Namespace,
    ask: Any,
    say: Callable[[str], None],
    refused: Callable[[str], Exception],
    provider: Provider | None,
    from_provider: bool,
) -> dict[str, Any]:
    """The account's sending settings (none when it does not send); a mistyped answer on a terminal is
    asked again, a wrong flag is ``refused``."""
    if not args.send_enabled:
        if args.allowed_recipients is not None or args.smtp_host is not None:
            raise refused("--allowed-recipients and --smtp-host need --send-enabled")
        if not _yes(ask, say, refused):
            return {}
    settings: dict[str, Any] = {
        "send_enabled": True,
        "allowed_recipients": _recipients(args, ask, say, refused),
    }
    known = provider.submission_endpoint if provider is not None and from_provider else None
    if args.smtp_host is None and known is not None:
        return settings
    host = ask.text("SMTP server (submission)", "--smtp-host", args.smtp_host).strip()
    question = f"SMTP port ({_SMTPS_PORT} with TLS)"
    asked = answered(
        ask,
        say,
        refused,
        question,
        "--smtp-port",
        args.smtp_port,
        str(_SMTPS_PORT),
        str.isdigit,
        "is no port",
    )
    port = int(asked)
    smtp: dict[str, Any] = {"host": host, "port": port}
    if port != _SMTPS_PORT:  # 587 and the like: submission upgraded with STARTTLS
        smtp["security"] = Security.STARTTLS.value
    return {**settings, "smtp": smtp}


def _yes(ask: Any, say: Callable[[str], None], refused: Callable[[str], Exception]) -> bool:
    question = "Allow sending drafts, each only once you approved it in your browser (yes or no)"
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
