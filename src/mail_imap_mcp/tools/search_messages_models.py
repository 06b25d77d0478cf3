"""imap_search_messages's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.presentation.arguments import (
    DEFAULT_ACCOUNT,
    SHAPE_DESCRIPTION,
    AccountId,
    MailboxName,
    MessageIdArg,
    SearchText,
    Shape,
)
from mail_imap_mcp.services.search_args import MAX_CURSOR_CHARS, MAX_MAILBOXES


class SearchMessagesInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    account_id: AccountId = DEFAULT_ACCOUNT
    mailbox: MailboxName | None = Field(
        default=None,
        description="From imap_list_mailboxes; '*': all but Trash/Junk. Default INBOX, '*' with query.",
    )
    mailboxes: list[MailboxName] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MAILBOXES,
        description="Several instead of mailbox; may include '*'.",
    )
    sort: Literal["arrival", "date", "relevance"] = Field(
        default="arrival",
        description="arrival (default, also with query): newest received first; date: newest Date "
        "header first; relevance: best match first (local index).",
    )
    query: SearchText | None = Field(
        default=None,
        description='Gmail-style: words (all match), "phrase", from: to: cc: subject: has:attachment '
        "filename: in:box|anywhere is:unread|read|flagged|answered before:/after:2024/1/31 "
        "older_than:/newer_than:7d larger:/smaller:5M OR - ( )",
    )
    about: SearchText | None = Field(
        default=None,
        description="Words describing the mail (the default model: 16 languages, en de fr es it nl pt pl...): "
        "best match by meaning and words first.",
    )
    like: MessageIdArg | None = Field(default=None, description="A message_id: the mail closest in meaning.")
    from_: SearchText | None = Field(default=None, alias="from", description="Sender contains.")
    to: SearchText | None = Field(default=None, description="To contains.")
    cc: SearchText | None = Field(default=None, description="Cc contains.")
    subject: SearchText | None = Field(default=None, description="Subject contains.")
    body: SearchText | None = Field(default=None, description="Body contains.")
    since: date | None = Field(default=None, description="On or after.")
    before: date | None = Field(default=None, description="Before this date (not on it).")
    last_days: int | None = Field(default=None, ge=1, le=36500, description="Received in the last N days.")
    unread_only: bool = Field(default=False, description="Only unread ones.")
    flagged: bool | None = Field(default=None, description="Only flagged (true) or unflagged (false).")
    has_keyword: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9$_.\-]+$",
        description="Only with this keyword, e.g. $Important.",
    )
    larger_than_bytes: int | None = Field(default=None, ge=0, le=2**31, description="Bigger than N bytes.")
    smaller_than_bytes: int | None = Field(default=None, ge=1, le=2**31, description="Smaller than N bytes.")
    needs_reply: bool = Field(
        default=False,
        description="Only mail awaiting the user's reply.",
    )
    limit: int = Field(default=10, ge=1, le=100, description="Messages per page.")
    snippet_chars: int = Field(default=200, ge=0, le=500, description="Snippet length; 0: none.")
    cursor: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CURSOR_CHARS,
        description="data.next_cursor; repeat the other arguments.",
    )
    fields: Shape = Field(default="compact", description=SHAPE_DESCRIPTION)
