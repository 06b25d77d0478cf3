"""``mail-imap-mcp setup``: one account, from the address to a config file every MCP client can start.

It asks for the address and proposes the provider's server, port and security (the provider table of
``config/providers.py``) with the provider's advice on app passwords, reads the password without echo,
logs in to prove the settings (a failure is the diagnosis ``check`` gives, and nothing is written), keeps
the password in the OS keychain where one is usable (else in no file: the config names an environment
variable the client sets, and says why), writes the config file (0600) and prints what to paste into
Claude Desktop, Claude Code, VS Code and Cursor. Every question has a flag, for scripts; ``--dry-run``
logs in and prints, but writes nothing. A top module like ``cli.py``: nothing imports it but ``cli``.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mail_imap_mcp.config import (
    ACCOUNT_ID_PATTERN,
    DEFAULT_PORTS,
    AccountConfig,
    ConfigError,
    Security,
    parse_command,
    resolve_config_path,
)
from mail_imap_mcp.config.accounts import format_validation_error
from mail_imap_mcp.config.keychain import KeychainUnavailable, store_password
from mail_imap_mcp.config.providers import Provider, provider_for_address
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import ImapError
from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.setup_clients import snippets

KEYRING_SERVICE = "mail-imap-mcp"


class SetupRefused(Exception):
    """What the user must change before setup can go on; the message says it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``setup``: each answers one question (for scripts), none is needed on a terminal."""
    add = parser.add_argument
    add("--account", metavar="ID", help="the account's id in the config (default: default)")
    add("--address", help="your email address")
    add("--host", help="the IMAP server (default: your provider's)")
    add(
        "--port", type=int, help="the IMAP port (default: the provider's, else 993 for tls, 143 for starttls)"
    )
    add("--security", choices=[item.value for item in Security], help="tls (default), starttls or plain")
    add("--username", help="the login name (default: the address)")
    add("--ca-file", type=Path, help="a PEM certificate to trust (Proton Mail Bridge, a self-signed server)")
    add("--password-stdin", action="store_true", help="read the password from standard input (one line)")
    add("--oauth2-token-command", metavar="COMMAND", help="log in with OAuth2: a command printing a token")
    add(
        "--keyring-service", default=KEYRING_SERVICE, help=f"the keychain entry's service ({KEYRING_SERVICE})"
    )
    add("--no-keyring", action="store_true", help="keep the password out of the keychain (an env variable)")
    add("--write-enabled", action="store_true", help="allow the write tools on this account")
    add("--yes", action="store_true", help="take every proposal without asking")
    add("--dry-run", action="store_true", help="log in and print, but write no file and no keychain entry")


class _Asker:
    """Questions on a terminal (a proposal in brackets, Enter takes it); without one, the flag's value or
    :class:`SetupRefused` naming the flag."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.interactive = sys.stdin.isatty() and not args.password_stdin
        self.accept_proposals = bool(args.yes)

    def text(self, question: str, flag: str, given: Any, proposal: str | None = None) -> str:
        if given is not None:
            return str(given)
        if proposal is not None and (self.accept_proposals or not self.interactive):
            return proposal
        if not self.interactive:
            raise SetupRefused(f"{flag} is needed when standard input is not a terminal")
        shown = f" [{proposal}]" if proposal else ""
        while True:
            answer = input(f"{question}{shown}: ").strip()
            if answer or proposal:
                return answer or str(proposal)

    def secret(self, question: str) -> str:
        if not self.interactive:
            line = sys.stdin.readline().rstrip("\r\n")
            if not line:
                raise SetupRefused("--password-stdin: standard input held no password")
            return line
        while not (answer := getpass.getpass(f"{question} (not shown): ")):
            pass
        return answer


def _say(text: str) -> None:
    print(text, flush=True)


def _ask_account(args: argparse.Namespace, ask: _Asker) -> tuple[dict[str, Any], Provider | None]:
    """The account's settings (no secret yet) and the provider the address is at."""
    address = ask.text("Email address", "--address", args.address).strip()
    if "@" not in address:
        raise SetupRefused(f"{address!r} is not an email address (name@domain)")
    provider = provider_for_address(address)
    if provider is not None:
        _say(f"{provider.name}: {provider.login_hint}.")
    host = ask.text("IMAP server", "--host", args.host, provider.imap_host if provider else None)
    from_provider = provider is not None and host == provider.imap_host
    security = ask.text(
        "Security (tls, starttls, plain)",
        "--security",
        args.security,
        provider.security.value if from_provider and provider else Security.TLS.value,
    )
    if security not in {item.value for item in Security}:
        raise SetupRefused(f"security {security!r}: use tls, starttls or plain")
    port_proposal = provider.port if from_provider and provider else DEFAULT_PORTS[Security(security)]
    port = ask.text("Port", "--port", args.port, str(port_proposal))
    username = ask.text("Username", "--username", args.username, address)
    settings: dict[str, Any] = {
        "host": host,
        "port": int(port) if port.isdigit() else port,
        "security": security,
        "username": username,
        "addresses": [address],
    }
    if args.ca_file is not None:
        settings["ca_file"] = str(args.ca_file.expanduser().resolve())
    if args.write_enabled:
        settings["write_enabled"] = True
    return settings, provider


