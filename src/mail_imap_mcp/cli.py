"""Command line: ``mail-imap-mcp serve`` (stdio MCP server, also the default), ``check`` and
``config-example``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import anyio

from mail_imap_mcp.config import Config, ConfigError, load_config
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection, ImapSession
from mail_imap_mcp.server import build_server, package_version
from mail_imap_mcp.tools.context import AppContext

LOG_LEVEL_ENV = "MAIL_IMAP_MCP_LOG_LEVEL"
SHUTDOWN_GRACE_S = 0.8


def _configure_logging(default_level: str) -> None:
    # stdout belongs to the MCP protocol; logs go to stderr (Claude Desktop keeps them in its log dir).
    level = os.environ.get(LOG_LEVEL_ENV, default_level).upper()
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


class _AuditFile(logging.Handler):
    """Writes the audit records of writes (``extra={"audit": ...}``) as JSON lines, flushed each time."""

    def __init__(self, path: Path) -> None:
        super().__init__(level=logging.INFO)
        self._file = path.expanduser().open("a", encoding="utf-8")

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "audit", None)
        if fields is None:
            return
        stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        self._file.write(json.dumps({"time": stamp, **fields}, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
        super().close()


def _configure_audit(config: Config) -> None:
    path = config.server.audit_file
    if path is None:
        return
    try:
        handler = _AuditFile(path)
    except OSError as exc:
        print(f"mail-imap-mcp: server.audit_file: cannot open {path} ({exc.strerror})", file=sys.stderr)
        raise SystemExit(2) from None
    audit_logger = logging.getLogger("mail_imap_mcp.audit")
    audit_logger.setLevel(logging.INFO)
    audit_logger.addHandler(handler)


def serve(config_path: Path | None) -> None:
    config = _load(config_path)
    _configure_audit(config)
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


def config_example() -> str:
    """The commented example configuration shipped with the package."""
    return resources.files("mail_imap_mcp").joinpath("config.example.toml").read_text(encoding="utf-8")


_CONFIG_HELP = "config file (default: $MAIL_IMAP_MCP_CONFIG, else ~/.config/mail-imap-mcp/config.toml)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="mail-imap-mcp",
        description="MCP server for safe, structured read access to IMAP mail. Without a command it "
        "serves MCP over stdio, as `serve` does.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.add_argument("--config", type=Path, default=None, help=_CONFIG_HELP)
    commands = parser.add_subparsers(dest="command")
    for name, help_text in (
        ("serve", "run the MCP server over stdio (the default)"),
        ("check", "validate the config and log in to every account"),
    ):
        # SUPPRESS: `--config` given before the command is not reset by the subcommand's default.
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=_CONFIG_HELP)
    commands.add_parser("config-example", help="print a commented example config file")
    args = parser.parse_args(argv)
    if args.command == "config-example":
        sys.stdout.write(config_example())
        return
    if args.command == "check":
        _configure_logging("WARNING")
        raise SystemExit(check(args.config))
    _configure_logging("INFO")
    if args.command is None and sys.stdin.isatty():
        print(
            "mail-imap-mcp: serving MCP over stdio (the default command, `serve`). An MCP client such as "
            "Claude Desktop starts it this way; to test your settings run `mail-imap-mcp check`, "
            "and Ctrl-C to stop.",
            file=sys.stderr,
        )
    serve(args.config)
