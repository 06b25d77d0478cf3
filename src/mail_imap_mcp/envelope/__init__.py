"""A generic MCP response envelope: ``success``, ``summary``, ``data``, ``error``, ``meta``.

Reusable by any MCP server; see docs/envelope.md.
"""

from mail_imap_mcp.envelope.model import (
    ENVELOPE_VERSION,
    ERROR_REGISTRY,
    CompactPayload,
    ErrorCode,
    ErrorInfo,
    FailureData,
    FailureEnvelope,
    Issue,
    MediaBlock,
    Meta,
    MultiItemData,
    NextAction,
    Payload,
    SuccessEnvelope,
    ToolFailure,
    ToolResult,
    absent,
    absent_field,
    status_for,
)

__all__ = [
    "ENVELOPE_VERSION",
    "ERROR_REGISTRY",
    "CompactPayload",
    "ErrorCode",
    "ErrorInfo",
    "FailureData",
    "FailureEnvelope",
    "Issue",
    "MediaBlock",
    "Meta",
    "MultiItemData",
    "NextAction",
    "Payload",
    "SuccessEnvelope",
    "ToolFailure",
    "ToolResult",
    "absent",
    "absent_field",
    "status_for",
]