def _validated(settings: dict[str, Any]) -> AccountConfig:
    try:
        return AccountConfig.model_validate(settings)
    except ValidationError as exc:
        raise SetupRefused(format_validation_error(exc).removeprefix("invalid configuration: ")) from None


def _prove(account_id: str, account: AccountConfig, words: Callable[[ImapError], str]) -> None:
    """Log in and list the mailboxes, as ``check`` does; SetupRefused with the diagnosis otherwise."""
    target = f"{account.host}:{account.effective_port} ({account.security.value})"
    _say(f"Logging in to {target} as {account.username}...")

    def probe(session: ImapSession) -> int:
        return len(list_mailboxes(session))

    connection = AccountConnection(account_id, account)
    try:
        mailboxes = connection.run(probe, retry=False)
    except ImapError as exc:
        raise SetupRefused(f"the login failed, so nothing was written: {words(exc)}") from None
    finally:
        connection.close()
    _say(f"ok: logged in, {mailboxes} mailbox(es).")


def _account_table(account_id: str, settings: dict[str, Any]) -> str:
    lines = [f"[accounts.{account_id}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def _write_config(path: Path, table: str) -> None:
    """Append ``table`` to the config file, created 0600 in a 0700 directory; the file stays 0600."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    existed = path.exists()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as file:
        file.write(
            ("\n" if existed else "# Written by `mail-imap-mcp setup`; see `mail-imap-mcp config-example`.\n")
            + table
        )
    os.chmod(path, 0o600)


def _free_account_id(path: Path, wanted: str | None) -> str:
    existing: dict[str, Any] = {}
    if path.is_file():
        try:
            existing = tomllib.loads(path.read_text(encoding="utf-8")).get("accounts", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SetupRefused(f"{path} cannot be read as TOML ({exc}); fix or move it first") from None
    account_id = wanted or "default"
    if not re.fullmatch(ACCOUNT_ID_PATTERN, account_id):
        raise SetupRefused(f"--account {account_id!r}: use letters, digits, _ and - (at most 64)")
    if account_id in existing:
        raise SetupRefused(
            f"[accounts.{account_id}] is already in {path}: choose another --account or edit the file"
        )
    return account_id


def _password_env_name(account_id: str) -> str:
    return "MAIL_PASSWORD_" + re.sub(r"[^A-Z0-9_]", "_", account_id.upper())


def run_setup(args: argparse.Namespace, words: Callable[[ImapError], str]) -> int:
    """The whole command; 0 when the account works and is written, 1 when the login fails, 2 otherwise."""
    path, _ = resolve_config_path(args.config, os.environ)
    try:
        return _setup(args, path, words)
    except SetupRefused as exc:
        print(f"mail-imap-mcp setup: {exc}", file=sys.stderr)
        return 1 if str(exc).startswith("the login failed") else 2
    except (KeyboardInterrupt, EOFError):
        print("\nmail-imap-mcp setup: stopped; nothing was written", file=sys.stderr)
        return 2


def _setup(args: argparse.Namespace, path: Path, words: Callable[[ImapError], str]) -> int:
    ask = _Asker(args)
    account_id = _free_account_id(path, args.account)
    settings, provider = _ask_account(args, ask)
    secret: str | None = None
    if args.oauth2_token_command or (provider is not None and provider.oauth2_only and ask.interactive):
        command = ask.text(
            "OAuth2 token command (e.g. pizauth show work)",
            "--oauth2-token-command",
            args.oauth2_token_command,
        )
        try:
            settings |= {
                "auth": "xoauth2",
                "oauth2_token_command": parse_command(command, "--oauth2-token-command"),
            }
        except ConfigError as exc:
            raise SetupRefused(str(exc)) from None
        _prove(account_id, _validated(settings), words)
    else:
        secret = ask.secret("Password or app password")
        _prove(account_id, _validated({**settings, "password": secret}), words)
    password_env: str | None = None
    if secret is not None:
        settings, password_env = _keep_password(args, settings, str(settings["username"]), secret, account_id)
    _validated(settings)
    table = _account_table(account_id, settings)
    if args.dry_run:
        _say(f"--dry-run: nothing written. {path} would get:\n\n{table}")
    else:
        _write_config(path, table)
        _say(f"Wrote [accounts.{account_id}] to {path} (readable by you only).")
    _say("\n" + snippets(path, password_env))
    return 0


def _keep_password(
    args: argparse.Namespace, settings: dict[str, Any], username: str, secret: str, account_id: str
) -> tuple[dict[str, Any], str | None]:
    """Where the password goes: the keychain (the config names the entry), else an environment variable
    the client sets (the config names it): never a file."""
    why = "--no-keyring"
    if not args.no_keyring:
        try:
            if args.dry_run:
                from mail_imap_mcp.config.keychain import backend_name

                _say(f"--dry-run: the password would go to the keychain ({backend_name()}).")
            else:
                backend = store_password(args.keyring_service, username, secret)
                _say(
                    f"The password is in the keychain ({backend}), service {args.keyring_service!r}, user {username!r}."
                )
            return {**settings, "password_keyring": args.keyring_service}, None
        except KeychainUnavailable as exc:
            why = str(exc).removeprefix("password_keyring: ")
    variable = _password_env_name(account_id)
    _say(
        f"The password is in no file ({why}): the config reads it from the environment variable {variable}, "
        "which the MCP client sets (the snippets below show where)."
    )
    return {**settings, "password_env": variable}, variable
