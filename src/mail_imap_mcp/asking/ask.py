"""``app.ask(request)``: asking the user, in the one call a tool (or a service it names) makes.

An :class:`~.records.Ask` (the generic :class:`~mail_imap_mcp.asking.review.Review`, its page renderer,
what to do once approved) gets back :class:`~.records.Done` (what ``then`` answered) or
:class:`~.records.Waiting` (a background :class:`~mail_imap_mcp.operations.Operation` the agent polls
while the user decides). A :class:`~.records.Confirm` (a write to confirm) returns once confirmed. The
way is :func:`~.choose.choose`'s, run by the call's gate (:mod:`.gate`); the caller knows none of them:

- MCP elicitation (both protocol eras): the gate's ``confirmation_required`` with ``ask_user``, which the
  envelope layer (``envelope/mcp.py``) asks and runs the call again on with the approval in its
  ``UserCall`` (2026-07-28: the rerun after an ``InputRequiredResult``);
- a confirmation token (``confirmation_required`` with ``confirm_token``, :mod:`.tokens`), for a
  :class:`~.records.Confirm`, or an :class:`~.records.Ask` confirming may stand in for where nobody can
  be asked;
- the approval page within the call, where the call carries a progressToken (progress keeps it alive);
- the approval page in a background operation the agent polls (``imap_get_operation``), which
  ``imap_cancel_operation`` ends, closing the page.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, Protocol, overload

from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import ToolFailure, ToolResult
from mail_imap_mcp.envelope.user_call import UserCall
from mail_imap_mcp.operations import Operation, OperationRef, OperationRegistry, OperationState, Progress
from mail_imap_mcp.operations.background import Cancelled
from mail_imap_mcp.state import Caller

from .answers import Answer, ApprovalPage, StoppablePage
from .choose import Way
from .gate import ConfirmationGate
from .records import Ask, Asked, Confirm, Done, Waiting


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
    def worded(self, handle: Callable[[], ToolResult[Any]]) -> ToolResult[Any]:
        """``handle()``, its domain errors worded as this call's failures (the presentation layer's,
        handed down: asking sits below it)."""
        ...


@overload
def ask(app: AskingCall, tool: str, args: Any, request: Ask) -> Asked: ...
@overload
def ask(app: AskingCall, tool: str, args: Any, request: Confirm) -> None: ...
def ask(app: AskingCall, tool: str, args: Any, request: Ask | Confirm) -> Asked | None:
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


def _approved(app: AskingCall, tool: str, args: Any, request: Ask) -> Asked:
    """Done once approved (in this call: through the client, or on the page for a call with a
    progressToken), else the background operation waiting for the page; confirmed instead where the
    request allows it and nobody can be asked."""
    gate, page, review = app.confirmations, app.approval_page, request.review
    way = gate.approval_way(review, page, confirmable=request.confirmable)
    if way is Way.PAGE_IN_BACKGROUND:
        return _in_background(app, tool, args, request)
    with request.audited():
        if way is Way.TOKEN:
            _confirmed(app, tool, args, request.confirmed_as())
            return Done(request.then())
        if way is not Way.PAGE:
            gate.require_approval(review, page, request.render)  # answered, or raises what asks
            return Done(request.then())
        with request.waiting():  # the user may take minutes: what the request holds is held meanwhile
            _settled(app, tool, args, request, gate.on_page(review, page, request.render))
            return Done(request.then())


def _settled(app: AskingCall, tool: str, args: Any, request: Ask, answer: Answer) -> None:
    """Return once ``answer`` approves ``request``, or, where the page could not open and confirming may
    stand in for it, once confirmed; otherwise raise what the agent is told."""
    if answer is Answer.UNAVAILABLE and request.confirmable:
        _confirmed(app, tool, args, request.confirmed_as())
    else:
        app.confirmations.settle(request.review, answer)


def _in_background(app: AskingCall, tool: str, args: Any, request: Ask) -> Asked:
    """The operation waiting for the user on the page (done already where the user decided within the
    registry's ``inline_s``), polled (imap_get_operation) and cancelled
    (imap_cancel_operation closes the page); its failures worded as the call's would be."""
    gate, page, held = app.confirmations, app.approval_page, ExitStack()
    with request.audited():
        held.enter_context(request.waiting())

    def on_the_page(progress: Progress) -> ToolResult[Any]:
        stoppable = page.stopped_by(lambda: progress.cancelled) if isinstance(page, StoppablePage) else page
        answer = gate.on_page(request.review, stoppable, request.render)
        try:
            _settled(app, tool, args, request, answer)
        except ToolFailure as failure:
            if answer is Answer.CANCELLED:  # the operation ends canceled
                raise Cancelled(
                    failure.code, failure.message, details=failure.details, retryable=False
                ) from None
            raise
        return request.then()

    def decided(progress: Progress) -> ToolResult[Any]:
        with held, request.audited():
            result = app.worded(lambda: on_the_page(progress))
        progress.advance(_messages_done(result, request.messages), result.summary)
        return result

    try:
        outcome = app.operations.run(
            tool, request.account_id, request.messages, decided, _state_of, user=app.caller.user
        )
    except BaseException:
        held.close()
        raise
    return Waiting(outcome) if isinstance(outcome, Operation) else Done(outcome)  # decided within inline_s


def _messages_done(result: ToolResult[Any], asked: int) -> int:
    """The messages the approved write did: all it was asked, unless it goes on in an operation of its own
    (a long bulk run): then what that one did so far."""
    background = getattr(result.data, "background", None)
    return background.done if isinstance(background, OperationRef) else asked


def _state_of(result: ToolResult[Any]) -> OperationState:
    return OperationState.PARTIAL if getattr(result.data, "status", None) == "partial" else OperationState.OK


def asker(app: AskingCall, tool: str, args: Any) -> Callable[[Any], Asked | None]:
    """``app.ask`` for one call of ``tool`` with ``args``: the per-call object's way to ask its user."""
    return lambda request: ask(app, tool, args, request)
