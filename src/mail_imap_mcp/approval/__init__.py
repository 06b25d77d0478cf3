"""The user's approval of a message to send, on a one-time page on 127.0.0.1 (issue 49).

``await ask(request, open_url, timeout)`` (or ``ask_blocking`` in a worker thread) shows an :class:`ApprovalRequest` in the user's browser and
returns a :class:`Decision`; :mod:`.slot` holds the page's rules, :mod:`.page` its HTML, :mod:`.server` the
listener. It knows no IMAP, SMTP or MCP: the send tool builds the request and acts on the decision.
"""

from .request import ApprovalRequest, AttachmentShown, Decision, Outcome
from .server import DEFAULT_TTL_S, MAX_TTL_S, ApprovalServer, ask, ask_blocking

__all__ = [
    "DEFAULT_TTL_S",
    "MAX_TTL_S",
    "ApprovalRequest",
    "ApprovalServer",
    "AttachmentShown",
    "Decision",
    "Outcome",
    "ask",
    "ask_blocking",
]
