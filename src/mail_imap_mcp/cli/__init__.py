"""Command line: ``mail-imap-mcp serve`` (stdio MCP server, also the default), ``check``, ``setup``
(:mod:`mail_imap_mcp.cli.setup`), ``index`` (:mod:`mail_imap_mcp.cli.index`), ``login``, ``logout`` and
``status`` (:mod:`mail_imap_mcp.cli.login`) and ``config-example``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mail_imap_mcp.cli.login_flags import BROWSER_WAIT_S, add_login_arguments
from mail_imap_mcp.cli.setup_flags import add_setup_arguments
from mail_imap_mcp.cli.startup import collector_paused
from mail_imap_mcp.config import AccountConfig, AuthMethod, Config, ConfigError, load_config
from mail_imap_mcp.config.faults import sending_without_writes
from mail_imap_mcp.config.local_files import refuse_over_http
from mail_imap_mcp.credentials.sign_in_here import set_aside_sign_ins_without_keychain
from mail_imap_mcp.version import package_version

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession
    from mail_imap_mcp.net.tokens import Credentials

# The MCP SDK and the transports are imported by `serve` alone: `check`, `config-example` and
# `--version` start without them, in a fraction of the time (tests/unit/test_architecture.py); `check`'s
# IMAP and submission probes by `check` alone (tests/unit/test_start_cost.py).

LOG_LEVEL_ENV = "MAIL_IMAP_MCP_LOG_LEVEL"


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


def serve(config_path: Path | None, http: dict[str, Any] | None = None) -> None:
    """Serve MCP over stdio, or over streamable HTTP when ``http`` holds the command-line overrides
    of ``[http]`` (``host``, ``port``, ...)."""
    config = _load(config_path)
    _configure_audit(config)
    set_aside_sign_ins_without_keychain(config.accounts)
    for account_id, account in sorted(config.accounts.items()):
        for fault in account.faults:
            # Served all the same: the client shows the account as unusable, with the field to correct.
            logging.getLogger("mail_imap_mcp").warning(
                "account %r cannot be used until %s is corrected: it %s",
                account_id,
                fault.named,
                fault.reason,
            )
        if (noted := sending_without_writes(account, config.writes_allowed(account_id))) is not None:
            logging.getLogger("mail_imap_mcp").warning(
                "account %r: %s %s", account_id, noted.named, noted.reason
            )
    if http is None:
        with collector_paused():
            from mail_imap_mcp.transport.stdio import serve_stdio

        logging.getLogger("mail_imap_mcp").info(
            "mail-imap-mcp %s serving %d account(s) over stdio", package_version(), len(config.accounts)
        )
        _run_or_refuse(serve_stdio, config)
    else:
        try:
            settings = config.http.with_overrides(**http)
            refuse_over_http(config.server.attachment_dirs, config.server.download_dir, "the HTTP transport")
            token = settings.resolve_token()
            # Only settings that can serve load the SDK and the HTTP stack: a refusal comes at once.
            with collector_paused():
                from mail_imap_mcp.transport.http import bind, serve_http

            sock = bind(settings.host, settings.port)
        except ConfigError as exc:
            print(f"mail-imap-mcp: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        logging.getLogger("mail_imap_mcp").info(
            "mail-imap-mcp %s serving %d account(s) over HTTP", package_version(), len(config.accounts)
        )
        _run_or_refuse(serve_http, config, settings, token, sock)
    logging.getLogger("mail_imap_mcp").info("stopped")
    logging.shutdown()
    sys.stdout.flush()
    # The stdin reader thread may still be blocked in read(); don't let it delay exit.
    os._exit(0)


def _run_or_refuse(serve: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run a transport; a setting it cannot start with ([state]'s Redis out of reach, an introspection
    secret missing) is one line and exit status 2, as for any other setting."""
    try:
        anyio.run(serve, *args)
    except ConfigError as exc:
        print(f"mail-imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:  # Ctrl-C where the event loop takes no signal handler (Windows)
        logging.getLogger("mail_imap_mcp").info("interrupted; shutting down")


def check(config_path: Path | None) -> int:
    """Validate the config, log in to every account, print one line each; 0 when all succeed."""
    from mail_imap_mcp.credentials.logins import credentials_for
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.imap.mailboxes import list_mailboxes
    from mail_imap_mcp.mail.errors import MailError
    from mail_imap_mcp.presentation.failures import envelope_of

    config = _load(config_path)
    set_aside_sign_ins_without_keychain(config.accounts)  # said as login and the server say it
    failures = 0
    for account_id, account in sorted(config.accounts.items()):
        how = account.security.value
        if account.auth is not AuthMethod.PASSWORD:
            how += f", {account.auth.value}"
        target = f"{account.host}:{account.effective_port} ({how})" if not account.faults else "not usable"
        if account.per_user:
            # A template logs in as each signed-in user: there is nobody to log in as here.
            print(f"skip {account_id}: {target}: per_user template, logged in as each user who signs in")
            continue
        if account.password is not None:
            print(
                f"warning {account_id}: password is stored inline in the config file; prefer "
                "password_env or password_command"
            )
        connection = AccountConnection(account_id, account, credentials=credentials_for(account_id, account))
        started = time.perf_counter()

        def probe(session: ImapSession) -> int:
            return len(list_mailboxes(session))

        mailboxes: int | None = None
        try:
            mailboxes = connection.run(probe, retry=False)
        except MailError as exc:
            # The CLI's one boundary, as the tool runner is the server's: a domain error in the tools'
            # words (the failure registry), as a tool call would say it.
            failure = envelope_of(exc)
            failures += 1
            print(f"FAIL {account_id}: {target} as {account.username}: [{failure.code}] {failure.message}")
        else:
            ms = int((time.perf_counter() - started) * 1000)
            print(
                f"ok   {account_id}: {target} as {account.username}: logged in, {mailboxes} mailbox(es), {ms} ms"
            )
        finally:
            connection.close()
        # Only once the login works: a failure's line stays the one thing to act on.
        if mailboxes is not None and not account.effective_addresses:
            print(
                f"note    {account_id}: the username is not an email address; set {account.setting('addresses')} "
                "to your addresses so results call mail to you 'me' and drafts have a From"
            )
        if account.send_enabled and account.submission is None:  # reading works; a send would be refused
            print(
                f"note    {account_id}: sending is on but no SMTP server is known: set {account.named('smtp_host')}"
            )
        elif account.send_enabled and not account.faults:  # an unusable account contacts no server
            failures += not _check_submission(account_id, account, connection.credentials)
        if (noted := sending_without_writes(account, config.writes_allowed(account_id))) is not None:
            print(f"note    {account_id}: {noted.named} {noted.reason}")
    failures += not _check_meaning(config)
    return 1 if failures else 0


def _check_meaning(config: Config) -> bool:
    """Search by meaning's line, where an index is to keep vectors: the model read, or why it cannot be
    (a note where the meaning extra is missing; a failure where ``[index] meaning_model_dir`` is unusable)."""
    from mail_imap_mcp.meaning.model import MeaningUnavailable, model_for

    accounts = ", ".join(
        account_id for account_id in sorted(config.accounts) if config.meaning_indexed(account_id)
    )
    if not accounts:
        return True
    try:
        model = model_for(config)
    except MeaningUnavailable as exc:
        if config.index.meaning_model_dir is None:
            print(f"note    search by meaning ({accounts}): unavailable: {exc}")
            return True
        print(f"FAIL search by meaning ({accounts}): {exc}")
        return False
    print(
        f"ok   search by meaning ({accounts}): model {model.name} ({model.dimensions} dimensions), read locally"
    )
    return True


def _check_submission(account_id: str, account: AccountConfig, credentials: Credentials) -> bool:
    """The submission server's line: reached, secured and logged in to (nothing sent), or why not."""
    from mail_imap_mcp.cli.submission_check import failure_words, reach, reached_words, submission_target
    from mail_imap_mcp.smtp.errors import SubmissionError

    target = f"submission {submission_target(account)} as {account.username}"
    try:
        reached, not_tried = reach(account, credentials)
    except SubmissionError as exc:
        print(f"FAIL {account_id}: {target}: {failure_words(exc, _in_words, account.named('smtp_security'))}")
        return False
    print(f"ok   {account_id}: {target}: {reached_words(reached, not_tried)}")
    return True


def _in_words(exc: Exception) -> str:
    """A domain error (of IMAP or submission) as a tool call would say it (the failure registry)."""
    from mail_imap_mcp.presentation.failures import tool_failure

    failure = tool_failure(exc, None)
    assert failure is not None  # every domain error is in the registry
    return f"[{failure.code}] {failure.message}"


def config_example() -> str:
    """The commented example configuration shipped with the package."""
    return resources.files("mail_imap_mcp").joinpath("config.example.toml").read_text(encoding="utf-8")


_CONFIG_HELP = "config file (default: $MAIL_IMAP_MCP_CONFIG, else ~/.config/mail-imap-mcp/config.toml)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="mail-imap-mcp",
        description="MCP server for safe, structured access to IMAP mail: reading, writes where turned on, "
        "and sending a draft the user approved where sending is on. Without a command it serves MCP over "
        "stdio, as `serve` does.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.add_argument("--config", type=Path, default=None, help=_CONFIG_HELP)
    commands = parser.add_subparsers(dest="command")
    subs = {}
    for name, help_text in (
        ("serve", "run the MCP server over stdio (the default) or streamable HTTP"),
        ("check", "validate the config and log in to every account"),
    ):
        # SUPPRESS: `--config` given before the command is not reset by the subcommand's default.
        subs[name] = sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=_CONFIG_HELP)
    _add_http_arguments(subs["serve"])
    index = commands.add_parser("index", help="build or update the local search index (or --drop it)")
    index.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=_CONFIG_HELP)
    index.add_argument("--account", metavar="ID", help="this account only (default: every indexed one)")
    index.add_argument("--drop", action="store_true", help="delete the index file(s) instead")
    index.add_argument(
        "--status", action="store_true", help="list each index's place, messages and folders built instead"
    )
    index.add_argument(
        "--user",
        metavar="NAME",
        help="with --drop and --account: delete this team user's index only (index_per_user)",
    )
    commands.add_parser("config-example", help="print a commented example config file")
    setup = commands.add_parser(
        "setup",
        help="set up an account: ask, log in, keep the password in the keychain, write the config file and "
        "print what to paste into Claude Desktop, Claude Code, VS Code and Cursor",
    )
    setup.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=_CONFIG_HELP)
    add_setup_arguments(setup)
    add_login_arguments(commands, _CONFIG_HELP)
    args = parser.parse_args(argv)
    if args.command in {"login", "logout", "status"}:
        _configure_logging("WARNING")
        from mail_imap_mcp.cli.login import run as run_login_command

        raise SystemExit(
            run_login_command(
                args.command,
                _load(args.config),
                args.account,
                getattr(args, "device", False),
                getattr(args, "wait", BROWSER_WAIT_S),
            )
        )
    if args.command == "setup":
        _configure_logging("WARNING")
        from mail_imap_mcp.cli.setup import run_setup

        raise SystemExit(run_setup(args, words=_in_words))
    if args.command == "config-example":
        sys.stdout.write(config_example())
        return
    if args.command == "check":
        _configure_logging("WARNING")
        raise SystemExit(check(args.config))
    if args.command == "index":
        _configure_logging("WARNING")
        with collector_paused():
            from mail_imap_mcp.cli.index import run_index

        config = _load(args.config)
        try:
            done = run_index(
                config, args.account, drop=args.drop, words=_in_words, user=args.user, status=args.status
            )
        except ConfigError as exc:  # an engine it cannot open (its extra missing): one line, as serve says it
            print(f"mail-imap-mcp index: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        raise SystemExit(done)
    _configure_logging("INFO")
    if args.command is None and sys.stdin.isatty():
        print(
            "mail-imap-mcp: serving MCP over stdio (the default command, `serve`). An MCP client such as "
            "Claude Desktop starts it this way; to test your settings run `mail-imap-mcp check`, "
            "and Ctrl-C to stop.",
            file=sys.stderr,
        )
    if getattr(args, "transport", "stdio") == "http":
        serve(args.config, http={key: getattr(args, key) for key in _HTTP_FLAGS})
        return
    if any(getattr(args, key, None) is not None for key in _HTTP_FLAGS):
        parser.error("--host, --port, --allowed-host and --allowed-origin need --transport http")
    serve(args.config)


#: `serve` flags that override keys of `[http]` (argparse destinations = the keys' names).
_HTTP_FLAGS = ("host", "port", "allowed_hosts", "allowed_origins")


def _add_http_arguments(serve_parser: argparse.ArgumentParser) -> None:
    serve_parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default): one client that starts this process; http: streamable HTTP at /mcp "
        "for clients that connect over the network (see [http] in the config)",
    )
    serve_parser.add_argument("--host", help="HTTP: address to listen on (default: [http] host, 127.0.0.1)")
    serve_parser.add_argument(
        "--port", type=int, help="HTTP: TCP port (default: [http] port, 8000; 0 picks a free one)"
    )
    serve_parser.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        metavar="HOST",
        help="HTTP: accept this Host header (repeatable; replaces [http] allowed_hosts)",
    )
    serve_parser.add_argument(
        "--allowed-origin",
        dest="allowed_origins",
        action="append",
        metavar="ORIGIN",
        help="HTTP: accept this Origin header (repeatable; replaces [http] allowed_origins)",
    )
