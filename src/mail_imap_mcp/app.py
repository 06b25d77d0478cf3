"""What every tool handler gets: the configuration and the account connections."""

from __future__ import annotations

from dataclasses import dataclass, field

from mail_imap_mcp.config import Config
from mail_imap_mcp.confirmation import ConfirmationGate
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap import sealing
from mail_imap_mcp.imap.attachment_errors import AttachmentTooLarge, ModeUnsupported
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.draft_errors import DraftNotReplaceable
from mail_imap_mcp.imap.name_errors import MailboxNameRefused, MailboxNameUnknown
from mail_imap_mcp.imap.pool import ConnectionPool
from mail_imap_mcp.imap.watch import WatchHub, WatchSettings
from mail_imap_mcp.operations import OperationRegistry
from mail_imap_mcp.presentation import failures
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT


@dataclass
class AppContext:
    """Shared state of a running server."""

    config: Config
    pool: ConnectionPool
    confirmations: ConfirmationGate = field(default_factory=ConfirmationGate)
    operations: OperationRegistry = field(default_factory=OperationRegistry)
    #: The connections that watch subscribed mailboxes (resources/subscribe).
    watches: WatchHub = field(init=False)

    def __post_init__(self) -> None:
        server = self.config.server
        self.watches = WatchHub(
            self.pool.new_connection,
            WatchSettings(
                max_connections=server.max_watch_connections,
                poll_interval_s=server.watch_poll_interval_s,
                idle_restart_s=server.watch_idle_restart_s,
            ),
        )

    @classmethod
    def from_config(cls, config: Config) -> AppContext:
        sealing.load_key(config.server.state_dir or sealing.default_state_dir())
        pool = ConnectionPool(
            dict(config.accounts),
            keepalive_interval_s=config.server.keepalive_interval_s,
            summary_cache_entries=config.server.summary_cache_entries,
            # A tool's own refusal inside an operation is judged on the mailbox's view, like the IMAP
            # layer's: when the view turns out stale, the read runs again instead.
            judged_on_the_view=(
                ToolFailure,
                AttachmentTooLarge,
                ModeUnsupported,
                DraftNotReplaceable,
                MailboxNameUnknown,
                MailboxNameRefused,
            ),
        )
        gate = ConfirmationGate(tokens_for_irreversible=config.server.confirm_without_elicitation)
        return cls(config=config, pool=pool, confirmations=gate)

    def resolve_account(self, account_id: str) -> str:
        if (
            account_id == DEFAULT_ACCOUNT
            and account_id not in self.config.accounts
            and len(self.config.accounts) == 1
        ):
            return next(iter(self.config.accounts))
        return account_id

    def connection(self, account_id: str) -> AccountConnection:
        """The account's connection; ``AccountUnknown`` (worded by the tool runner) when none is configured."""
        return self.pool.get(self.resolve_account(account_id))

    @staticmethod
    def failure_of(exc: Exception) -> ToolFailure | None:
        """The registry's words of a failure a service goes on past, for an issue of its partial answer
        (services import nothing of ``presentation/``; see ``presentation.failures.failure_of``): None
        for a domain error its caller answers itself and for a bug, to be raised."""
        return failures.failure_of(exc)

    @property
    def writes_possible(self) -> bool:
        """Whether any account allows writes (otherwise write tools are not listed)."""
        return any(self.config.writes_allowed(account_id) for account_id in self.config.accounts)

    def write_connection(self, account_id: str) -> AccountConnection:
        """The connection of ``account_id`` for a write; ``permission_denied`` when writes are off."""
        connection = self.connection(account_id)
        if not self.config.writes_allowed(connection.account_id):
            account = self.config.accounts[connection.account_id]
            how = (
                f"{account.setting('write_enabled', 'true')}"
                if account.write_enabled is not None
                else "write_enabled = true in [server] (or MAIL_IMAP_WRITE_ENABLED=true), or "
                f"{account.setting('write_enabled', 'true')} for this account only"
            )
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"Writes are turned off for account {connection.account_id!r}; nothing was changed. "
                f"To allow them, the user sets {how}.",
                details={"account_id": connection.account_id, "setting": "write_enabled"},
            )
        return connection

    def close(self) -> None:
        self.watches.close()
        self.pool.close_all()
