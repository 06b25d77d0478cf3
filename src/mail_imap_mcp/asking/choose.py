"""Which way asks the user: one pure rule, :func:`choose`, over what the client can do (:class:`Client`),
what is asked (:class:`Question`) and where the server runs (:class:`Setup`). Every row of it is in
``tests/pure/test_asking_choose.py``; a new way (MCP Tasks' ``input_required``) is one more :class:`Way`
and one more row.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Client", "Question", "Setup", "Way", "choose"]


class Way(StrEnum):
    """How the user is asked, or why they need not (or cannot) be."""

    #: The user approved exactly this question in this call (the call run again after their "yes").
    ANSWERED = "answered"
    #: The client asks its user (MCP elicitation, a request back to the client), then runs the call again.
    ELICIT = "elicit"
    #: The same, in the protocol with no request back to the client (2026-07-28 on): an ``input_required``
    #: result the client answers by calling again.
    INPUT_REQUIRED = "input_required"
    #: A confirmation token the agent passes on once the user agreed (a client that can ask asks with it).
    TOKEN = "token"
    #: The approval page, waited for within the call (it carries a progressToken: progress keeps it alive).
    PAGE = "page"
    #: The approval page, waited for in a background operation the agent polls.
    PAGE_IN_BACKGROUND = "page_in_background"
    #: Nobody can be asked: the refusal says why and what to do instead.
    REFUSE = "refuse"


@dataclass(frozen=True)
class Client:
    """The call's client: whether it asks its user (MCP elicitation) and how (``in_result``: an
    ``input_required`` result), whether it listens for progress (a progressToken), and whether its user
    already approved this very question in this call."""

    can_ask: bool = False
    in_result: bool = False
    listens: bool = False
    approved: bool = False


@dataclass(frozen=True)
class Question:
    """What is asked. ``approval``: a review to approve (an ``Ask``), else a write to confirm (a
    ``Confirm``). ``page_only``: only a page shows it whole. ``user_only``: only the user may answer it
    (no token): a confirmation with a refusal of its own. ``irreversible``: it cannot be undone (user only
    unless the setup takes tokens for it). ``confirmable``: an approval a token may stand in for where
    nobody can be asked."""

    approval: bool
    page_only: bool = False
    user_only: bool = False
    irreversible: bool = False
    confirmable: bool = False


@dataclass(frozen=True)
class Setup:
    """Where the server runs: whether an approval page can open (a stdio server on the user's desktop) and
    ``tokens_for_irreversible`` (``[server] confirm_without_elicitation``)."""

    page: bool = False
    tokens_for_irreversible: bool = False


def choose(client: Client, question: Question, setup: Setup) -> Way:
    """The way ``question`` is asked of ``client``'s user where the server runs as ``setup``."""
    if client.approved:
        return Way.ANSWERED
    asks = Way.INPUT_REQUIRED if client.in_result else Way.ELICIT
    if not question.approval:
        user_only = question.user_only or (question.irreversible and not setup.tokens_for_irreversible)
        if not user_only:
            return Way.TOKEN  # the envelope layer asks with it where the client can
        return asks if client.can_ask else Way.REFUSE
    if client.can_ask and not question.page_only:
        return asks
    if setup.page:
        return Way.PAGE if client.listens else Way.PAGE_IN_BACKGROUND
    return Way.TOKEN if question.confirmable else Way.REFUSE
