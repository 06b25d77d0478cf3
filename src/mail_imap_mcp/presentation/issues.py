"""The issues of a partial answer in the model's words: a step a service went on past
(:class:`~mail_imap_mcp.mail.step_failure.StepFailed`) said with the failure registry's words of its error."""

from __future__ import annotations

from collections.abc import Iterable

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.step_failure import StepFailed
from mail_imap_mcp.presentation.failures import failure_of


def issue_of(step: StepFailed) -> Issue:
    """``step`` as its issue; an error the registry leaves to its caller (``MailError.for_caller``) is
    named by its type, in a step that gives its code and whether to retry."""
    failure = failure_of(step.error)
    if failure is None:
        assert step.code is not None and step.retryable is not None, "a step of a caller's error words itself"
        said, code, retryable = type(step.error).__name__, step.code, step.retryable
    else:
        said, code, retryable = failure.message, step.code or failure.code.value, failure.retryable
    return Issue(
        code=code,
        stage=step.stage,
        message=f"{step.before}{said}{step.after}",
        retryable=retryable if step.retryable is None else step.retryable,
        uid=step.uid,
        message_id=step.message_id,
    )


def worded(issues: Iterable[Issue | StepFailed]) -> list[Issue]:
    """``issues`` in order, each failed step worded (:func:`issue_of`)."""
    return [issue_of(item) if isinstance(item, StepFailed) else item for item in issues]
