"""imap_manage_rules's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from mail_imap_mcp.envelope import Payload
from mail_imap_mcp.operations.background import OperationRef
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT, AccountId
from mail_imap_mcp.presentation.writes import operation_field

Action = Literal["list", "get", "try", "save", "delete", "enable", "disable", "undo"]

# Control characters (C0, DEL, C1, Unicode line/paragraph separators): never part of a rule's text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _no_control(value: str) -> str:
    if (found := _CONTROL.search(value)) is not None:
        raise ValueError(f"must not contain control characters (found U+{ord(found.group()):04X})")
    if not value.strip():
        raise ValueError("must not be blank")
    if "${" in value:  # expanded where a script requires variables or encoded-character: never literal
        raise ValueError("must not contain '${'")
    return value


_ADDRESS = re.compile(r"[^@\s<>,;\"()\[\]\\]+@[^@\s<>,;\"()\[\]\\]+")


def _address(value: str) -> str:
    if not _ADDRESS.fullmatch(value):
        raise ValueError("must be one plain address, name@domain")
    return value


Text = Annotated[str, AfterValidator(_no_control)]
Address = Annotated[
    str, Field(min_length=3, max_length=254), AfterValidator(_no_control), AfterValidator(_address)
]
Flag = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_no_control)]


_REJECT = (
    "A reject is not offered: it answers the envelope's return path, often forged (backscatter), with a "
    "refusal the server words, which the user cannot approve in advance; a rule filing into the Trash "
    "discards without sending anything"
)
#: Actions a rule may not take, by the argument a caller would name them with, and why (docs/rules.md).
NOT_OFFERED = {
    "reject": _REJECT,
    "ereject": _REJECT,
    "notify": "A notification is not offered: it sends to an address or service (mailto:, xmpp:...) outside "
    "allowed_recipients, with text the server composes from each message",
}
#: The longest reply text of a vacation rule, and its subject (one line).
VACATION_TEXT_CHARS = 2000
VACATION_SUBJECT_CHARS = 200
#: ``:days`` of a vacation rule unless ``vacation_days`` says otherwise: at most one reply to a sender in that
#: many days (RFC 5230's default), at most a year (a server clamps it to its own bounds, RFC 5230 4.1).
VACATION_DAYS = 7
MAX_VACATION_DAYS = 365
# The reply's text may run over lines; no line of it starts with '#' (the rules' script marks its own lines
# with it: a rule's settings, the section's start and end).
_TEXT_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _reply_text(value: str) -> str:
    value = value.replace("\r\n", "\n")
    if (found := _TEXT_CONTROL.search(value)) is not None:
        raise ValueError(
            f"must not contain control characters but line breaks (found U+{ord(found.group()):04X})"
        )
    if not value.strip():
        raise ValueError("must not be blank")
    if "${" in value:
        raise ValueError("must not contain '${'")
    if any(line.startswith("#") for line in value.split("\n")):
        raise ValueError("no line may start with '#'")
    return value


ReplyText = Annotated[str, Field(max_length=VACATION_TEXT_CHARS), AfterValidator(_reply_text)]


def _days(value: int) -> int:
    if not 1 <= value <= MAX_VACATION_DAYS:
        raise ValueError(f"must be from 1 to {MAX_VACATION_DAYS} (days between two replies to a sender)")
    return value


#: Its bounds are checked, not published: the surface had no room for them (docs/rules.md).
VacationDays = Annotated[int, AfterValidator(_days)]


class ManageRulesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _not_offered(cls, data: object) -> object:
        """invalid_input naming the argument of an action no rule here takes, and why."""
        for name, why in NOT_OFFERED.items():
            if isinstance(data, dict) and name in data:
                raise PydanticCustomError("not_offered", "{why}", {"parameter": name, "why": why})
        return data

    account_id: AccountId = DEFAULT_ACCOUNT
    action: Action = Field(description="try: dry run. undo: revert last change.")
    name: Annotated[Text, Field(max_length=100)] | None = Field(default=None, description="Rule name.")
    query: Annotated[Text, Field(max_length=500)] | None = Field(
        default=None, description="Condition (search query)."
    )
    mailbox: Annotated[Text, Field(max_length=1000)] | None = Field(default=None, description="File into it.")
    flags: list[Flag] = Field(default_factory=list, max_length=20, description="To add; '-X' removes X.")
    stop: bool = Field(default=True, description="No later rule runs.")
    redirect: list[Address] = Field(
        default_factory=list, max_length=10, description="Forward a copy to; user approves."
    )
    vacation: ReplyText | None = Field(
        default=None, description="Auto-reply text to allowed senders; user approves."
    )
    vacation_days: VacationDays = Field(
        default=VACATION_DAYS, description="Days between replies to a sender."
    )
    vacation_subject: Annotated[Text, Field(max_length=VACATION_SUBJECT_CHARS)] | None = Field(
        default=None, description="Its subject."
    )

    @property
    def sends(self) -> bool:
        """Whether the rule sends mail (forwards, or replies): a standing send the user must approve."""
        return bool(self.redirect) or self.vacation is not None


class RuleView(Payload):
    name: str = Field(description="The rule's name.")
    query: str = Field(description="Its condition, in the search query language.")
    actions: list[str] = Field(description="What it does to a matching message, in words.")
    enabled: bool = Field(description="False: kept, but not run.")
    sieve: str = Field(description="The Sieve the server runs for it.")


class Matched(Payload):
    message_id: str = Field(description="Id for imap_get_message.")
    date: str | None = Field(description="ISO 8601 UTC.")
    from_: str | None = Field(alias="from", description="Sender.")
    subject: str | None = Field(description="Subject.")


class DryRun(Payload):
    mailbox: str = Field(description="Where it was tried: INBOX, where rules see arriving mail.")
    matched: int = Field(description="How many of the last `of` messages the rule matches.")
    of: int = Field(description="The messages tried: the newest, at most 10,000.")
    newest: list[Matched] = Field(description="The newest messages it matches.")
    words: str = Field(description="What the rule would have done, in words.")


class ManageRulesData(Payload):
    account_id: str = Field(description="The account.")
    action: Action = Field(description="What was asked.")
    rules: list[RuleView] = Field(description="The rules (list), or the rule asked for.")
    dry_run: DryRun | None = Field(description="save: what the rule would have done to existing mail.")
    as_saved: DryRun | None = Field(
        default=None,
        description="save: the same, for the rule as the server holds it (its script read again after saving).",
    )
    changed: bool = Field(description="True when the server's scripts were changed.")
    where: str = Field(description="Where the rules live on the server, in words.")
    server_said: list[str] = Field(description="The server's warnings on the script, in its words.")
    background: OperationRef | None = operation_field()
