"""The flags of ``login``, ``logout`` and ``status``, apart from the module that runs them: the command
line's parser is built without the sign-in's modules (OAuth, the keychain, the loopback redirect)."""

from __future__ import annotations

import argparse
from pathlib import Path

#: How long ``login`` waits for the browser's redirect.
BROWSER_WAIT_S = 300.0


def add_login_arguments(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], config_help: str
) -> None:
    """The ``login``, ``logout`` and ``status`` commands."""
    for name, help_text in (
        ("login", "sign in to an account with oauth2_provider (opens the browser) and keep the sign-in"),
        ("logout", "revoke the account's sign-in where the provider offers it, and forget it"),
        ("status", "say how each account logs in and which are signed in (no token is shown)"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=config_help)
        sub.add_argument(
            "account", nargs="?", help="the account id (default: the only one with oauth2_provider)"
        )
        if name == "login":
            sub.add_argument(
                "--device", action="store_true", help="sign in on another device (a code to type)"
            )
            sub.add_argument(
                "--wait",
                type=float,
                default=BROWSER_WAIT_S,
                metavar="SECONDS",
                help=f"how long to wait for the browser's answer ({BROWSER_WAIT_S:g})",
            )
