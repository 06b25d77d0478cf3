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
import getpass
import json
import os
import re
import ssl
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mail_imap_mcp.cli import setup_sending, setup_sign_in
from mail_imap_mcp.cli.setup_answers import answered
from mail_imap_mcp.cli.setup_clients import already_served, password_env_wording, snippets
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
from mail_imap_mcp.config.providers import Provider, provider_for_address
from mail_imap_mcp.config.secret_storage import write_secret_file
from mail_imap_mcp.credentials import keychain
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import ConnectFailed, ConnectPhase, LoginRefused
from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import MailError

KEYRING_SERVICE = "mail-imap-mcp"
_ADDRESS, _SECURITY = re.compile(r"[^@\s]+@[^@\s]+").fullmatch, {item.value for item in Security}.__contains__
# Logins a person gets before setup gives up (each failure asks again only what it points at).
MAX_LOGINS = 5


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
    setup_sign_in.add_arguments(add)
    add(
        "--keyring-service", default=KEYRING_SERVICE, help=f"the keychain entry's service ({KEYRING_SERVICE})"
    )
    add("--no-keyring", action="store_true", help="keep the password in a file only you can read instead")
    add(
        "--password-env",
        action="store_true",
        help="keep the password in no file of this server's: an environment variable each client sets",
    )
    add("--write-enabled", action="store_true", help="allow the write tools on this account")
    setup_sending.add_arguments(add)
    add("--yes", action="store_true", help="take every proposal without asking")
    add("--replace", action="store_true", help="replace the config's account of the same id")
    add(
        "--dry-run",
        action="store_true",
        help="log in and print what the run would write, but write no file and no keychain entry",
    )


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

    def again(self, question: str, previous: str) -> str:
        """Asked again on a terminal after a failed login: the earlier answer is the proposal."""
        answer = input(f"{question} [{previous}]: ").strip()
        return answer or previous

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
    asked = partial(answered, ask, _say, SetupRefused)
    address = asked(
        "Email address", "--address", args.address, None, _ADDRESS, "is not an address (name@domain)"
    )
    provider = provider_for_address(address)
    if provider is not None:
        _say(f"{provider.name}: {provider.login_hint}.")
    host = ask.text("IMAP server", "--host", args.host, provider.imap_host if provider else None)
    from_provider = provider is not None and host == provider.imap_host
    proposed = provider.security.value if from_provider and provider else Security.TLS.value
    security = asked(
        "Security (tls, starttls, plain)",
        "--security",
        args.security,
        proposed,
        _SECURITY,
        "is none of the three",
    )
    port_proposal = provider.port if from_provider and provider else DEFAULT_PORTS[Security(security)]
    port = ask.text("Port", "--port", args.port, str(port_proposal))
    username = ask.text("Username", "--username", args.username, address)
    settings: dict[str, Any] = {
        "host": host,
        "port": _port(port),
        "security": security,
        "username": username,
        "addresses": [address],
    }
    if args.ca_file is not None:
        settings["ca_file"] = str(args.ca_file.expanduser().resolve())
    if args.write_enabled:
        settings["write_enabled"] = True
    return settings, provider


def _port(answer: str) -> int | str:
    return int(answer) if answer.isdigit() else answer


def _validated(settings: dict[str, Any]) -> AccountConfig:
    try:
        return AccountConfig.model_validate(settings)
    except ValidationError as exc:
        raise SetupRefused(format_validation_error(exc).removeprefix("invalid configuration: ")) from None


def _prove(account_id: str, account: AccountConfig) -> None:
    """Log in and list the mailboxes, as ``check`` does; the MailError of a failure propagates."""
    target = f"{account.host}:{account.effective_port} ({account.security.value})"
    _say(f"Logging in to {target} as {account.username}...")

    def probe(session: ImapSession) -> int:
        return len(list_mailboxes(session))

    connection = AccountConnection(account_id, account, credentials=credentials_for(account_id, account))
    try:
        mailboxes = connection.run(probe, retry=False)
    finally:
        connection.close()
    _say(f"ok: logged in, {mailboxes} mailbox(es).")


class _Fault(Enum):
    """What a failed login points at: what setup asks again."""

    CERTIFICATE = "certificate"
    CREDENTIALS = "credentials"
    SERVER = "server"


def _fault(exc: MailError) -> _Fault:
    if not isinstance(exc, ConnectFailed):
        return _Fault.SERVER
    if isinstance(exc.cause, ssl.SSLCertVerificationError):
        return _Fault.CERTIFICATE
    if isinstance(exc.cause, LoginRefused) or exc.phase is ConnectPhase.LOGIN:
        return _Fault.CREDENTIALS
    return _Fault.SERVER


