"""imap_save_draft's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from mail_imap_mcp.content.drafts import (
    MAX_BODY_BYTES,
    MAX_RECIPIENTS,
    check_address,
    check_body,
    check_header_text,
)
from mail_imap_mcp.envelope import MultiItemData, NextAction, Payload
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT, AccountId
from mail_imap_mcp.presentation.shapes import UntrustedContent

AddressArg = Annotated[str, Field(min_length=3, max_length=500), AfterValidator(check_address)]

#: The tool's name, which its answers' next actions call.
NAME = "imap_save_draft"


#: At most this many attachments on one draft.
MAX_ATTACHMENTS = 20


class SaveDraftInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    account_id: AccountId = DEFAULT_ACCOUNT
    to: list[AddressArg] = Field(
        default_factory=list,
        max_length=MAX_RECIPIENTS,
        description="'a@b.example' or 'Name <a@b.example>'; a reply's default: its Reply-To or From.",
    )
    cc: list[AddressArg] = Field(
        default_factory=list,
        max_length=MAX_RECIPIENTS,
        description="Cc recipients.",
    )
    bcc: list[AddressArg] = Field(
        default_factory=list,
        max_length=MAX_RECIPIENTS,
        description="Bcc: sent to, never shown to the others.",
    )
    subject: Annotated[str, Field(max_length=998), AfterValidator(check_header_text)] | None = Field(
        default=None,
        description="A reply's default: 'Re: ' and its subject.",
    )
    body_text: Annotated[str, AfterValidator(check_body)] = Field(
        default="", max_length=MAX_BODY_BYTES, description="Plain text."
    )
    in_reply_to: str | None = Field(
        default=None,
        min_length=8,
        max_length=2000,
        description="message_id of the message answered.",
    )
    reply_all: bool = Field(
        default=False,
        description="A reply: also Cc its To and Cc (not you).",
    )
    from_address: AddressArg | None = Field(
        default=None,
        description="One of the account's addresses; default: the one a reply's original went to.",
    )
    replace_message_id: str | None = Field(
        default=None,
        min_length=8,
        max_length=2000,
        description="message_id of a draft to replace; one with attachments needs the user's consent.",
    )
    attachments: list[Annotated[str, Field(min_length=1, max_length=4096)]] | None = Field(
        default=None,
        max_length=MAX_ATTACHMENTS,
        description="Each '<message_id>#<part_id>' (a part imap_get_message lists) or a file's path in "
        "attachment_dirs. A revision keeps its own unless given.",
    )
    forward_of: str | None = Field(
        default=None, min_length=8, max_length=2000, description="message_id of a message to forward."
    )
    forward_as: Literal["inline", "attachment"] = Field(
        default="inline", description="attachment: the message whole (.eml)."
    )
    reply_to_invitation: str | None = Field(
        default=None,
        min_length=8,
        max_length=2000,
        description="message_id of an invitation to answer; body_text: a comment.",
    )
    invitation_answer: Literal["accept", "tentative", "decline"] = Field(
        default="accept", description="The answer."
    )
    dry_run: bool = Field(default=False, description="true: return the message; save nothing.")


class DraftAttachment(Payload):
    name: str = Field(description="The file name recipients see.")
    content_type: str = Field(description="MIME type, e.g. application/pdf.")
    size_bytes: int = Field(description="Decoded size.")
    source: str = Field(description="Where it comes from, as the user is shown it.")


class DraftMessage(Payload):
    headers: dict[str, str] = Field(description="The draft's headers, decoded (as a mail client shows them).")
    body_text: str | None = Field(description="The whole text, quote included (dry_run only, else null).")
    size_bytes: int = Field(description="Size of the message as saved (RFC 5322, CRLF).")
    attachments: list[DraftAttachment] = Field(default_factory=list, description="Its attachments.")
    forwarded: str | None = Field(default=None, description="The message forwarded: its subject and sender.")
    invitation_reply: str | None = Field(default=None, description="The invitation's answer in words.")


class SaveDraftData(MultiItemData):
    account_id: str = Field(description="Account of the draft.")
    mailbox: str = Field(
        description="The Drafts folder (special-use \\Drafts, else the drafts_mailbox setting)."
    )
    message_id: str | None = Field(
        description="message_id of the saved draft (null on dry_run, or when it could not be located)."
    )
    located_by: Literal["appenduid", "search"] | None = Field(
        description="How message_id was found: appenduid (the server's APPEND answer, UIDPLUS) or search "
        "(one UID SEARCH for its Message-ID header, servers without UIDPLUS)."
    )
    header_message_id: str = Field(description="The Message-ID header of the draft.")
    in_reply_to: str | None = Field(description="message_id of the message answered, if any.")
    replaced_message_id: str | None = Field(
        description="message_id of the draft this one replaced and that was moved to Trash (null when none "
        "was, or when it could not be: data.issues says why)."
    )
    replaced_trash_message_id: str | None = Field(
        default=None,
        description="The replaced draft's message_id in Trash (null when none was replaced, or the server "
        "did not say and no single message there carries its Message-ID).",
    )
    undo: list[NextAction] = Field(
        default_factory=list,
        description="With replace_message_id: the calls that undo the revision, in order (the replaced "
        "draft moved back from Trash as it was, then the new one moved to Trash).",
    )
    flags: list[str] = Field(description="Flags the draft was saved with.")
    saved: bool = Field(description="True when the server confirmed the APPEND. Nothing is ever sent.")
    dry_run: bool = Field(description="True: nothing was saved; draft.body_text shows the message.")
    draft: DraftMessage = Field(description="The message (as saved, or as it would be saved).")
    untrusted_content: UntrustedContent
