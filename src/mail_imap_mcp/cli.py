"""Command line: ``mail-imap-mcp serve`` (stdio MCP server) and ``mail-imap-mcp check``."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path

import anyio

from mail_imap_mcp.config import Config, ConfigError, load_config
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection, ImapSession
from mail_imap_mcp.server import build_server, package_version
from mail_imap_mcp.tools.context import AppContext

LOG_LEVEL_ENV = "MAIL_IMAP_MCP_LOG_LEVEL"
SHUTDOWN_GRACE_S = 0.8


def _configure_logging() -> None:
    # stdout belongs to the MCP protocol; logs go to stderr (Claude Desktop keeps them in its log dir).
    level = os.environ.get(LOG_LEVEL_ENV, "INFO").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        force=True,
    )
    # imapclient's debug output is the raw protocol: message content and login lines. Keep it off
    # even at DEBUG; our own loggers say what a call did without echoing mail or secrets.
    logging.getLogger("imapclient").setLevel(max(logging.INFO, logging.getLogger().level))


def _load(path: Path | None) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        print(f"mail-imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


async def _close(app: AppContext) -> None:
    # Bounded: a call in flight may hold an account's connection; shutdown must not wait for it.
    with anyio.move_on_after(SHUTDOWN_GRACE_S):
        await anyio.to_thread.run_sync(app.close, abandon_on_cancel=True)


async def _serve(config: Config) -> None:
    app = AppContext.from_config(config)
    server = build_server(config, app)
    async with anyio.create_task_group() as group:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    logging.getLogger("mail_imap_mcp").info("signal %s received; shutting down", signum)
                    await _close(app)
                    logging.shutdown()
                    # The stdin reader thread cannot be cancelled; exit without waiting for it.
                    os._exit(0)

        group.start_soon(stop_on_signal)
        await server.run_stdio_async()
        group.cancel_scope.cancel()
    await _close(app)


def serve(config_path: Path | None) -> None:
    config = _load(config_path)
    logging.getLogger("mail_imap_mcp").info(
        "mail-imap-mcp %s serving %d account(s) over stdio", package_version(), len(config.accounts)
    )
    anyio.run(_serve, config)
    logging.getLogger("mail_imap_mcp").info("stopped")
    logging.shutdown()
    sys.stdout.flush()
    # The stdin reader thread may still be blocked in read(); don't let it delay exit.
    os._exit(0)


def check(config_path: Path | None) -> int:
    """Validate the config, log in to every account, print one line each; 0 when all succeed."""
    config = _load(config_path)
    failures = 0
    for account_id, account in sorted(config.accounts.items()):
        target = f"{account.host}:{account.effective_port} ({account.security.value})"
        if account.password is not None:
            print(
                f"warning {account_id}: password is stored inline in the config file; prefer "
                "password_env or password_command"
            )
        connection = AccountConnection(account_id, account)
        started = time.perf_counter()

        def probe(session: ImapSession) -> int:
            return len(session.client.list_folders())

        try:
            mailboxes = connection.run(probe, retry=False)
        except ToolFailure as failure:
            failures += 1
            print(f"FAIL {account_id}: {target} as {account.username}: [{failure.code}] {failure.message}")
        else:
            ms = int((time.perf_counter() - started) * 1000)
            print(
                f"ok   {account_id}: {target} as {account.username}: logged in, {mailboxes} mailbox(es), {ms} ms"
            )
        finally:
            connection.close()
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="mail-imap-mcp", description="MCP server for safe, structured read access to IMAP mail."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("serve", "run the MCP server over stdio"),
        ("check", "validate the config and log in to every account"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument(
            "--config",
            type=Path,
            default=None,
            help="config file (default: $MAIL_IMAP_MCP_CONFIG, else ~/.config/mail-imap-mcp/config.toml)",
        )
    args = parser.parse_args(argv)
    _configure_logging()
    if args.command == "serve":
        serve(args.config)
    else:
        logging.getLogger().setLevel(logging.WARNING)
        raise SystemExit(check(args.config))
