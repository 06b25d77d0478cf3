"""The user's approval on a one-time page on 127.0.0.1 (issue 49), of whatever a call asks.

``await ask(request, open_url, timeout)`` (or ``ask_blocking`` in a worker thread) shows a
:class:`PageRequest` (what a renderer made of a :class:`~.review.Review`) in the user's browser and returns
a :class:`PageDecision`; :mod:`.slot` holds the page's rules, :mod:`.page` its HTML, :mod:`.server` the
listener. It knows no IMAP, SMTP or MCP: the caller builds the request and acts on the decision.
"""

from .request import Outcome, PageDecision, PageRequest, PageWords, Renderer
from .server import DEFAULT_TTL_S, MAX_TTL_S, ApprovalServer, ask, ask_blocking

__all__ = [
    "DEFAULT_TTL_S",
    "MAX_TTL_S",
    "ApprovalServer",
    "Outcome",
    "PageDecision",
    "PageRequest",
    "PageWords",
    "Renderer",
    "ask",
    "ask_blocking",
]
