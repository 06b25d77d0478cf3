"""imap_apply_to_messages's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from mail_imap_mcp.envelope import MultiItemData, NextAction, Payload, absent_field
from mail_imap_mcp.operations import OperationRef
from mail_imap_mcp.operations.transfer_words import Action, Outcome
from mail_imap_mcp.presentation import writes
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT, AccountId, MessageIdArg, SearchText
from mail_imap_mcp.presentation.bulk import BY_SEARCH, FOR_QUERY, SEARCH_RUN, UNDO_TOKEN, SearchRun

#: As in MailboxName: no control characters (Dovecot echoes unknown names raw in its NO answer).
MAILBOX_NAME_PATTERN = r"^[^\x00-\x08\x0a-\x1f\x7f]+$"

#: The tool's name, which its flows' answers and next actions call.
NAME = "imap_apply_to_messages"


class ApplyToMessagesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_ids: list[MessageIdArg] | None = Field(
        default=None, min_length=1, max_length=250, description="Ids of one account."
    )
    action: Literal[Action, "unsubscribe"] = Field(
        description="move, copy: to destination_mailbox; delete: to Trash; archive: Gmail."
    )
    # Not MailboxName | None: the flattened schema would show MailboxName's description instead of this one.
    destination_mailbox: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        pattern=MAILBOX_NAME_PATTERN,
        description="An existing mailbox: for move, copy, unsubscribe.",
    )
    permanent: bool = Field(
        default=False,
        description="delete for good (needs allow_permanent_delete and the user's consent).",
    )
    confirm_token: str | None = Field(
        default=None, max_length=200, description=writes.CONFIRM_TOKEN_DESCRIPTION
    )
    dry_run: bool = Field(default=False, description=writes.DRY_RUN_DESCRIPTION)
    query: SearchText | None = Field(default=None, description=BY_SEARCH)
    mailbox: str | None = Field(default=None, max_length=1000, description=FOR_QUERY)
    account_id: AccountId = Field(default=DEFAULT_ACCOUNT, description=FOR_QUERY)
    undo: str | None = Field(default=None, max_length=100, description=UNDO_TOKEN)


class MessageResult(Payload):
    message_id: str = Field(description="The message_id as given.")
    new_message_id: str | None = Field(
        description="Its id in the destination (from the server's COPYUID); null for a permanent delete, a "
        "dry run, a message not moved or copied, or a server that does not report new ids (no UIDPLUS)."
    )
    outcome: Outcome = Field(
        description="moved, copied, moved_to_trash, deleted (for good); would_* in a dry run; not_found, "
        "outcome_unknown, not_attempted or failed (see issues)."
    )


# What a move, copy or delete does in one source mailbox: titled MailboxPlan in the outputSchema, as before.
class TransferMailboxPlan(Payload):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True, title="MailboxPlan")

    source_mailbox: str = Field(description="Mailbox the messages are in.")
    destination_mailbox: str | None = Field(description="Where they go; null for a permanent delete.")
    messages: int = Field(description="Messages found there and acted on (or, in a dry run, to act on).")
    missing: int = Field(description="Ids whose message no longer exists there.")
    method: str = Field(description="The IMAP commands used (or that would be).")


class ApplyToMessagesData(MultiItemData):
    account_id: str = Field(description="Account of the messages.")
    action: Action = Field(description="The action requested.")
    permanent: bool = Field(description="True for a permanent delete.")
    dry_run: bool = Field(description="True: nothing was changed; results say what would happen.")
    destination_mailbox: str | None = Field(
        description="Where the messages went: destination_mailbox, or the Trash for delete."
    )
    requested: int = Field(description="Distinct message ids given.")
    changed: int = Field(description="Messages moved, copied or deleted (in a dry run: that would be).")
    mailboxes: list[TransferMailboxPlan] = Field(
        description="Per source mailbox: what was (or would be) done."
    )
    results: list[MessageResult] = Field(description="One per distinct message id, in the order given.")
    undo: list[NextAction] = Field(
        description="Calls that move the messages back (one per source mailbox), for move and delete."
    )
    background: OperationRef | None = writes.operation_field()
    operation: OperationRef | None = writes.operation_field(deprecated=True)
    search: SearchRun | SkipJsonSchema[None] = absent_field(SEARCH_RUN)
