"""A call of a service that writes, for mail kept in memory: :class:`MemoryWriteCall` adds to
:class:`~tests.support.mail.memory_mail.MemoryCall` the gate of a write (the writing capability's,
refused where ``write_enabled`` is off, as the tool's runner refuses it) and the user's answers to what
they are asked to confirm, each kept as asked."""

from __future__ import annotations

from mail_imap_mcp.asking.records import Confirm
from mail_imap_mcp.capabilities import WRITING
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from tests.support.mail.memory_mail import MemoryCall, MemoryMail


class MemoryWriteCall(MemoryCall):
    """``answers``: the user's yes or no to each confirmation in turn (none left: the client cannot ask);
    ``asked``: each :class:`Confirm` as asked; ``gated``: the accounts a write was gated on."""

    def __init__(
        self,
        accounts: dict[str, MemoryMail],
        settings: dict[str, dict[str, object]] | None = None,
        *,
        answers: list[bool] | None = None,
    ) -> None:
        super().__init__(accounts, settings)
        self.answers = list(answers or [])
        self.asked: list[Confirm] = []
        self.gated: list[str] = []

    def write_connection(self, account_id: str) -> str:
        WRITING.gate(self.config, account_id)
        self.gated.append(account_id)
        return account_id

    def ask(self, request: Confirm) -> None:
        self.asked.append(request)
        if not self.answers:
            raise ToolFailure(ErrorCode.PERMISSION_DENIED, request.refusal or "cannot ask", retryable=False)
        if not self.answers.pop(0):
            raise ToolFailure(ErrorCode.CONFIRMATION_REQUIRED, "declined", retryable=False)
