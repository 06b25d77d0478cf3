"""The approval page as a way of asking (:class:`~.answers.ApprovalPage`): where the client cannot ask the
user (no MCP elicitation, or too much for its question), what is asked is shown by its request's renderer
(any review: ``page_server.page.review_page``; a draft to send: ``services/send_page.py``) on a one-time page
on 127.0.0.1 (:mod:`.page_server`), in the request's words, and the user's approval there approves exactly it.

:func:`approval_page` takes the browser opener (whatever decides whether and how a browser may open, as
the sign-in does); the server sets ``AppContext.approval_page`` to it where a browser may open (stdio on
the user's desktop). The page's request carries the digest of the question the user would have been
shown by elicitation and the call's arguments: a decision counts only when it carries that digest back.
A call that carries a progressToken waits for the decision here, telling the client every
:data:`PROGRESS_EVERY_S` that it still waits; a call waiting as a background operation passes its
cancellation (``cancelled``), which closes the page (it then tells the user nothing was done).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from pydantic import ValidationError

from mail_imap_mcp.asking.page_server import DEFAULT_TTL_S, Outcome, PageDecision, ask_blocking
from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.envelope.call_context import progress_reporter

from .answers import Answer, ApprovalPage

#: How often a call waiting for the page tells the client it is still waiting (progress notifications).
PROGRESS_EVERY_S = 10.0
#: What the user answered, by how the page ended (approved only with the request's digest).
_ANSWERS: dict[Outcome, Answer] = {
    Outcome.DECLINED: Answer.DECLINED,
    Outcome.EXPIRED: Answer.EXPIRED,
    Outcome.OPENED_TWICE: Answer.OPENED_TWICE,
    Outcome.NOT_OPENED: Answer.UNAVAILABLE,
    Outcome.CANCELLED: Answer.CANCELLED,
}


@dataclass(frozen=True)
class BrowserApprovalPage:
    """The approval page: what is asked, as its renderer shows it, in the browser ``open_url`` opens, for ``timeout_s``
    (by ``clock``, monotonic seconds, as well as by the event loop's time); closed early when
    ``cancelled()`` says its caller stopped waiting (:meth:`stopped_by`)."""

    open_url: Callable[[str], bool]
    timeout_s: float = DEFAULT_TTL_S
    clock: Callable[[], float] = time.monotonic
    cancelled: Callable[[], bool] | None = None

    def stopped_by(self, cancelled: Callable[[], bool]) -> BrowserApprovalPage:
        """This page, closed as soon as ``cancelled()`` (a background operation cancelled)."""
        return replace(self, cancelled=cancelled)

    def __call__(self, review: Review, digest: str, render: Renderer) -> Answer:
        try:
            request = render(review, digest)
        except (ValidationError, ValueError, LookupError):  # beyond the page's bounds: not approvable there
            return Answer.UNAVAILABLE

        def page(decided: Callable[[PageDecision], None]) -> PageDecision:
            return ask_blocking(
                request,
                self.open_url,
                self.timeout_s,
                clock=self.clock,
                cancelled=self.cancelled,
                decided=decided,
            )

        decision = _waiting(page, self.timeout_s, request.words.waiting)
        if decision is None:
            return Answer.UNAVAILABLE
        if decision.approves(request.digest):
            return Answer.APPROVED
        return _ANSWERS.get(decision.outcome, Answer.DECLINED)


def approval_page(
    open_url: Callable[[str], bool],
    timeout_s: float = DEFAULT_TTL_S,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> ApprovalPage:
    """The approval page (:class:`BrowserApprovalPage`) in the browser ``open_url`` opens."""
    return BrowserApprovalPage(open_url, timeout_s, clock)


def _waiting(
    ask: Callable[[Callable[[PageDecision], None]], PageDecision], timeout_s: float, waiting: str
) -> PageDecision | None:
    """``ask(decided)`` on a thread of its own while this one (the call's) tells the client, every
    :data:`PROGRESS_EVERY_S`, that the user is being waited for (``waiting``): a client that asked for progress keeps the
    call alive meanwhile. The decision as soon as ``decided`` hears it (a cancelled page stays open a while
    to say so); None when the page failed."""
    decisions: list[PageDecision] = []
    known = threading.Event()

    def heard(decision: PageDecision) -> None:
        decisions.append(decision)
        known.set()

    def run() -> None:
        try:
            ask(heard)
        finally:
            known.set()

    threading.Thread(target=run, name="approval-page", daemon=True).start()
    report = progress_reporter.get()
    started = time.monotonic()
    while not known.wait(PROGRESS_EVERY_S):
        if report is not None:
            waited = int(time.monotonic() - started)
            report(waited, int(timeout_s), waiting)
    return decisions[0] if decisions else None
