"""``setup``'s built-in sign-in, for a Microsoft or Google address: the choice of it (proposed on a terminal
for those addresses; ``--sign-in`` in a script), the client ID (and Google's client secret, kept in a file
of the user's alone beside the config), then the sign-in itself as ``mail-imap-mcp login`` runs it (the
browser, the loopback redirect, the refresh token to the keychain) before setup logs in with it.
Part of the command line (:mod:`mail_imap_mcp.cli`): only ``cli/setup.py`` imports it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mail_imap_mcp.cli.setup_answers import answered
from mail_imap_mcp.config import Config, ConfigError
from mail_imap_mcp.config.accounts import format_validation_error
from mail_imap_mcp.config.providers import Provider
from mail_imap_mcp.config.secret_storage import write_secret_file
from mail_imap_mcp.config.sign_in import SignInProvider
from mail_imap_mcp.credentials.sign_in_state import refresh_token_store

#: The providers whose addresses setup offers the built-in sign-in for, by the provider table's name.
SIGN_IN_PRESETS = {
    "Gmail": SignInProvider.GOOGLE,
    "Microsoft 365 / Outlook.com": SignInProvider.MICROSOFT,
}
#: What oauth2_tenant accepts (config/sign_in.py): a tenant's name, ID or domain.
_TENANT = re.compile(r"[A-Za-z0-9.-]{1,100}").fullmatch
#: The answer that chooses the built-in sign-in.
SIGN_IN = "sign-in"
_PRESETS = [SignInProvider.MICROSOFT.value, SignInProvider.GOOGLE.value]


def add_arguments(add: Callable[..., Any]) -> None:
    add("--sign-in", choices=_PRESETS, help="sign in with Microsoft or Google in the browser (built in)")
    add(
        "--oauth2-client-id",
        metavar="ID",
        help="with --sign-in: the OAuth client ID registered for this server",
    )
    add(
        "--oauth2-tenant",
        metavar="TENANT",
        help="with --sign-in microsoft: common (default), organizations, consumers, or your tenant's ID",
    )
    add(
        "--oauth2-client-secret-file",
        type=Path,
        metavar="FILE",
        help="with --sign-in google: a file of yours alone holding the client secret (asked on a terminal)",
    )
    add(
        "--oauth2-scope",
        action="append",
        metavar="SCOPE",
        help="with --sign-in: a scope to ask for in place of the provider's (repeat for each)",
    )
    for endpoint in ("authorization", "token", "revocation"):
        add(
            f"--oauth2-{endpoint}-url",
            metavar="URL",
            help=f"with --sign-in: the provider's {endpoint} endpoint in place of the preset's",
        )


def chosen(args: argparse.Namespace, ask: Any, provider: Provider | None) -> SignInProvider | None:
    """The sign-in setup runs: ``--sign-in``'s; on a terminal, for a Microsoft or Google address without
    ``--oauth2-token-command``, the answer to the question (the sign-in proposed)."""
    if args.sign_in is not None:
        return SignInProvider(args.sign_in)
    preset = SIGN_IN_PRESETS.get(provider.name) if provider is not None else None
    if preset is None or args.oauth2_token_command or not ask.interactive or args.password_stdin:
        return None
    other = "command (a token helper)" if provider is not None and provider.oauth2_only else "password"
    answer = ask.text(
        f"Log in with: {SIGN_IN} (in your browser, built in) or {other}",
        "--sign-in",
        None,
        SIGN_IN,
    )
    return preset if answer.strip().lower() in (SIGN_IN, "s", preset.value) else None


def sign_in_settings(
    args: argparse.Namespace, ask: Any, preset: SignInProvider, config_path: Path, account_id: str
) -> tuple[dict[str, Any], Path | None]:
    """The account's sign-in settings, and the client secret file setup wrote (Google, asked on a
    terminal; None otherwise)."""
    client_id = ask.text(
        f"OAuth client ID ({'Entra ID' if preset is SignInProvider.MICROSOFT else 'Google Cloud'} app, "
        "docs/providers.md)",
        "--oauth2-client-id",
        args.oauth2_client_id,
    ).strip()
    settings: dict[str, Any] = {
        "auth": "xoauth2",
        "oauth2_provider": preset.value,
        "oauth2_client_id": client_id,
    }
    if args.oauth2_scope:
        settings["oauth2_scopes"] = list(args.oauth2_scope)
    if preset is SignInProvider.MICROSOFT:  # Entra's default registration (one organisation) refuses common
        question = "Microsoft tenant: common, or your tenant's ID or domain for an app of one organisation"
        tenant = answered(
            ask,
            _say,
            ConfigError,
            question,
            "--oauth2-tenant",
            args.oauth2_tenant,
            "common",
            _TENANT,
            "is no tenant",
        )
        if tenant != "common":
            settings["oauth2_tenant"] = tenant
    for endpoint in ("authorization", "token", "revocation"):
        if (url := getattr(args, f"oauth2_{endpoint}_url")) is not None:
            settings[f"oauth2_{endpoint}_url"] = url
    written = None
    if preset is SignInProvider.GOOGLE:
        if args.oauth2_client_secret_file is not None:
            settings["oauth2_client_secret_file"] = str(args.oauth2_client_secret_file.expanduser().resolve())
        elif ask.interactive:
            secret = ask.secret("OAuth client secret (Google gives it with the client ID)")
            written = config_path.parent / f"{account_id}.client-secret"
            config_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if args.replace:  # the account's own file, replaced with it
                written.unlink(missing_ok=True)
            try:
                write_secret_file(written, secret, "oauth2_client_secret_file")
            except FileExistsError:
                raise ConfigError(
                    f"{written} already exists: move it away, or choose another --account"
                ) from None
            settings["oauth2_client_secret_file"] = str(written)
            _say(
                f"The client secret is in {written}, readable by you only; the config names it "
                "(oauth2_client_secret_file) and no MCP client's config holds it."
            )
        else:
            raise ConfigError("--sign-in google needs --oauth2-client-secret-file (Google's client secret)")
    return settings, written


def signed_in(
    args: argparse.Namespace,
    ask: Any,
    settings: dict[str, Any],
    preset: SignInProvider,
    config_path: Path,
    account_id: str,
) -> tuple[dict[str, Any], Path | None]:
    """The sign-in settings added to the account's ``settings`` (and the client secret file written, if
    any), once the user signed in as ``mail-imap-mcp
    login`` does (the browser opens; the URL is printed too). :class:`ConfigError` when it cannot run
    (``--dry-run``: it would keep a token) or did not complete ("the login failed..."), nothing kept."""
    if args.dry_run:
        raise ConfigError(
            "--dry-run cannot sign in (the sign-in keeps a token in the keychain); nothing written"
        )
    more, secret_file = sign_in_settings(args, ask, preset, config_path, account_id)
    # The sign-in's modules (OAuth, the keychain, the loopback redirect) load only for a sign-in: the
    # command line's parser takes this module's flags without them (cli/setup_flags.py).
    from mail_imap_mcp.cli import login

    try:
        try:
            config = Config.model_validate({"accounts": {account_id: {**settings, **more}}})
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc).removeprefix("invalid configuration: ")) from None
        if login.run("login", config, account_id) != 0:
            raise ConfigError(
                "the login failed, so nothing was written: the sign-in did not complete (above)"
            )
    except ConfigError:
        if secret_file is not None:
            secret_file.unlink(missing_ok=True)
        raise
    return more, secret_file


def forget(account_id: str, settings: dict[str, Any], secret_file: Path | None) -> None:
    """Forget the sign-in :func:`signed_in` kept for the account of ``settings``, and the client secret
    file it wrote (the account was not written after all)."""
    account = Config.model_validate({"accounts": {account_id: settings}}).accounts[account_id]
    refresh_token_store(account_id, account).forget()
    if secret_file is not None:
        secret_file.unlink(missing_ok=True)


def _say(text: str) -> None:
    print(text, flush=True)
