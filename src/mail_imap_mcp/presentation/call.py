"""What the failure registry (:mod:`.failures`) knows of the call that failed: the running server and the
tool's arguments as given, from which its words name the account, the message and the rerun."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.mail.ids import InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.state import Caller


class App(Protocol):
    """What the map needs of the running server (:class:`~mail_imap_mcp.app.AppContext`)."""

    @property
    def config(self) -> Config: ...

    @property
    def caller(self) -> Caller: ...

    def resolve_account(self, account_id: str) -> str: ...


@dataclass(frozen=True)
class Call:
    """What the map knows of the call that failed: the server's state and the arguments as given."""

    app: App
    arguments: BaseModel

    def argument(self, name: str) -> Any:
        return getattr(self.arguments, name, None)

    def takes(self, name: str) -> bool:
        """Whether the call's tool has the argument ``name`` (given or not)."""
        return name in type(self.arguments).model_fields

    def rerun_arguments(self) -> dict[str, Any]:
        """The arguments as given, without the position a cursor held: the same call from its start."""
        given = self.arguments.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)
        given.pop("cursor", None)
        return given

    def message_ref(self) -> MessageRef | None:
        """The message the call names (``message_id``), if it names one."""
        value = self.argument("message_id")
        try:
            return parse_message_id(value, self.app.caller) if isinstance(value, str) else None
        except InvalidMessageId:
            return None

    def account(self) -> tuple[str, AccountConfig] | None:
        """The account the call is about (``account_id``, else the account of its ``message_id``)."""
        ref = self.message_ref()
        account_id = ref.account_id if ref is not None else self.argument("account_id")
        if not isinstance(account_id, str):
            return None
        account_id = self.app.resolve_account(account_id)
        config = self.app.config.accounts.get(account_id)
        return None if config is None else (account_id, config)
