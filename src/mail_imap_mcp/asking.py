"""Asking the user, in one call a tool (or a service it names) makes: ``app.ask(request)``.

A :class:`~mail_imap_mcp.asks.Ask` (the generic :class:`~mail_imap_mcp.approval.review.Review`, its page
renderer, what to do once approved) gets back the answer of its call: what ``then`` answered, or a
background :class:`~mail_imap_mcp.operations.Operation` the agent polls while the user decides. A
:class:`~mail_imap_mcp.asks.Confirm` (a write to confirm) returns once confirmed. The ways of asking live
here and below, each in one place, and the caller knows none of them:

- MCP elicitation (both protocol eras): the gate's ``confirmation_required`` with ``ask_user``, which the
  envelope layer (``envelope/mcp.py``) asks and runs the call again on with the approval in its
  ``UserCall`` (2026-07-28: the rerun after an ``InputRequiredResult``);
- a confirmation token (a :class:`~mail_imap_mcp.asks.Confirm` the user may confirm through the agent:
  ``confirmation_required`` with ``confirm_token``, :mod:`mail_imap_mcp.confirmation`);
- the approval page within the call, where the call carries a progressToken (progress keeps it alive);
- the approval page in a background operation the agent polls (``imap_get_operation``), which
  ``imap_cancel_operation`` ends, closing the page.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, Protocol, overload

from mail_imap_mcp.asks import Ask, Confirm
from mail_imap_mcp.config import Config
from mail_imap_mcp.confirmation import ApprovalPage, ConfirmationGate, StoppablePage
from mail_imap_mcp.envelope import ToolFailure, ToolResult
from mail_imap_mcp.envelope.user_call import UserCall
from mail_imap_mcp.operations import Operation, OperationRef, OperationRegistry, OperationState, Progress
from mail_imap_mcp.operations.background import Cancelled
from mail_imap_mcp.presentation.failures import run as run_tool
from mail_imap_mcp.state import Caller


class AskingCall(Protocol):
    """What asking reads of the call (``tool_calls.ToolCall``): whose it is, how its client asks
    (``user_call``), the confirmations bound to it, the approval page and the operations to wait in."""

    @property
    def caller(self) -> Caller: ...
    @property
    def config(self) -> Config: ...
    def resolve_account(self, account_id: str) -> str: ...
    @property
    def user_call(self) -> UserCall: ...
    @property
    def confirmations(self) -> ConfirmationGate: ...
    @property
    def approval_page(self) -> ApprovalPage | None: ...
    @property
    def operations(self) -> OperationRegistry: ...


@overload
def ask(app: AskingCall, tool: str, args: Any, request: Ask) -> ToolResult[Any] | Operation: ...
@overload
def ask(app: AskingCall, tool: str, args: Any, request: Confirm) -> None: ...
def ask(app: AskingCall, tool: str, args: Any, request: Ask | Confirm) -> ToolResult[Any] | Operation | None:
    """Ask the user of ``app``'s call of ``tool`` (with ``args``) about ``request``: a :class:`Confirm`
    returns once confirmed; an :class:`Ask` is done once approved (:func:`_approved`). Not confirmed or
    not approved: raises what asks the user, or the refusal."""
    if isinstance(request, Confirm):
        _confirmed(app, tool, args, request)
        return None
    return _approved(app, tool, args, request)


def _confirmed(app: AskingCall, tool: str, args: Any, request: Confirm) -> None:
    """Through the client (elicitation), else with a confirmation token where one may confirm it."""
    if request.refusal is not None:
        app.confirmations.require_user(request.what, request.refusal, dict(request.details))
    else:
        app.confirmations.require(
            tool, args.model_dump(), request.what, user=app.caller.user, irreversible=request.irreversible
        )


def _approved(app: AskingCall, tool: str, args: Any, request: Ask) -> ToolResult[Any] | Operation:
    """The answer of ``request.then`` once approved (in this call: through the client, or on the page for
    a call with a progressToken), else the background operation waiting for the page."""
    gate, page = app.confirmations, app.approval_page
    held = ExitStack()
    with request.audited():
        on_page = gate.asks_on_page(request.review, page)
        if on_page:  # the user may take minutes: what the request holds is held meanwhile
            held.enter_context(request.waiting())
        if not on_page or app.user_call.progress_asked:  # answered in this call
            with held:
                gate.require_approval(request.review, page, request.render)
                return request.then()

    def on_the_page(progress: Progress) -> ToolResult[Any]:
        try:
            stoppable = (
                page.stopped_by(lambda: progress.cancelled) if isinstance(page, StoppablePage) else page
            )
            gate.require_approval(request.review, stoppable, request.render)
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
        progress.advance(_messages_done(result, request.messages), result.summary)
        return result

    try:
        return app.operations.run(
            tool, request.account_id, request.messages, decided, _state_of, user=app.caller.user
        )
    except BaseException:
        held.close()
        raise


def _messages_done(result: ToolResult[Any], asked: int) -> int:
    """The messages the approved write did: all it was asked, unless it goes on in an operation of its own
    (a long bulk run): then what that one did so far."""
    background = getattr(result.data, "background", None)
    return background.done if isinstance(background, OperationRef) else asked


def _state_of(result: ToolResult[Any]) -> OperationState:
    return OperationState.PARTIAL if getattr(result.data, "status", None) == "partial" else OperationState.OK


def asker(app: AskingCall, tool: str, args: Any) -> Callable[[Any], ToolResult[Any] | Operation | None]:
    """``app.ask`` for one call of ``tool`` with ``args``: the per-call object's way to ask its user."""
    return lambda request: ask(app, tool, args, request)
