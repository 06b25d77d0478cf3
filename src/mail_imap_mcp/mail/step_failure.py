"""A step a service went on past, for an issue of its partial answer: the domain error that stopped it,
kept as it is, and what the issue says around the error's words, which are presentation's
(``presentation/issues.py`` words it with the failure registry)."""

from __future__ import annotations

from dataclasses import dataclass

from mail_imap_mcp.mail.errors import MailError


@dataclass(frozen=True)
class StepFailed:
    """The issue of a step that failed with ``error``: its message is ``before``, the error's words,
    then ``after``; ``code`` and ``retryable`` are the error's where None."""

    stage: str
    error: MailError
    before: str
    after: str = ""
    code: str | None = None
    retryable: bool | None = None
    uid: int | None = None
    message_id: str | None = None