def _log_in(
    ask: _Asker, account_id: str, settings: dict[str, Any], words: Callable[[MailError], str]
) -> str | None:
    """Log in with ``settings`` (changed in place by the answers given again); the password, or None
    for an OAuth2 account. On a terminal a failure asks again only what it points at, every other answer
    kept; a script, or the last of MAX_LOGINS, stops with the diagnosis (SetupRefused)."""
    secret = (
        None if settings.get("auth", "password") != "password" else ask.secret("Password or app password")
    )
    for attempt in range(1, MAX_LOGINS + 1):
        try:
            _prove(account_id, _validated(settings if secret is None else {**settings, "password": secret}))
            return secret
        except MailError as exc:
            failure, fault = words(exc), _fault(exc)
        if not ask.interactive or attempt == MAX_LOGINS:
            flag = (
                " Give the certificate to trust with --ca-file FILE." if fault is _Fault.CERTIFICATE else ""
            )
            raise SetupRefused(f"the login failed, so nothing was written: {failure}{flag}")
        _say(f"The login failed: {failure}")
        if fault is _Fault.CERTIFICATE:
            settings["ca_file"] = _ask_certificate(ask)
        elif fault is _Fault.CREDENTIALS:
            settings["username"] = ask.again("Username", str(settings["username"]))
            if secret is not None:
                secret = ask.secret("Password or app password")
        else:
            settings["host"] = ask.again("IMAP server", str(settings["host"]))
            settings["security"] = ask.again("Security (tls, starttls, plain)", str(settings["security"]))
            settings["port"] = _port(ask.again("Port", str(settings["port"])))
    raise AssertionError("unreachable: the last attempt returns or raises")


def _ask_certificate(ask: _Asker) -> str:
    while True:
        answer = ask.text(
            "The server's certificate is not trusted. Certificate file to trust (PEM, e.g. the one Proton "
            "Mail Bridge exports)",
            "--ca-file",
            None,
        )
        path = Path(answer).expanduser()
        if path.is_file():
            return str(path.resolve())
        _say(f"{path} is not a file.")


def _account_table(account_id: str, settings: dict[str, Any]) -> str:
    lines = [f"[accounts.{account_id}]"]
    lines += [f"{key} = {_toml_value(value)}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    """``value`` in TOML: JSON's strings, numbers, booleans and lists are TOML's; a table is inline."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {json.dumps(item)}" for key, item in value.items()) + " }"
    return json.dumps(value)


_HEADER = "# Written by `mail-imap-mcp setup`; see `mail-imap-mcp config-example`.\n"
_TABLE_HEADER = re.compile(r"^\s*\[")


