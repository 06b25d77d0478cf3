"""The rules of one approval page, without any I/O: its one-time address, its per-page token, its expiry
and who may answer it (the Host and Origin a request must carry). :mod:`.server` applies them to HTTP.

The page's address holds a random token (the path); the page, once shown, holds another (the form's
``csrf`` field, never in a URL). A decision needs both, the request's digest, the page shown exactly
once, the time before the expiry, and a same-origin POST to the loopback address itself.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from .request import Outcome, PageDecision

__all__ = ["Answer", "ApprovalSlot", "Opening", "allowed_hosts", "host_allowed", "origin_allowed"]

PATH_PREFIX = "/approve/"


def new_token() -> str:
    """256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def allowed_hosts(port: int) -> frozenset[str]:
    """The Host values the page answers: the loopback address it listens on, by number or as localhost."""
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})


def host_allowed(host: str | None, port: int) -> bool:
    """Whether a request's Host names this listener (a DNS-rebinding page's request names its own host)."""
    return host is not None and host.strip().lower() in allowed_hosts(port)


def origin_allowed(origin: str | None, port: int) -> bool:
    """Whether a POST comes from the page itself: a browser always sends Origin with a POST, and another
    page's (or an opaque ``null``) origin is refused, as is a POST with none."""
    return origin is not None and origin.strip().lower() in {f"http://{host}" for host in allowed_hosts(port)}


class Opening(StrEnum):
    """What a GET of the page's address gets."""

    SHOW = "show"  # the page, this once
    NOT_FOUND = "not_found"  # another address
    OPENED_TWICE = "opened_twice"  # the address was opened before: the approval is void
    EXPIRED = "expired"
    DECIDED = "decided"  # already answered (or void)


class Answer(StrEnum):
    """What a POST of the page's form gets."""

    APPROVED = "approved"
    DECLINED = "declined"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"  # not the page's token, not its digest, or the page was never shown
    BAD_REQUEST = "bad_request"  # neither "approve" nor "decline"
    EXPIRED = "expired"
    DECIDED = "decided"


@dataclass
class ApprovalSlot:
    """One approval: decided at most once, by the first valid answer, and never by time running back.

    ``clock`` is monotonic seconds (tests move it); ``ttl_s`` counts from the slot's creation.
    """

    digest: str
    ttl_s: float
    clock: Callable[[], float]
    # Kept out of the repr: a slot written to a log must not hold the page's secrets.
    path_token: str = field(default_factory=new_token, repr=False)
    csrf_token: str = field(default_factory=new_token, repr=False)
    created: float = field(init=False)
    shown: bool = field(default=False, init=False)
    outcome: Outcome | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.created = self.clock()

    @property
    def path(self) -> str:
        return PATH_PREFIX + self.path_token

    @property
    def decision(self) -> PageDecision | None:
        if self.outcome is None:
            return None
        return PageDecision(
            outcome=self.outcome, digest=self.digest if self.outcome is Outcome.APPROVED else None
        )

    def expire_if_due(self) -> bool:
        """Decide ``expired`` once the time is up (if nothing was decided); whether the slot is over."""
        if self.outcome is None and self.clock() - self.created >= self.ttl_s:
            self.outcome = Outcome.EXPIRED
        return self.outcome is not None

    def end(self, outcome: Outcome) -> None:
        """Decide ``outcome`` unless something was decided already (the first decision stands)."""
        if self.outcome is None:
            self.outcome = outcome

    def open(self, path: str) -> Opening:
        """A GET of ``path``: the page is shown once; a second opening voids the approval."""
        if not _same(path, self.path):
            return Opening.NOT_FOUND
        if self.expire_if_due():
            return Opening.EXPIRED if self.outcome is Outcome.EXPIRED else Opening.DECIDED
        if self.shown:
            self.outcome = Outcome.OPENED_TWICE
            return Opening.OPENED_TWICE
        self.shown = True
        return Opening.SHOW

    def viewable(self, path: str) -> bool:
        """Whether a GET of ``path`` may have one of the page's views: the page's own address, while the
        page shown is waiting for its answer (a view opens nothing and voids nothing)."""
        return _same(path, self.path) and self.shown and not self.expire_if_due()

    def answer(self, path: str, csrf: str | None, digest: str | None, choice: str | None) -> Answer:
        """A POST of the form to ``path`` (Host and Origin already checked by the caller)."""
        if not _same(path, self.path):
            return Answer.NOT_FOUND
        if self.expire_if_due():
            return Answer.EXPIRED if self.outcome is Outcome.EXPIRED else Answer.DECIDED
        if not self.shown or not _same(csrf, self.csrf_token) or not _same(digest, self.digest):
            return Answer.FORBIDDEN
        if choice == "approve":
            self.outcome = Outcome.APPROVED
            return Answer.APPROVED
        if choice == "decline":
            self.outcome = Outcome.DECLINED
            return Answer.DECLINED
        return Answer.BAD_REQUEST
