"""``mail-imap-mcp setup``: one account, from the address to a config file every MCP client can start.

It asks for the address and proposes the provider's server, port and security (the provider table of
``config/providers.py``) with the provider's advice on app passwords, reads the password without echo,
logs in to prove the settings (a failure is the diagnosis ``check`` gives; on a terminal setup then asks
again what the failure points at, keeping every other answer: the password, the certificate to trust, the
server; a script stops and nothing is written), keeps the password in the OS keychain where one is usable,
else in a file only the user can read beside the config (``password_file``; or, asked, an environment
variable each client sets), says exactly where, writes the config file (0600; ``--replace`` replaces an
account of the same id) and prints what to paste into Claude Desktop, Claude Code, VS Code and Cursor.
Every question has a flag, for scripts; ``--dry-run`` logs in and prints what the same run would write,
deciding where the password goes as the run does, but writes nothing. A top module like ``cli.py``: nothing
imports it but ``cli``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from mail_imap_mcp.cli import setup_sending, setup_sign_in
from mail_imap_mcp.cli.setup_answers import NOT_A_PORT, NOT_A_SECURITY, SECURITIES, answered, is_port
from mail_imap_mcp.cli.setup_asker import CHECK_FAILED, Asker, SetupRefused, say
from mail_imap_mcp.cli.setup_clients import already_served, snippets
from mail_imap_mcp.cli.setup_config_file import account_table, accounts_in, chosen_account_id, write_config
from mail_imap_mcp.cli.setup_login import PASSWORD_QUESTION, Proof, log_in, validated
from mail_imap_mcp.cli.setup_password import keep_password, password_place
from mail_imap_mcp.config import DEFAULT_PORTS, ConfigError, Security, parse_command, resolve_config_path
from mail_imap_mcp.config.providers import Provider, provider_for_address

_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+").fullmatch


def _ask_account(args: argparse.Namespace, ask: Asker) -> tuple[dict[str, Any], Provider | None]:
    """The account's settings (no secret yet) and the provider the address is at."""
    asked = partial(answered, ask, say, SetupRefused)
    address = asked(
        "Email address", "--address", args.address, None, _ADDRESS, "is not an address (name@domain)"
    )
    provider = provider_for_address(address)
    if provider is not None:
        say(f"{provider.name}: {provider.login_hint}.")
    host = ask.text("IMAP server", "--host", args.host, provider.imap_host if provider else None)
    from_provider = provider is not None and host == provider.imap_host
    proposed = provider.security.value if from_provider and provider else Security.TLS.value
    security = asked(
        "Security (tls, starttls, plain)",
        "--security",
        args.security,
        proposed,
        SECURITIES.__contains__,
        NOT_A_SECURITY,
    )
    port_proposal = provider.port if from_provider and provider else DEFAULT_PORTS[Security(security)]
    port = asked("Port", "--port", args.port, str(port_proposal), is_port, NOT_A_PORT)
    username = ask.text("Username", "--username", args.username, address)
    settings: dict[str, Any] = {
        "host": host,
        "port": int(port),
        "security": security,
        "username": username,
        "addresses": [address],
    }
    if args.ca_file is not None:
        settings["ca_file"] = str(args.ca_file.expanduser().resolve())
    if args.write_enabled:
        settings["write_enabled"] = True
    return settings, provider


def run_setup(args: argparse.Namespace, words: Callable[[Exception], str]) -> int:
    """The whole command; 0 when the account works and is written, 1 when the login fails, 2 otherwise."""
    path, _ = resolve_config_path(args.config, os.environ)
    ask = Asker(args)
    try:
        return _setup(args, path, words, ask)
    except SetupRefused as exc:
        print(f"mail-imap-mcp setup: {exc}", file=sys.stderr)
        return 1 if str(exc).startswith(("the login failed", CHECK_FAILED)) else 2
    except (KeyboardInterrupt, EOFError):
        print("\nmail-imap-mcp setup: stopped; nothing was written", file=sys.stderr)
        return 2
    finally:
        ask.close()


def _setup(args: argparse.Namespace, path: Path, words: Callable[[Exception], str], ask: Asker) -> int:
    account_id = chosen_account_id(path, args.account, args.replace)
    held = sorted(accounts_in(path)) if path.is_file() else []
    replacing = account_id if account_id in held else None
    settings, provider = _ask_account(args, ask)
    sign_in = setup_sign_in.chosen(args, ask, provider)
    secret: str | None = None
    if sign_in is None:
        settings |= _token_command(args, ask, provider)
        if settings.get("auth", "password") == "password":  # right after the username, where it is expected
            secret = ask.secret(PASSWORD_QUESTION)
    from_provider = provider is not None and settings["host"] == provider.imap_host
    # Before the sign-in: an account that sends signs in for the send scope too.
    settings |= setup_sending.sending_settings(args, ask, say, SetupRefused, provider, from_provider)
    secret_file: Path | None = None  # the client secret file the sign-in wrote
    if sign_in is not None:
        try:
            more, secret_file = setup_sign_in.signed_in(args, ask, settings, sign_in, path, account_id)
            settings |= more
        except ConfigError as exc:
            raise SetupRefused(str(exc)) from None
    try:
        proof = Proof(ask, account_id, words)
        secret = log_in(proof, settings, secret)
        if settings.get("send_enabled"):
            # The submission check (an SMTP client) loads for an account that sends.
            from mail_imap_mcp.cli.setup_submission import prove_submission

            prove_submission(proof, settings, secret)
    except SetupRefused:
        if sign_in is not None:  # nothing is written: neither is the sign-in kept
            setup_sign_in.forget(account_id, settings, secret_file)
        raise
    password_env: str | None = None
    if secret is not None:
        place = password_place(args, path, account_id, str(settings["username"]))
        keep_password(args, place, str(settings["username"]), secret)
        settings, password_env = {**settings, **place.setting}, place.variable
    validated(settings)
    table = account_table(account_id, settings)
    where = f"[accounts.{account_id}] in" if replacing else f"[accounts.{account_id}] to"
    if args.dry_run:
        verb = "replace" if replacing else "write"
        say(f"--dry-run: nothing written. The run would {verb} {where} {path}:\n\n{table}")
    else:
        write_config(path, table, replacing)
        say(f"{'Replaced' if replacing else 'Wrote'} {where} {path} (readable by you only).")
    others = [other for other in held if other != account_id]
    say("\n" + (already_served(path, account_id, others) if others else "") + snippets(path, password_env))
    return 0


def _token_command(args: argparse.Namespace, ask: Asker, provider: Provider | None) -> dict[str, Any]:
    """The OAuth2 token command's settings, where the account logs in with one (``--oauth2-token-command``;
    on a terminal, asked for a provider that takes no password)."""
    if not (args.oauth2_token_command or (provider is not None and provider.oauth2_only and ask.interactive)):
        return {}
    command = ask.text(
        "OAuth2 token command (e.g. pizauth show work)", "--oauth2-token-command", args.oauth2_token_command
    )
    try:
        return {"auth": "xoauth2", "oauth2_token_command": parse_command(command, "--oauth2-token-command")}
    except ConfigError as exc:
        raise SetupRefused(str(exc)) from None
