"""imap_manage_mailbox's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import MultiItemData
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT, AccountId
from mail_imap_mcp.presentation.writes import CONFIRM_TOKEN_DESCRIPTION, DRY_RUN_DESCRIPTION

Action = Literal["create", "rename", "delete"]


# Control characters (C0, DEL, C1, Unicode line/paragraph separators): protocol syntax, never a name.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _check_name(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("must not contain control characters (CR, LF, NUL, TAB, ...)")
    if "*" in value or "%" in value:
        raise ValueError("must not contain '*' or '%' (the wildcards of IMAP LIST)")
    if not value.strip():
        raise ValueError("must not be blank")
    return value


MailboxArg = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_check_name)]


class ManageMailboxInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    account_id: AccountId = DEFAULT_ACCOUNT
    action: Action = Field(description="rename: to destination_mailbox.")
    mailbox: MailboxArg = Field(description="With the server's separator, e.g. 'Projects/2024'.")
    destination_mailbox: MailboxArg | None = Field(default=None, description="rename: the new name.")
    confirm_token: str | None = Field(default=None, max_length=200, description=CONFIRM_TOKEN_DESCRIPTION)
    dry_run: bool = Field(default=False, description=DRY_RUN_DESCRIPTION)


class ManageMailboxData(MultiItemData):
    account_id: str = Field(description="Account of the mailbox.")
    action: Action = Field(description="What was done (or, with dry_run, would be done).")
    mailbox: str = Field(
        description="The mailbox acted on, in the server's spelling (prefix added if needed)."
    )
    destination_mailbox: str | None = Field(description="rename: the new name, in the server's spelling.")
    result_mailbox: str | None = Field(
        description="The mailbox that exists afterwards (create: the new one; rename: the new name; "
        "delete: null)."
    )
    messages: int | None = Field(
        description="Messages in the mailbox (rename: moved with it; delete: 0), null when unknown."
    )
    child_mailboxes: list[str] = Field(description="rename: child mailboxes that move along with it.")
    dry_run: bool = Field(description="True: nothing was changed; `plan` says what would happen.")
    changed: bool = Field(description="True when the server confirmed the change.")
    plan: str = Field(description="What was done, or would be done, in words.")