def _write_config(path: Path, table: str, replaced: str | None) -> None:
    """Add ``table`` to the config file (in place of account ``replaced``'s table, if given), created
    0600 in a 0700 directory; the file is replaced whole, and stays 0600."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = path.read_text(encoding="utf-8") if path.exists() else _HEADER
    if replaced is not None:
        text = _without_account(path, text, replaced)
    text = text.rstrip("\n") + "\n\n" + table if text.strip() else _HEADER + table
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _without_account(path: Path, text: str, account_id: str) -> str:
    """``text`` without the table ``[accounts.ID]`` and its subtables, every other line kept as it is;
    SetupRefused where the account is written otherwise (the result still holds it, or is not TOML)."""
    own = re.compile(
        rf"^\s*\[\s*accounts\s*\.\s*(?:{re.escape(account_id)}|\"{re.escape(account_id)}\")\s*[.\]]"
    )
    kept: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        if _TABLE_HEADER.match(line):
            inside = bool(own.match(line))
        if not inside:
            kept.append(line)
    result = "".join(kept)
    try:
        still = account_id in tomllib.loads(result).get("accounts", {})
    except tomllib.TOMLDecodeError:
        still = True
    if still:
        raise SetupRefused(
            f"[accounts.{account_id}] in {path} is not written as one table setup can replace: edit the file"
        )
    return result


def _account_id(path: Path, wanted: str | None, replace: bool) -> str:
    existing: dict[str, Any] = {}
    if path.is_file():
        try:
            existing = tomllib.loads(path.read_text(encoding="utf-8")).get("accounts", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SetupRefused(f"{path} cannot be read as TOML ({exc}); fix or move it first") from None
    account_id = wanted or "default"
    if not re.fullmatch(ACCOUNT_ID_PATTERN, account_id):
        raise SetupRefused(f"--account {account_id!r}: use letters, digits, _ and - (at most 64)")
    if account_id in existing and not replace:
        raise SetupRefused(
            f"[accounts.{account_id}] is already in {path}: choose another --account, replace it with "
            "--replace, or edit the file"
        )
    return account_id


def _password_env_name(account_id: str) -> str:
    return "MAIL_PASSWORD_" + re.sub(r"[^A-Z0-9_]", "_", account_id.upper())


def run_setup(args: argparse.Namespace, words: Callable[[MailError], str]) -> int:
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


def _setup(args: argparse.Namespace, path: Path, words: Callable[[MailError], str]) -> int:
    ask = _Asker(args)
    account_id = _account_id(path, args.account, args.replace)
    held = sorted(_accounts_in(path)) if path.is_file() else []
    replacing = account_id if account_id in held else None
    settings, provider = _ask_account(args, ask)
    sign_in = setup_sign_in.chosen(args, ask, provider)
    from_provider = provider is not None and settings["host"] == provider.imap_host
    # Before the sign-in: an account that sends signs in for the send scope too.
    settings |= setup_sending.sending_settings(args, ask, _say, SetupRefused, provider, from_provider)
    secret_file: Path | None = None  # the client secret file the sign-in wrote
    if sign_in is not None:
        try:
            more, secret_file = setup_sign_in.signed_in(args, ask, settings, sign_in, path, account_id)
            settings |= more
        except ConfigError as exc:
            raise SetupRefused(str(exc)) from None
    elif args.oauth2_token_command or (provider is not None and provider.oauth2_only and ask.interactive):
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
    try:
        secret = _log_in(ask, account_id, settings, words)
    except SetupRefused:
        if sign_in is not None:  # nothing is written: neither is the sign-in kept
            setup_sign_in.forget(account_id, settings, secret_file)
        raise
    password_env: str | None = None
    if secret is not None:
        place = password_place(args, path, account_id, str(settings["username"]))
        _keep_password(args, place, str(settings["username"]), secret)
        settings, password_env = {**settings, **place.setting}, place.variable
    _validated(settings)
    table = _account_table(account_id, settings)
    where = f"[accounts.{account_id}] in" if replacing else f"[accounts.{account_id}] to"
    if args.dry_run:
        verb = "replace" if replacing else "write"
        _say(f"--dry-run: nothing written. The run would {verb} {where} {path}:\n\n{table}")
    else:
        _write_config(path, table, replacing)
        _say(f"{'Replaced' if replacing else 'Wrote'} {where} {path} (readable by you only).")
    others = [other for other in held if other != account_id]
    _say("\n" + (already_served(path, account_id, others) if others else "") + snippets(path, password_env))
    return 0


def _accounts_in(path: Path) -> dict[str, Any]:
    accounts: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8")).get("accounts", {})
    return accounts


@dataclass(frozen=True)
class PasswordPlace:
    """Where the password goes: the setting the config gets, the environment variable a client sets
    (None with the keychain or a file), the sentence that says so, and the file setup writes."""

    setting: dict[str, str]
    variable: str | None
    said: str
    file: Path | None = None


def password_place(args: argparse.Namespace, path: Path, account_id: str, username: str) -> PasswordPlace:
    """The one decision, for ``--dry-run`` and the run alike: with ``--password-env`` an environment
    variable each client sets (the config names it); else the keychain where it is usable (read for this
    entry without an error, refused backends never; nothing is written to decide); else a file of the
    user's alone beside the config. No MCP client's config holds it but with ``--password-env``."""
    if args.password_env:
        variable = _password_env_name(account_id)
        return PasswordPlace({"password_env": variable}, variable, password_env_wording(variable))
    why = "--no-keyring"
    if not args.no_keyring:
        try:
            keychain.read_password(args.keyring_service, username, "password_keyring")
            usable = True
        except keychain.KeychainUnavailable as exc:
            why, usable = exc.reason, False  # the file below is the advice: not given again
        except ConfigError:  # usable, and holds no password for this entry yet
            usable = True
        if usable:
            return PasswordPlace(
                {"password_keyring": args.keyring_service},
                None,
                f"The password is in the keychain ({keychain.backend_name()}), service {args.keyring_service!r}, "
                f"user {username!r}; no file holds it.",
            )
    secret_file = path.parent / f"{account_id}.password"
    return PasswordPlace(
        {"password_file": str(secret_file)},
        None,
        f"The password is in {secret_file}, readable by you only ({why}); the config names it "
        "(password_file) and no MCP client's config holds it.",
        secret_file,
    )


def _keep_password(args: argparse.Namespace, place: PasswordPlace, username: str, secret: str) -> None:
    """Put the password where ``place`` says (nothing with ``--dry-run``) and say where it is."""
    if args.dry_run:
        _say(f"--dry-run: nothing stored. {place.said}")
        return
    if place.file is not None:
        if args.replace:  # the account's own file, replaced with it
            place.file.unlink(missing_ok=True)
        try:
            write_secret_file(place.file, secret, "password_file")
        except FileExistsError:
            raise SetupRefused(
                f"{place.file} already exists: move it away, or choose another --account"
            ) from None
        except ConfigError as exc:
            raise SetupRefused(
                f"{exc}; or keep the password in the environment with --password-env"
            ) from None
    elif place.variable is None:
        try:
            keychain.store_password(args.keyring_service, username, secret)
        except keychain.KeychainUnavailable as exc:
            raise SetupRefused(
                f"{exc}; nothing was written: run setup again with --no-keyring to keep it in a file of yours"
            ) from None
    _say(place.said)
