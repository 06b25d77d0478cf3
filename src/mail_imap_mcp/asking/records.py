"""What a tool call may ask its user, as records a tool or a service hands to the call's ``ask``, and what
it gets back (the ways of asking are the rest of :mod:`mail_imap_mcp.asking`; no record knows them):

- :class:`Ask`: approve exactly what a review shows, then have it done (a send, leaving lists, a move by
  search); ``ask`` answers :class:`Done` (what ``then`` answered) or :class:`Waiting` (the background
  operation waiting for the user on a page), and the tool words either without asking which way was taken;
- :class:`Confirm`: confirm a write before it is done (a mailbox renamed or deleted, a permanent delete,
  a draft with attachments replaced); ``ask`` returns once it is confirmed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.envelope import ToolResult

if TYPE_CHECKING:
    from mail_imap_mcp.operations import Operation

__all__ = ["Ask", "Asked", "Confirm", "Done", "Waiting"]


@dataclass(frozen=True)
class Ask:
    """What a tool asks the user to approve, on ``account_id``: ``review`` (every field and the full
    content; the approval is bound to its question and the call's arguments), ``render`` (how a page shows
    it), ``then`` (what is done once approved, in the call or in the background), ``waiting`` (held while
    the user may take minutes on a page: what must not happen meanwhile) and ``audited`` (around every
    step, saying a failure as the tool's). The background operation waiting for the user counts
    ``messages`` (those the request is about) as its items. ``confirmable``: where nobody can be asked
    (no elicitation, no page), confirming its closing line may stand in for the approval, as a mailbox
    delete is confirmed (a token the agent passes on after asking the user); a send never is."""

    account_id: str
    review: Review
    render: Renderer
    then: Callable[[], ToolResult[Any]]
    waiting: Callable[[], AbstractContextManager[object]]
    audited: Callable[[], AbstractContextManager[None]]
    messages: int = 1
    confirmable: bool = False

    def confirmed_as(self) -> Confirm:
        """What is confirmed instead when nobody can be asked (``confirmable`` only): the review's closing
        line, as a reversible write's confirmation."""
        closing = self.review.closing
        return Confirm(closing[:1].lower() + closing[1:])


@dataclass(frozen=True)
class Confirm:
    """A write to be confirmed before it is done: ``what`` will happen, in the user's words ("delete the
    mailbox 'Old' in account 'work'"), bound to the call's arguments. ``irreversible``: it cannot be
    undone, so only the user may confirm it (a token only with ``confirm_without_elicitation``).
    ``refusal``: only the user may confirm it, through the client, whatever the settings; what a client
    that cannot ask is told to do instead, with ``details``. ``ask`` returns once it is confirmed."""

    what: str
    irreversible: bool = False
    refusal: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Done:
    """The user approved in this call and it was done: ``result`` is what the request's ``then`` answered."""

    result: ToolResult[Any]

    def answer(self, waiting: Callable[[Operation], ToolResult[Any]]) -> ToolResult[Any]:
        """The tool's answer: the result itself."""
        return self.result


@dataclass(frozen=True)
class Waiting:
    """The user decides on a page while ``operation`` waits in the background (the agent polls it)."""

    operation: Operation

    def answer(self, waiting: Callable[[Operation], ToolResult[Any]]) -> ToolResult[Any]:
        """The tool's answer: ``waiting`` of the operation (how the tool says it goes on)."""
        return waiting(self.operation)


#: What ``ask`` answers an :class:`Ask`.
Asked = Done | Waiting
