"""What the user is asked to approve (:class:`ApprovalRequest`) and what they decided (:class:`Decision`).

The request is the message as it will go out, already decoded to display text by the caller, and the
digest the approval is bound to: the caller computes it over exactly what it shows and the call's
arguments, and sends only if the decision carries that same digest back.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_ATTACHMENTS",
    "MAX_HTML_CHARS",
    "MAX_RECIPIENTS",
    "MAX_TEXT_CHARS",
    "ApprovalRequest",
    "AttachmentShown",
    "Decision",
    "Outcome",
]

#: Bounds of what one page shows. A message beyond them cannot be shown whole, so it cannot be approved
#: on the page: building the request fails (pydantic's ValidationError) and the caller refuses the send.
MAX_TEXT_CHARS = 1_000_000
MAX_HTML_CHARS = 2_000_000
MAX_RECIPIENTS = 10_000
MAX_ATTACHMENTS = 1_000
_ADDRESS_CHARS = 2_000


class AttachmentShown(BaseModel):
    """One attachment as listed on the page."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(max_length=1_000, description="The file name the recipient sees.")
    size: int = Field(ge=0, description="Its decoded size in bytes.")
    content_type: str = Field(default="", max_length=255, description="Its media type, e.g. application/pdf.")


class ApprovalRequest(BaseModel):
    """A message shown for approval, exactly as it will be sent, and the digest that binds the approval."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    digest: str = Field(
        pattern=r"^[A-Za-z0-9_:.-]{16,200}$",
        description="What the approval is bound to: the caller's digest of what is shown and of the call's "
        "arguments; an approval carries it back and binds to nothing else.",
    )
    from_: str = Field(
        alias="from", max_length=_ADDRESS_CHARS, description="The From header as it will go out."
    )
    to: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    cc: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    bcc: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    reply_to: list[str] = Field(default=[], max_length=MAX_RECIPIENTS)
    subject: str = Field(default="", max_length=10_000)
    text: str | None = Field(default=None, max_length=MAX_TEXT_CHARS, description="The text/plain body.")
    html: str | None = Field(
        default=None,
        max_length=MAX_HTML_CHARS,
        description="The text/html body; the page shows it sanitised (no script, style or remote resource).",
    )
    attachments: list[AttachmentShown] = Field(default=[], max_length=MAX_ATTACHMENTS)


class Outcome(StrEnum):
    """How an approval ended."""

    APPROVED = "approved"  # the user pressed "Send" on the page of this request
    DECLINED = "declined"  # the user pressed "Don't send"
    EXPIRED = "expired"  # no answer before the page expired
    OPENED_TWICE = "opened_twice"  # the one-time address was opened again: someone else may hold it
    NOT_OPENED = "not_opened"  # the browser could not be opened
    CANCELLED = "cancelled"  # the caller stopped waiting (imap_cancel_operation) before the user decided


class Decision(BaseModel):
    """What the user decided; ``digest`` is the request's, and is set only when approved."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: Outcome
    digest: str | None = None

    @property
    def approved(self) -> bool:
        return self.outcome is Outcome.APPROVED and self.digest is not None

    def approves(self, digest: str) -> bool:
        """Whether this is the user's "Send" for exactly ``digest`` (what the caller is about to send)."""
        return self.approved and self.digest == digest
