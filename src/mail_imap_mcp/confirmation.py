"""Confirmation of the writes that cannot be undone or surprise most: permanent delete, mailbox
rename and mailbox delete.

What cannot be undone (a permanent delete) is confirmed by the user, never by the agent: where the
client supports MCP elicitation the envelope layer asks the user and runs the call again on "yes", with
that "yes" approving exactly the question shown for the call's arguments (a gate passes only on its own:
``UserCall.approved`` of the call the gate is bound to, :meth:`ConfirmationGate.for_call`);
where it does not, the call is refused, saying how to allow it, unless the user opted in with
``[server] confirm_without_elicitation = true``. No token is issued or accepted for it otherwise.

What can be undone or loses no data (rename, delete of a mailbox) is confirmed by elicitation where
the client supports it, else by a short-lived token bound to exactly that request (tool, account and
every argument): the first call returns ``confirmation_required`` with the token, the same call with
``confirm_token`` set runs it. A token works once, for that request only, and expires after
:data:`TOKEN_TTL_S`. A token is bound to the user it was issued to. Tokens are signed with a secret of
the store's (:mod:`mail_imap_mcp.state`): in one process (the default) a per-process secret, so they do
not survive a restart; with ``[state] redis_url`` the secret every instance shares, so a token issued by
one instance is accepted by any other, and its single use is recorded there: it works once across all
of them (see docs/security.md, which says what each mode protects against).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from mail_imap_mcp.approval.page import review_page
from mail_imap_mcp.approval.request import Renderer
from mail_imap_mcp.approval.review import Review
from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.envelope.user_call import ASK_USER, UserCall, approval_digest, question
from mail_imap_mcp.state import MemoryStore, Store, user_key, user_tag

TOKEN_TTL_S = 300.0

#: What the user decided on an approval page; ``unavailable``: no page could be shown (no browser);
#: ``cancelled``: the caller stopped waiting (imap_cancel_operation) before the user decided;
#: ``opened_twice``: the page was opened again (a reload, a restored tab), which cancels it. ``send`` and
#: ``dont_send`` (the approval and its refusal, whatever is asked) are as the first page, a send's, said them.
Decision = Literal["send", "dont_send", "expired", "cancelled", "opened_twice", "unavailable"]


class ApprovalPage(Protocol):
    """Where the user approves what the client cannot ask them (no MCP elicitation, or too much for its
    question): the browser approval page of a stdio server on the user's desktop plugs in here
    (``AppContext.approval_page``). Called with the ``review`` (every field and the full content), the
    ``digest`` the approval is bound to (of exactly the question elicitation would show and the call's
    arguments) and the ``render`` that shows the review on a page; blocks until the user decided or the
    page expired."""

    def __call__(self, review: Review, digest: str, render: Renderer) -> Decision: ...


@runtime_checkable
class StoppablePage(Protocol):
    """An approval page its caller can close early: ``stopped_by(cancelled)`` is the page closed as soon
    as ``cancelled()`` (a background operation cancelled; the user is told nothing was sent)."""

    def stopped_by(self, cancelled: Callable[[], bool]) -> ApprovalPage: ...


class ConfirmationGate:
    """Asks for confirmation, and issues and checks confirmation tokens (thread-safe).

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
        self._secret = secret or secrets.token_bytes(32)
        self._ttl_s = ttl_s
        self._tokens_for_irreversible = tokens_for_irreversible
        self._store: Store = store or MemoryStore()
        self._call = UserCall()

    def for_call(self, call: UserCall) -> ConfirmationGate:
        """This gate for one tool call: what its client can ask and what its user approved in it."""
        gate = copy.copy(self)
        gate._call = call
        return gate

    def require(
        self, tool: str, arguments: dict[str, Any], what: str, *, user: str, irreversible: bool = False
    ) -> None:
        """Return when the user confirmed this exact request of ``user`` (the caller; through the
        client, or with a valid ``confirm_token``); otherwise raise what asks for it.

        ``what`` says, for the user, what will happen (e.g. "permanently delete 3 messages");
        ``irreversible``: it cannot be undone, so only the user may confirm it (see the module).
        """
        if self._call.approved(_sentence(what)):
            return
        request = {key: value for key, value in arguments.items() if key != "confirm_token"}
        token = arguments.get("confirm_token")
        if irreversible and not self._tokens_for_irreversible:
            self._ask_user(what, token)
        if token is not None:
            self._accept(tool, request, token, user, what)
            return
        fresh = self._issue(tool, request, user, what)
        raise ToolFailure(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"This will {what}. Ask the user to confirm; if they agree, make the same call again with "
            f"confirm_token (valid {int(self._ttl_s)} s, for exactly this request).",
            details={
                "confirm_token": fresh,
                "expires_in_s": int(self._ttl_s),
                "confirm": _sentence(what),
            },
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
        if self._call.approved(_sentence(what)):
            return
        if self._call.can_ask_user:
            raise ToolFailure(
                ErrorCode.CONFIRMATION_REQUIRED,
                f"This will {what}; the user is asked to confirm it.",
                details={"confirm": _sentence(what), ASK_USER: True},
            )
        raise ToolFailure(ErrorCode.PERMISSION_DENIED, refusal, details=details, retryable=False)

    def asks_on_page(self, review: Review, page: ApprovalPage | None) -> bool:
        """Whether :meth:`require_approval` of ``review`` would wait for the user on ``page`` (not approved
        yet, and a client that cannot ask the user or a review only a page shows whole)."""
        can_ask = self._call.can_ask_user and review.page_only is None
        return page is not None and not self._call.approved(_sentence(review.question())) and not can_ask

    def require_approval(
        self, review: Review, page: ApprovalPage | None, render: Renderer = review_page
    ) -> None:
        """Return when the user approved ``review`` in this call: through the client (MCP elicitation, the
        approval bound to exactly its question and the call's arguments), else on ``page`` (shown by
        ``render``, bound to the same digest); only on ``page`` when ``review.page_only`` says why the
        client's question cannot show it whole. Otherwise raise what asks the user, or the refusal saying
        why nobody can be asked (``review.words``). No token and no setting passes this gate
        (``confirm_without_elicitation`` included)."""
        shown, words = _sentence(review.question()), review.words
        if self._call.approved(shown):
            return
        if self._call.can_ask_user and review.page_only is None:
            raise ToolFailure(
                ErrorCode.CONFIRMATION_REQUIRED, words.asking, details={"confirm": shown, ASK_USER: True}
            )
        digest = approval_digest(self._call.tool, self._call.arguments, question(shown))
        decision: Decision = "unavailable" if page is None else page(review, digest, render)
        if decision == "send":
            return
        if decision != "unavailable":
            said = {"cancelled": words.cancelled, "opened_twice": words.opened_twice}
            why = said.get(decision, words.declined.format(decision=decision))
            raise ToolFailure(
                ErrorCode.CONFIRMATION_REQUIRED,
                why,
                details={"approval": decision},
                retryable=False,
            )
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

    def _digest(
        self, tool: str, request: dict[str, Any], expires: int, nonce: str, user: str, what: str
    ) -> str:
        """The token's MAC: half of it over the request alone, half over the request and its user, so a
        token given to another user for the same request is told from a forged one (:meth:`_accept`).
        Both cover ``what`` the confirmation said: a token passes no other gate, and none whose words
        changed since (a rename's message count)."""
        return (
            self._mac(tool, request, expires, nonce, "", what)[:12]
            + self._mac(tool, request, expires, nonce, user, what)[12:]
        )

    def _mac(self, tool: str, request: dict[str, Any], expires: int, nonce: str, user: str, what: str) -> str:
        canonical = json.dumps(
            [tool, request, expires, nonce, user, what],
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        mac = hmac.new(self._secret, canonical.encode(), hashlib.sha256).digest()[:18]
        return base64.urlsafe_b64encode(mac).decode()

    def _issue(self, tool: str, request: dict[str, Any], user: str, what: str) -> str:
        # The nonce makes every token new: the same request asked twice within a second (e.g. a mailbox
        # deleted, created again and deleted again) must not get the token already used the first time.
        expires = int(time.time() + self._ttl_s)
        nonce = secrets.token_urlsafe(6)
        return f"{expires}.{nonce}.{self._digest(tool, request, expires, nonce, user, what)}"

    def _accept(self, tool: str, request: dict[str, Any], token: object, user: str, what: str) -> None:
        def refuse(problem: str) -> ToolFailure:
            return ToolFailure.invalid_input(
                "confirm_token", f"{problem}; call without confirm_token for a new one"
            )

        # ASCII only: int() takes other digits ('²') and compare_digest refuses non-ASCII text.
        if not isinstance(token, str) or not token.isascii() or token.count(".") != 2:
            raise refuse("not a confirmation token")
        stamp, nonce, digest = token.split(".")
        if not stamp.isdigit():
            raise refuse("this token was issued for a different request (or by another server process)")
        expected = self._digest(tool, request, int(stamp), nonce, user, what)
        if not hmac.compare_digest(digest, expected):
            if user and hmac.compare_digest(digest[:12], expected[:12]):
                # Another user's token for this very request: said as none at all, naming nobody.
                raise ToolFailure(
                    ErrorCode.NOT_FOUND,
                    "No such confirmation token (argument 'confirm_token'); call without confirm_token "
                    "for a new one.",
                    details={"parameter": "confirm_token"},
                    retryable=False,
                )
            raise refuse(
                "this token was issued for a different request, or what it confirms changed since (or "
                "another server process issued it)"
            )
        now = time.time()
        if int(stamp) < now:
            raise refuse("this token has expired")
        # Recorded until it expires, by whichever instance sees it first: it works once.
        if not self._store.mark_used(
            user_key("confirm-used", digest, user=user), int(stamp) - now + 1, owner=user_tag(user)
        ):
            raise refuse("this token was already used")


def _sentence(what: str) -> str:
    """``what`` as the user reads it (``Delete the mailbox 'Old'``)."""
    return what[:1].upper() + what[1:]
