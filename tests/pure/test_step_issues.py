"""A step a service went on past (``imap/step_failure.StepFailed``) becomes its issue in presentation
(``presentation/issues.py``): the service's words around the failure registry's words of its error, as
the services wrote them when they reached the registry through ``AppContext.failure_of`` (issue 58)."""

from __future__ import annotations

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.imap.errors import ConnectionLost
from mail_imap_mcp.mail.errors import MailboxMissing, UidValidityChanged
from mail_imap_mcp.mail.step_failure import StepFailed
from mail_imap_mcp.presentation.failures import failure_of
from mail_imap_mcp.presentation.issues import issue_of, worded


def test_a_failed_step_is_said_in_the_registrys_words_between_the_services() -> None:
    error = MailboxMissing("Sent", "EXAMINE")
    registry = failure_of(error)
    assert registry is not None
    step = StepFailed(
        "search", error, "The Sent mailbox could not be searched for your answers (", ").",
        code="sent_not_checked", retryable=True,
    )  # fmt: skip
    assert issue_of(step) == Issue(
        code="sent_not_checked",
        stage="search",
        message=f"The Sent mailbox could not be searched for your answers ({registry.message}).",
        retryable=True,
    )


def test_without_its_own_code_a_step_takes_the_errors_code_and_retryability_and_keeps_its_message() -> None:
    error = ConnectionLost("the server hung up")
    registry = failure_of(error)
    assert registry is not None
    step = StepFailed("extract_text", error, "Attachment 2 (a.pdf): ", uid=7, message_id="imap:x:INBOX:1:7")
    assert issue_of(step) == Issue(
        code=registry.code.value,
        stage="extract_text",
        message=f"Attachment 2 (a.pdf): {registry.message}",
        retryable=registry.retryable,
        uid=7,
        message_id="imap:x:INBOX:1:7",
    )


def test_an_error_left_to_its_caller_is_named_by_its_type() -> None:
    error = UidValidityChanged(1, 2, "Drafts")
    assert failure_of(error) is None  # the registry leaves it to the caller
    step = StepFailed(
        "write", error, "The new draft was saved, but the draft it replaces (x): it could not be moved to "
        "Trash (", "). Delete it with imap_apply_to_messages once you have checked it.",
        code="replaced_draft_kept", retryable=False,
    )  # fmt: skip
    assert issue_of(step).message == (
        "The new draft was saved, but the draft it replaces (x): it could not be moved to Trash "
        "(UidValidityChanged). Delete it with imap_apply_to_messages once you have checked it."
    )


def test_issues_keep_their_order_each_step_worded() -> None:
    plain = Issue(code="sent_copy_failed", stage="after_send", message="no Sent folder", retryable=False)
    step = StepFailed("after_send", MailboxMissing("Trash"), "The message was sent, but x failed: ", ".")
    said = worded([plain, step, plain])
    assert said[0] is plain and said[2] is plain
    assert (
        said[1].message.startswith("The message was sent, but x failed: ") and said[1].stage == "after_send"
    )
