"""The response envelope: one shape for every tool result, success or failure.

Generic on purpose: nothing here knows about mail. A tool produces a payload model (``data``),
a one-line ``summary`` and optional ``warnings``; the envelope adds the discriminator
(``success``), a structured ``error`` and the ``meta`` block.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

ENVELOPE_VERSION: Literal["envelope-v1"] = "envelope-v1"


class ErrorCode(StrEnum):
    """Stable error codes. Clients branch on these; humans read ``error.message``."""

    INVALID_INPUT = "invalid_input"
    NOT_FOUND = "not_found"
    AUTH_FAILED = "auth_failed"
    PERMISSION_DENIED = "permission_denied"
    CONFIRMATION_REQUIRED = "confirmation_required"
    CONFLICT = "conflict"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    LIMIT_EXCEEDED = "limit_exceeded"
    UNSUPPORTED = "unsupported"
    INTERNAL = "internal"


class ErrorCodeInfo(NamedTuple):
    """Registry entry: what a code means, whether retrying can help, and its MCP-AQL twin."""

    meaning: str
    retryable: bool
    mcp_aql: str
    client_action: str


ERROR_REGISTRY: dict[ErrorCode, ErrorCodeInfo] = {
    ErrorCode.INVALID_INPUT: ErrorCodeInfo(
        "An argument is missing, malformed, out of range, unknown, or contradicts another.",
        False,
        "VALIDATION_INVALID_TYPE / VALIDATION_MISSING_PARAM / VALIDATION_UNKNOWN_PARAM",
        "Fix the argument named in error.details.parameter and call again.",
    ),
    ErrorCode.NOT_FOUND: ErrorCodeInfo(
        "The account, mailbox or message does not exist (any more).",
        False,
        "NOT_FOUND_RESOURCE",
        "Stop, or list/search again to pick an existing target.",
    ),
    ErrorCode.AUTH_FAILED: ErrorCodeInfo(
        "The server rejected the configured credentials (password or OAuth2 access token), or none "
        "could be obtained (password source or oauth2_token_command failed, or the password is empty; "
        "with the built-in sign-in, details.reason 'sign_in_required': nobody signed in, or the sign-in "
        "was revoked or expired, and details.command is what the user runs). error.details.setting names "
        "the setting, and details.field the label of the MCP Bundle's form field where that form sets it.",
        False,
        "PERMISSION_DENIED",
        "Tell the user to fix the account's credentials (or sign in to the OAuth2 token helper again, or "
        "run details.command); retrying will not help until they have.",
    ),
    ErrorCode.PERMISSION_DENIED: ErrorCodeInfo(
        "The operation is not allowed by the server or by this server's configuration.",
        False,
        "PERMISSION_DENIED",
        "Do not retry; ask the user to change the configuration if the operation is intended.",
    ),
    ErrorCode.CONFIRMATION_REQUIRED: ErrorCodeInfo(
        "The operation needs explicit confirmation before it runs.",
        False,
        "CONFIRMATION_REQUIRED",
        "Ask the user to confirm, then call again with the confirmation argument.",
    ),
    ErrorCode.CONFLICT: ErrorCodeInfo(
        "The mailbox changed under a reference (UIDVALIDITY changed): ids and cursors are stale.",
        False,
        "VALIDATION_INVALID_TYPE",
        "Rerun the search (see data.next_action) and use the fresh ids.",
    ),
    ErrorCode.TIMEOUT: ErrorCodeInfo(
        "The IMAP server did not answer within the time budget.",
        True,
        "INTERNAL_ERROR",
        "Retry after a short pause; if it persists, the server is overloaded or unreachable.",
    ),
    ErrorCode.UNAVAILABLE: ErrorCodeInfo(
        "The IMAP server cannot be reached or dropped the connection; not retryable where a setting "
        "cannot work (an environment account's host, port, security, address or certificate: "
        "error.details.setting and, set by the MCP Bundle's form, details.field name it).",
        True,
        "INTERNAL_ERROR",
        "Retry after a short pause; tell the user if it keeps failing.",
    ),
    ErrorCode.LIMIT_EXCEEDED: ErrorCodeInfo(
        "The request would exceed a configured bound (size, count).",
        False,
        "VALIDATION_INVALID_TYPE",
        "Narrow the request (smaller limit, window or filter) and call again.",
    ),
    ErrorCode.UNSUPPORTED: ErrorCodeInfo(
        "The call is well formed, but this server does not offer what it asks for (Gmail's labels and "
        "search, X-GM-EXT-1, on another server); nothing was changed.",
        False,
        "CAPABILITY_NOT_SUPPORTED",
        "Do without the argument named in error.details.parameter; the message says what this server "
        "offers instead.",
    ),
    ErrorCode.INTERNAL: ErrorCodeInfo(
        "An unexpected failure inside this server. Details stay in the server log.",
        False,
        "INTERNAL_ERROR",
        "Report meta.request_id to the operator; retrying the same call is unlikely to help.",
    ),
}


# Serialization schemas list defaulted fields as required: the envelope always carries them.
_STRICT = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class Payload(BaseModel):
    """Base for a tool's ``data`` model: every field is always present in the output."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


