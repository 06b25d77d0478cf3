"""Where ``setup`` keeps the password: the OS keychain where one is usable, else a file only the user can
read beside the config (``password_file``), or, asked with ``--password-env``, an environment variable
each client sets; the one decision serves ``--dry-run`` and the run alike. Part of the command line
(:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from mail_imap_mcp.cli.setup_asker import SetupRefused, say
from mail_imap_mcp.cli.setup_clients import password_env_wording
from mail_imap_mcp.config import ConfigError
from mail_imap_mcp.config.secret_storage import write_secret_file
from mail_imap_mcp.credentials import keychain

KEYRING_SERVICE = "mail-imap-mcp"


@dataclass(frozen=True)
class PasswordPlace:
    """Where the password goes: the setting the config gets, the environment variable a client sets
    (None with the keychain or a file), the sentence that says so, and the file setup writes."""

    setting: dict[str, str]
    variable: str | None
    said: str
    file: Path | None = None


def _password_env_name(account_id: str) -> str:
    return "MAIL_PASSWORD_" + re.sub(r"[^A-Z0-9_]", "_", account_id.upper())


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


def keep_password(args: argparse.Namespace, place: PasswordPlace, username: str, secret: str) -> None:
    """Put the password where ``place`` says (nothing with ``--dry-run``) and say where it is."""
    if args.dry_run:
        say(f"--dry-run: nothing stored. {place.said}")
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
    say(place.said)
