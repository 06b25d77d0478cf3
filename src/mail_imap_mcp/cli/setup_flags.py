"""The flags of ``setup``, apart from the module that runs it: the command line's parser is built without
setup's login, sign-in and submission checks, and a command imports only what it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from mail_imap_mcp.cli import setup_sending, setup_sign_in
from mail_imap_mcp.cli.setup_password import KEYRING_SERVICE
from mail_imap_mcp.config import Security


def add_setup_arguments(parser: argparse.ArgumentParser) -> None:
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