def absent(value: object) -> bool:
    """``exclude_if`` predicate of a compact payload's optional fields: None is left out."""
    return value is None


def absent_field(description: str) -> Any:
    """A compact payload's optional field: ``None`` by default and then left out of the output."""
    return Field(default=None, exclude_if=absent, description=description)


class CompactPayload(BaseModel):
    """Base for a compact ``data`` model: optional fields are absent instead of null or empty.

    Fields declared ``Field(default=None, exclude_if=absent)`` are left out of the output when
    unset; the serialization schema lists them as optional, and unknown keys are refused so a
    compact payload never passes for another shape.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)


class ErrorInfo(BaseModel):
    """Structured failure: ``code`` for programs, ``message`` for people."""

    model_config = _STRICT

    code: ErrorCode = Field(description="Stable error code from the registry (docs/errors.md).")
    message: str = Field(description="What went wrong and what to do next.")
    retryable: bool = Field(description="True when the same call may succeed later unchanged.")
    details: dict[str, Any] = Field(
        default_factory=dict, description="Context, e.g. the offending parameter."
    )


class Meta(BaseModel):
    """Facts about the call itself, never business data."""

    model_config = _STRICT

    version: Literal["envelope-v1"] = Field(
        default=ENVELOPE_VERSION, description="Envelope contract version."
    )
    request_id: str = Field(description="Unique per call; also in the server log line of the call.")
    now_utc: str = Field(description="RFC 3339 UTC time the response was built, with milliseconds.")
    duration_ms: int = Field(ge=0, description="Time spent on the tool's own work.")
    warnings: list[str] = Field(
        default_factory=list, description="Non-fatal notes: truncation, skipped items."
    )


class Issue(BaseModel):
    """One item that failed inside an otherwise answered multi-item call."""

    model_config = _STRICT

    code: str = Field(description="Machine-readable reason, e.g. fetch_failed, parse_failed.")
    stage: str = Field(description="Where it failed, e.g. fetch_headers, parse_body, search.")
    message: str = Field(description="Human-readable explanation.")
    retryable: bool = Field(description="True when retrying just this item may succeed.")
    uid: int | None = Field(default=None, description="IMAP UID of the item, when it has one.")
    message_id: str | None = Field(default=None, description="Message id of the item, when it has one.")
    item: str | None = Field(default=None, description="Id of the item, whatever the protocol.")

    @model_validator(mode="after")
    def _item_is_its_message(self) -> Issue:
        """A message's issue names it as the item (``uid`` stays for the clients that read it)."""
        if self.item is None and self.message_id is not None:
            self.item = self.message_id
        return self


class NextAction(BaseModel):
    """The obvious next call, ready to make."""

    model_config = _STRICT

    instruction: str = Field(description="What the next call does, in words.")
    tool: str = Field(description="Tool to call.")
    arguments: dict[str, Any] = Field(description="Arguments for that call.")


Status = Literal["ok", "partial", "failed"]


class MultiItemData(Payload):
    """Base for payloads of tools that handle many items: partial success is explicit."""

    status: Status = Field(
        default="ok", description="ok, partial (see issues) or failed (exactly when success is false)."
    )
    issues: list[Issue] = Field(default_factory=list, description="Items that failed, with reasons.")
    next_action: NextAction | None = Field(default=None, description="The obvious next call, if any.")


