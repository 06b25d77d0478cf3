"""Asking the user to approve something, in one call a tool makes: ``app.ask(request)``.

A tool builds an :class:`Ask` (the generic :class:`~mail_imap_mcp.approval.review.Review`, the content the
page renders, what to do once approved) and gets back the answer of its call: what ``then`` answered, or a
background :class:`~mail_imap_mcp.operations.Operation` the agent polls while the user decides. The ways
of asking live here and below, each in one place, and the tool knows none of them:

- MCP elicitation (both protocol eras): the gate's ``confirmation_required`` with ``ask_user``, which the
  envelope layer (``envelope/mcp.py``) asks and runs the call again on with the approval in its
  ``UserCall`` (2026-07-28: the rerun after an ``InputRequiredResult``);
- the approval page within the call, where the call carries a progressToken (progress keeps it alive);
- the approval page in a background operation the agent polls (``imap_get_operation``), which
  ``imap_cancel_operation`` ends, closing the page.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Any

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.approval.review import Review
from mail_imap_mcp.confirmation import StoppablePage
from mail_imap_mcp.envelope import ToolFailure, ToolResult
from mail_imap_mcp.operations import Operation, OperationState, Progress
from mail_imap_mcp.operations.background import Cancelled
from mail_imap_mcp.presentation.failures import run as run_tool


@dataclass(frozen=True)
class Ask:
    """What a tool asks the user to approve, on ``account_id``: ``review`` (every field and the full
    content; the approval is bound to its question and the call's arguments), ``content`` (what the page
    renders), ``then`` (what is done once approved, in the call or in the background), ``waiting`` (held
    while the user may take minutes on a page: what must not happen meanwhile) and ``audited`` (around
    every step, saying a failure as the tool's)."""

    account_id: str
    review: Review
    content: bytes
    then: Callable[[], ToolResult[Any]]
    waiting: Callable[[], AbstractContextManager[object]]
    audited: Callable[[], AbstractContextManager[None]]


def ask(app: AppContext, tool: str, args: Any, request: Ask) -> ToolResult[Any] | Operation:
    """Ask the user of ``app``'s call of ``tool`` (with ``args``) to approve ``request``, then do it: the answer of
    ``request.then`` once approved (in this call: through the client, or on the page for a call with a
    progressToken), else the background operation waiting for the page; a refusal raises."""
    gate, page = app.confirmations, app.approval_page
    shown, page_only = request.review.question(), request.review.page_only
    held = ExitStack()
    with request.audited():
        on_page = gate.asks_on_page(shown, page, page_only)
        if on_page:  # the user may take minutes: what the request holds is held meanwhile
            held.enter_context(request.waiting())
        if not on_page or app.user_call.progress_asked:  # answered in this call
            with held:
                gate.require_send_approval(shown, page, request.content, page_only)
                return request.then()

    def on_the_page(progress: Progress) -> ToolResult[Any]:
        try:
            stoppable = (
                page.stopped_by(lambda: progress.cancelled) if isinstance(page, StoppablePage) else page
            )
            gate.require_send_approval(shown, stoppable, request.content, page_only)
        except ToolFailure as failure:
            if failure.details.get("approval") == "cancelled":  # the operation ends canceled
                raise Cancelled(
                    failure.code, failure.message, details=failure.details, retryable=False
                ) from None
            raise
        return request.then()

    def decided(progress: Progress) -> ToolResult[Any]:
        """Waits for the user in the background, polled (imap_get_operation) and cancelled
        (imap_cancel_operation closes the page); its failures worded as the call's would be."""
        with held, request.audited():
            result = run_tool(lambda app, args: on_the_page(progress), app, args)
        progress.advance(1, result.summary)
        return result

    try:
        return app.operations.run(tool, request.account_id, 1, decided, _state_of, user=app.caller.user)
    except BaseException:
        held.close()
        raise


def _state_of(result: ToolResult[Any]) -> OperationState:
    return OperationState.PARTIAL if getattr(result.data, "status", None) == "partial" else OperationState.OK


def asker(app: AppContext, tool: str, args: Any) -> Callable[[Ask], ToolResult[Any] | Operation]:
    """``app.ask`` for one call of ``tool`` with ``args``: the per-call object's way to ask its user."""
    return lambda request: ask(app, tool, args, request)
