"""imap_update_message_flags's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from mail_imap_mcp.envelope import MultiItemData, Payload, absent_field
from mail_imap_mcp.mail.write_records import FlagOperation
from mail_imap_mcp.operations import OperationRef
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT, AccountId, MessageIdArg, SearchText
from mail_imap_mcp.presentation.bulk import BY_SEARCH, FOR_QUERY, SEARCH_RUN, UNDO_TOKEN, SearchRun
from mail_imap_mcp.presentation.writes import DRY_RUN_DESCRIPTION, operation_field

#: The tool's name, which its flows' answers and next actions call.
NAME = "imap_update_message_flags"


class UpdateFlagsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_ids: list[MessageIdArg] | None = Field(
        default=None, min_length=1, max_length=250, description="Ids of one account, any mailboxes."
    )
    operation: FlagOperation = Field(description="replace: make them the only flags (\\Deleted kept).")
    flags: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="\\Seen (read), \\Flagged, \\Answered, \\Draft or keywords like $Important.",
    )
    labels: list[str] | None = Field(default=None, max_length=32, description="Gmail labels.")
    dry_run: bool = Field(default=False, description=DRY_RUN_DESCRIPTION)
    query: SearchText | None = Field(default=None, description=BY_SEARCH)
    mailbox: str | None = Field(default=None, max_length=1000, description=FOR_QUERY)
    account_id: AccountId = Field(default=DEFAULT_ACCOUNT, description=FOR_QUERY)
    undo: str | None = Field(default=None, max_length=100, description=UNDO_TOKEN)


class FlagResult(Payload):
    message_id: str = Field(description="The message, as given.")
    mailbox: str = Field(description="Its mailbox.")
    uid: int = Field(description="Its UID.")
    flags: list[str] = Field(
        description="Its flags after the change (dry_run: as they would be), read back from the server; "
        "the session flag \\Recent is left out."
    )
    previous_flags: list[str] = Field(description="Its flags before the change.")
    changed: bool = Field(description="Whether its flags or labels changed (dry_run: would change).")
    labels: list[str] | SkipJsonSchema[None] = absent_field(
        "Its Gmail labels after the change, when labels were given."
    )
    previous_labels: list[str] | SkipJsonSchema[None] = absent_field(
        "Its Gmail labels before the change, when labels were given."
    )
    new_message_id: str | SkipJsonSchema[None] = absent_field(
        "Its id in All Mail, where the label change took it out of its mailbox (Inbox removed: archived)."
    )


# What a flag change does in one mailbox: titled MailboxPlan in the outputSchema, as before.
class FlagsMailboxPlan(Payload):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True, title="MailboxPlan")

    mailbox: str = Field(description="Mailbox of some of the messages.")
    uidvalidity: int = Field(description="Its UIDVALIDITY (the one in the message ids).")
    messages: int = Field(description="Messages of the request found in it.")
    changed: int = Field(description="Of those, messages whose flags changed (dry_run: would change).")
    conditional: bool = Field(
        description="True when the replace was conditional (CONDSTORE UNCHANGEDSINCE): messages changed "
        "by another client meanwhile were left alone. A server without CONDSTORE (e.g. Courier) gets a "
        "plain replace."
    )


class UpdateFlagsData(MultiItemData):
    account_id: str = Field(description="Account of the messages.")
    operation: FlagOperation = Field(description="The operation, as given.")
    flags: list[str] = Field(description="The flags, in canonical spelling, without duplicates.")
    labels: list[str] | SkipJsonSchema[None] = absent_field("The labels, as given (Gmail).")
    dry_run: bool = Field(description="True: nothing was changed; flags and changed show the plan.")
    requested: int = Field(description="Distinct message ids given.")
    changed: int = Field(description="Messages whose flags changed (dry_run: would change).")
    messages: list[FlagResult] = Field(description="Messages handled, in the order given (failures: issues).")
    mailboxes: list[FlagsMailboxPlan] = Field(description="Per mailbox: messages found and changed.")
    # Not "operation": that name is the add/remove/replace argument, echoed above.
    background: OperationRef | None = operation_field()
    search: SearchRun | SkipJsonSchema[None] = absent_field(SEARCH_RUN)