def status_for(issues: Sequence[Issue] | None) -> Status:
    """A success's ``status``: ``partial`` exactly when some item failed (``issues`` not empty)."""
    return "partial" if issues else "ok"


class FailureData(BaseModel):
    """``data`` of a failed call: context that helps the caller recover."""

    model_config = ConfigDict(extra="allow")

    status: Literal["failed"] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="'failed' for multi-item tools; absent otherwise.",
    )
    issues: list[Issue] | None = Field(
        default=None, exclude_if=lambda v: v is None, description="Per-item failures (multi-item tools)."
    )
    next_action: NextAction | None = Field(
        default=None, description="How to recover, e.g. rerun the search after a conflict."
    )


DataT = TypeVar("DataT", bound=BaseModel)


class SuccessEnvelope(BaseModel, Generic[DataT]):
    """Envelope of a call that did what was asked (possibly partially: see ``data.status``)."""

    model_config = _STRICT

    success: Literal[True] = True
    summary: str = Field(description="One human-readable line saying what happened.")
    data: DataT
    error: None = None
    meta: Meta


def one_line(text: str, limit: int = 240) -> str:
    """``text`` on one line, cut to ``limit`` characters (an envelope's summary)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_summary(title: str, failure: ToolFailure) -> str:
    """The summary of a failure of the tool titled ``title``: its action, without the title's remark in
    parentheses, which tells a client's list what the tool never does ("Save a draft (never sends) failed"
    read as if a send had failed)."""
    return one_line(f"{title.split(' (', 1)[0]} failed ({failure.code}): {failure.message}")


class FailureEnvelope(BaseModel):
    """Envelope of a call that failed: ``error`` says why and what to do."""

    model_config = _STRICT

    success: Literal[False] = False
    summary: str = Field(description="One human-readable line saying what failed.")
    data: FailureData = Field(default_factory=FailureData)
    error: ErrorInfo
    meta: Meta


class ToolFailure(Exception):
    """Raise anywhere below a tool to end the call with a failure envelope.

    ``retryable`` defaults to the registry's value for ``code``; ``data`` carries recovery
    context such as a ``next_action``.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retryable: bool | None = None,
        next_action: NextAction | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.retryable = ERROR_REGISTRY[code].retryable if retryable is None else retryable
        self.next_action = next_action

    @classmethod
    def invalid_input(cls, parameter: str, problem: str, **details: Any) -> ToolFailure:
        """An ``invalid_input`` failure that names the offending parameter."""
        return cls(
            ErrorCode.INVALID_INPUT,
            f"Invalid '{parameter}': {problem}",
            details={"parameter": parameter, **details},
        )

    @classmethod
    def unsupported(cls, parameter: str, problem: str, capability: str) -> ToolFailure:
        """An ``unsupported`` failure: ``parameter`` asks for what the server lacks (``capability``)."""
        return cls(
            ErrorCode.UNSUPPORTED,
            f"Unsupported '{parameter}': {problem}",
            details={"parameter": parameter, "missing_capability": capability},
        )

    def to_error(self) -> ErrorInfo:
        return ErrorInfo(code=self.code, message=self.message, retryable=self.retryable, details=self.details)


def new_request_id() -> str:
    """``req_`` and 48 random bits: enough to find a call in the log, and 8 bytes fewer in every answer
    than the 80 bits it had."""
    return f"req_{secrets.token_hex(6)}"


def utc_now_rfc3339() -> str:
    """Current UTC time as RFC 3339 with milliseconds and a ``Z`` suffix."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class MediaBlock:
    """Binary content shown to the model next to the envelope (an MCP image or audio content block)."""

    data: bytes
    mime_type: str


@dataclass
class ToolResult(Generic[DataT]):
    """What a tool handler returns on success; the adapter wraps it in the envelope.

    ``media`` become content blocks after the envelope's text block (image/* as image blocks,
    audio/* as audio blocks).
    """

    summary: str
    data: DataT
    warnings: list[str] = field(default_factory=list)
    media: list[MediaBlock] = field(default_factory=list)
