"""What a tool call may ask its user, as records a tool or a service hands to the call's ``ask`` (the
ways of asking are :mod:`mail_imap_mcp.asking`'s; neither record knows them):

- :class:`Ask`: approve exactly what a review shows, then have it done (a send);
- :class:`Confirm`: confirm a write before it is done (a mailbox renamed or deleted, a permanent delete,
  a draft with attachments replaced).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from mail_imap_mcp.approval.request import Renderer
from mail_imap_mcp.approval.review import Review
from mail_imap_mcp.envelope import ToolResult


@dataclass(frozen=True)
class Ask:
    """What a tool asks the user to approve, on ``account_id``: ``review`` (every field and the full
    content; the approval is bound to its question and the call's arguments), ``render`` (how a page shows
    it), ``then`` (what is done once approved, in the call or in the background), ``waiting`` (held while
    the user may take minutes on a page: what must not happen meanwhile) and ``audited`` (around every
    step, saying a failure as the tool's). ``ask`` answers what ``then`` answered, or the background
    operation waiting for the user, which counts ``messages`` (those the request is about) as its items."""

    account_id: str
    review: Review
    render: Renderer
    then: Callable[[], ToolResult[Any]]
    waiting: Callable[[], AbstractContextManager[object]]
    audited: Callable[[], AbstractContextManager[None]]
    messages: int = 1


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
