"""The gate of one tool call: it runs the way :func:`~.choose.choose` picks for what is asked, and passes
only once the user answered.

What cannot be undone (a permanent delete) is confirmed by the user, never by the agent: where the
client supports MCP elicitation the envelope layer asks the user and runs the call again on "yes", with
that "yes" approving exactly the question shown for the call's arguments (a gate passes only on its own:
``UserCall.approved`` of the call the gate is bound to, :meth:`ConfirmationGate.for_call`);
where it does not, the call is refused, saying how to allow it, unless the user opted in with
``[server] confirm_without_elicitation = true``. No token is issued or accepted for it otherwise.

What can be undone or loses no data (rename, delete of a mailbox) is confirmed by elicitation where
the client supports it, else by a short-lived token bound to exactly that request (:mod:`.tokens`): the
first call returns ``confirmation_required`` with the token, the same call with ``confirm_token`` set
runs it. What is approved (a send, a review) passes through the client or on the approval page, never
with a token or a setting, unless the request says confirming may stand in for it (``Ask.confirmable``).
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from mail_imap_mcp.asking.page_server.page import review_page
from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.envelope.user_call import ASK_USER, UserCall, approval_digest, question
from mail_imap_mcp.state import MemoryStore, Store

from .answers import Answer, ApprovalPage
from .choose import Client, Question, Setup, Way, choose
from .tokens import TOKEN_TTL_S, Tokens

__all__ = ["TOKEN_TTL_S", "ConfirmationGate"]


class ConfirmationGate:
    """Asks for confirmation or approval, and issues and checks confirmation tokens (thread-safe).

    ``tokens_for_irreversible``: ``confirm_without_elicitation`` of ``[server]``; ``store`` records the
    tokens used, ``secret`` signs them (both of this process unless given).
    """

    def __init__(
        self,
        ttl_s: float = TOKEN_TTL_S,
        *,
        tokens_for_irreversible: bool = False,
        store: Store | None = None,
        secret: bytes | None = None,
    ) -> None:
        self._tokens = Tokens(secret or secrets.token_bytes(32), store or MemoryStore(), ttl_s)
        self._tokens_for_irreversible = tokens_for_irreversible
        self._call = UserCall()

    def for_call(self, call: UserCall) -> ConfirmationGate:
        """This gate for one tool call: what its client can ask and what its user approved in it."""
        gate = copy.copy(self)
        gate._call = call
        return gate

    def way(self, question: Question, shown: str, page: ApprovalPage | None = None) -> Way:
        """The way ``question`` (the user reads ``shown``) is asked in this call, with ``page`` where one
        can open (:func:`~.choose.choose`)."""
        call = self._call
        client = Client(call.can_ask_user, call.asks_in_result, call.progress_asked, call.approved(shown))
        return choose(client, question, Setup(page is not None, self._tokens_for_irreversible))

    def require(
        self, tool: str, arguments: dict[str, Any], what: str, *, user: str, irreversible: bool = False
    ) -> None:
        """Return when the user confirmed this exact request of ``user`` (the caller; through the
        client, or with a valid ``confirm_token``); otherwise raise what asks for it.

        ``what`` says, for the user, what will happen (e.g. "permanently delete 3 messages");
        ``irreversible``: it cannot be undone, so only the user may confirm it (see the module).
        """
        way = self.way(Question(approval=False, irreversible=irreversible), _sentence(what))
        if way is Way.ANSWERED:
            return
        request = {key: value for key, value in arguments.items() if key != "confirm_token"}
        token = arguments.get("confirm_token")
        if way is not Way.TOKEN:
            self._ask_user(what, token)
        if token is not None:
            self._tokens.accept(tool, request, token, user, what)
            return
        fresh, ttl_s = self._tokens.issue(tool, request, user, what), int(self._tokens.ttl_s)
        raise ToolFailure(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"This will {what}. Ask the user to confirm; if they agree, make the same call again with "
            f"confirm_token (valid {ttl_s} s, for exactly this request).",
            details={"confirm_token": fresh, "expires_in_s": ttl_s, "confirm": _sentence(what)},
            next_action=NextAction(
                instruction=f"Only after the user confirmed: {what}",
                tool=tool,
                arguments={**request, "confirm_token": fresh},
            ),
        )

    def require_user(self, what: str, refusal: str, details: dict[str, Any]) -> None:
        """Return when the user confirmed ``what`` through the client (MCP elicitation); otherwise raise
        what has the client ask them, or, for a client that cannot ask, ``permission_denied`` with
        ``refusal`` (what to do instead) and ``details``. No token is issued or accepted: an agent
        cannot confirm this for the user, whatever ``confirm_without_elicitation`` says.

        The user's "yes" passes this gate only: it approves the question shown (``what``) for this call's
        arguments (:meth:`UserCall.approved`), so a call with two gates asks twice, and
        is run again from the start after each "yes": ask every question before changing anything."""
        way = self.way(Question(approval=False, user_only=True), _sentence(what))
        if way is Way.ANSWERED:
            return
        if way is Way.REFUSE:
            raise ToolFailure(ErrorCode.PERMISSION_DENIED, refusal, details=details, retryable=False)
        raise ToolFailure(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"This will {what}; the user is asked to confirm it.",
            details={"confirm": _sentence(what), ASK_USER: True},
        )

    def approval_way(self, review: Review, page: ApprovalPage | None, *, confirmable: bool = False) -> Way:
        """The way ``review`` is approved in this call (``confirmable``: a token may stand in where nobody
        can be asked)."""
        asked = Question(approval=True, page_only=review.page_only is not None, confirmable=confirmable)
        return self.way(asked, _sentence(review.question()), page)

    def require_approval(
        self, review: Review, page: ApprovalPage | None, render: Renderer = review_page
    ) -> None:
        """Return when the user approved ``review`` in this call: through the client (MCP elicitation, the
        approval bound to exactly its question and the call's arguments), else on ``page`` (shown by
        ``render``, bound to the same digest); only on ``page`` when ``review.page_only`` says why the
        client's question cannot show it whole. Otherwise raise what asks the user, or the refusal saying
        why nobody can be asked (``review.words``). No token and no setting passes this gate
        (``confirm_without_elicitation`` included)."""
        way = self.approval_way(review, page)
        if way is Way.ANSWERED:
            return
        if way in (Way.ELICIT, Way.INPUT_REQUIRED):
            details = {"confirm": _sentence(review.question()), ASK_USER: True}
            raise ToolFailure(ErrorCode.CONFIRMATION_REQUIRED, review.words.asking, details=details)
        self.settle(review, self.on_page(review, page, render))

    def on_page(self, review: Review, page: ApprovalPage | None, render: Renderer = review_page) -> Answer:
        """What the user answered on ``page`` (``unavailable`` without one), bound to the digest of the
        question elicitation would show and this call's arguments."""
        if page is None:
            return Answer.UNAVAILABLE
        digest = approval_digest(
            self._call.tool, self._call.arguments, question(_sentence(review.question()))
        )
        return page(review, digest, render)

    @staticmethod
    def settle(review: Review, answer: Answer) -> None:
        """Return when ``answer`` approves; otherwise raise what the agent is told, in ``review.words``."""
        words = review.words
        if answer is Answer.APPROVED:
            return
        if answer is not Answer.UNAVAILABLE:
            said = words.declined_as if answer is Answer.DECLINED else answer.value
            why = {Answer.CANCELLED: words.cancelled, Answer.OPENED_TWICE: words.opened_twice}.get(
                answer, words.declined.format(decision=said)
            )
            details = {"approval": said}
            raise ToolFailure(ErrorCode.CONFIRMATION_REQUIRED, why, details=details, retryable=False)
        if review.page_only is not None:
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                words.page_only_unavailable.format(reason=review.page_only),
                details={"approval": "unavailable", "reason": review.page_only},
                retryable=False,
            )
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            words.unavailable,
            details={"approval": "unavailable"},
            retryable=False,
        )

    def _ask_user(self, what: str, token: object) -> None:
        """Raise what has the user asked through the client, or the refusal when it cannot ask."""
        if token is not None:
            raise ToolFailure.invalid_input(
                "confirm_token",
                "is not accepted for what cannot be undone: the user confirms it through the client "
                "(MCP elicitation), not with a token; call without confirm_token",
            )
        self.require_user(
            what,
            f"This would {what}, which cannot be undone, so only the user may confirm it, and this client "
            "cannot ask the user (it does not support MCP elicitation): nothing was changed. Delete to Trash "
            "instead (permanent: false), use a client that supports elicitation, or the user may set "
            "confirm_without_elicitation = true in [server] to confirm with a token the agent passes on.",
            {"setting": "confirm_without_elicitation", "parameter": "permanent"},
        )


def _sentence(what: str) -> str:
    """``what`` as the user reads it (``Delete the mailbox 'Old'``)."""
    return what[:1].upper() + what[1:]
