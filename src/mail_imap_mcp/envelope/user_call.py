"""One tool call as asking its user goes, handed down with the call (never a ContextVar): the tool and its
arguments as the client sent them (what an approval is bound to), what the client can do (ask its user by
MCP elicitation, and in which form; listen for progress), and the approvals its user gave in this call."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

#: ``error.details`` key of a ``confirmation_required`` failure that only the user can answer.
ASK_USER = "ask_user"


def question(confirm: str) -> str:
    """The question the user is shown for a failure's ``details["confirm"]``."""
    return f"{confirm}?"


def approval_digest(tool: str, arguments: dict[str, Any], shown: str) -> str:
    """What one "yes" approves: ``shown`` (exactly the question the user read) for this tool and these
    arguments (``confirm_token`` aside: the token path runs the same request again with it)."""
    request = {key: value for key, value in arguments.items() if key != "confirm_token"}
    canonical = json.dumps([tool, request, shown], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class UserCall:
    """A call of ``tool`` with ``arguments``; ``can_ask_user``: its client declared MCP elicitation;
    ``progress_asked``: it carries a progressToken (it may wait long for the user); ``approvals``: the
    :func:`approval_digest` of each question the user approved in it."""

    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    #: Whose call it is (folded), and the name as their token spelled it (empty: nobody in particular).
    user: str = ""
    as_given: str = ""
    can_ask_user: bool = False
    #: It asks its user in an ``input_required`` result (2026-07-28 on), not by a request back.
    asks_in_result: bool = False
    progress_asked: bool = False
    approvals: frozenset[str] = frozenset()

    def approved(self, confirm: str) -> bool:
        """Whether the user approved, in this call, exactly the question of ``confirm`` for its arguments."""
        return approval_digest(self.tool, self.arguments, question(confirm)) in self.approvals
