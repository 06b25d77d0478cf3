"""What the user answered, whichever way asked them: one vocabulary (:class:`Answer`), the approval of
anything, never a send's words; and the page a way of asking shows (:class:`ApprovalPage`).

What the agent is told of an answer other than approval is the request's own words
(:class:`~mail_imap_mcp.asking.review.ReviewWords`): a send says it was not sent, a move that it was not
moved.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Protocol, runtime_checkable

from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review

__all__ = ["Answer", "ApprovalPage", "StoppablePage"]


class Answer(StrEnum):
    """What the user decided on a page, or why nobody did."""

    APPROVED = "approved"
    DECLINED = "declined"
    EXPIRED = "expired"
    #: The caller stopped waiting (imap_cancel_operation) before the user decided.
    CANCELLED = "cancelled"
    #: The page was opened again (a reload, a restored tab), which cancels it.
    OPENED_TWICE = "opened_twice"
    #: No page could be shown (no browser, or more than a page shows whole).
    UNAVAILABLE = "unavailable"


class ApprovalPage(Protocol):
    """Where the user approves what the client cannot ask them (no MCP elicitation, or too much for its
    question): the browser approval page of a stdio server on the user's desktop plugs in here
    (``AppContext.approval_page``, :mod:`.page`). Called with the ``review`` (every field and the full
    content), the ``digest`` the approval is bound to (of exactly the question elicitation would show and
    the call's arguments) and the ``render`` that shows the review on a page; blocks until the user
    decided or the page expired."""

    def __call__(self, review: Review, digest: str, render: Renderer) -> Answer: ...


@runtime_checkable
class StoppablePage(Protocol):
    """An approval page its caller can close early: ``stopped_by(cancelled)`` is the page closed as soon
    as ``cancelled()`` (a background operation cancelled; the user is told nothing was done)."""

    def stopped_by(self, cancelled: Callable[[], bool]) -> ApprovalPage: ...
