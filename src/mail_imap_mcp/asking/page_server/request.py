"""What a page asks the user to approve (:class:`PageRequest`, made by a :data:`Renderer` from a
:class:`~.review.Review`) and what they decided (:class:`PageDecision`).

A request is whatever a renderer shows, already escaped, with the words of the page and the digest the
approval is bound to: the caller computes it over exactly what it shows and the call's arguments, and
acts only if the decision carries that same digest back. :func:`.page.review_page` renders any review
(every field, each content whole); a richer renderer (a message to send, ``services/send_page.py``) shows
the same in its own form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from mail_imap_mcp.asking.review import Review

__all__ = ["DIGEST_PATTERN", "Outcome", "PageDecision", "PageRequest", "PageWords", "Renderer"]

#: What a digest looks like (the page's form carries it back, so it holds no character HTML would alter).
DIGEST_PATTERN = r"^[A-Za-z0-9_:.-]{16,200}$"


@dataclass(frozen=True)
class PageWords:
    """The page's words for what it asks, in the user's terms (each one sentence or a few words)."""

    heading: str = "Approve this?"
    #: HTML, the program's own (never a request's text).
    note: str = (
        "Your assistant asks mail-imap-mcp to do what is shown below. It is done only if you press "
        "<b>Approve</b>, and only as shown here."
    )
    approve: str = "Approve"
    decline: str = "Don't approve"
    #: The title of the page that answers a decline.
    declined: str = "Not done"
    #: Said after every refusal or ending without approval.
    nothing_done: str = "Nothing was done."
    #: What a reload of the page means (inside a sentence).
    nothing_happens: str = "nothing is done"
    approved: str = "mail-imap-mcp does it now; your assistant tells you the outcome. You can close this tab."
    ask_again: str = "Ask your assistant again if you want it done."
    #: What a call waiting for the page tells its client (progress notifications).
    waiting: str = "Waiting for the user's approval in their browser"


class PageRequest(Protocol):
    """What one page shows: its ``digest`` (what the approval binds to), its ``words`` and its body."""

    @property
    def digest(self) -> str: ...

    @property
    def words(self) -> PageWords: ...

    def body_html(self) -> str:
        """The page's content as HTML, everything from the request escaped or sanitised."""
        ...

    def view(self, number: int) -> str | None:
        """The document of the page's view ``number`` (from 1): HTML the body shows in a sandboxed frame
        of its own (:func:`.page.view_frame`), served as its own response under :data:`.page.VIEW_HEADERS`
        so that nothing is added to it; None where there is no such view."""
        ...


#: How a review is shown on a page, bound to a digest; raises ``ValueError`` (pydantic's
#: ``ValidationError`` too) where it cannot show the review whole.
Renderer = Callable[[Review, str], PageRequest]


class Outcome(StrEnum):
    """How an approval ended."""

    APPROVED = "approved"  # the user pressed the approving button on the page of this request
    DECLINED = "declined"  # the user pressed the declining one
    EXPIRED = "expired"  # no answer before the page expired
    OPENED_TWICE = "opened_twice"  # the one-time address was opened again: someone else may hold it
    NOT_OPENED = "not_opened"  # the browser could not be opened
    CANCELLED = "cancelled"  # the caller stopped waiting (imap_cancel_operation) before the user decided


class PageDecision(BaseModel):
    """What the user decided; ``digest`` is the request's, and is set only when approved."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: Outcome
    digest: str | None = None

    @property
    def approved(self) -> bool:
        return self.outcome is Outcome.APPROVED and self.digest is not None

    def approves(self, digest: str) -> bool:
        """Whether this is the user's approval of exactly ``digest`` (what the caller is about to do)."""
        return self.approved and self.digest == digest
