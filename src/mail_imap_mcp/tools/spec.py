"""The contract of a tool: one declaration per tool module, from which everything else is generated.

Registration (:func:`mail_imap_mcp.tools.build_tools`), the ``tools/list`` snapshot and docs/tools.md
all read :class:`ToolSpec`; a reader finds a tool's whole story (what it is for, its arguments, its
data, its errors, whether it changes mail) in its own module.

A tool module imports at its top what listing it needs (its words, models and capability); its handler
imports the services it runs when it is called: a server's start lists every tool and runs none
(``tests/unit/test_start_cost.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import (
    DESTRUCTIVE_WRITING,
    DRAFT_CONTENTS,
    FOLLOWING,
    READING,
    SENDING,
    STOPPING,
    WRITING,
    Capability,
    Effect,
)
from mail_imap_mcp.envelope import ToolResult

InputT = TypeVar("InputT", bound=BaseModel)


@dataclass(frozen=True)
class ToolSpec(Generic[InputT]):
    """One tool: name, words for the model, models, handler, errors, and its capability (its effect on
    mail, its gate, whether it is listed and its share of the surface budget)."""

    name: str
    title: str
    description: str
    input_model: type[InputT]
    data_model: type[BaseModel]
    handle: Callable[[Call, InputT], ToolResult[Any]]
    errors: Mapping[str, str]
    #: Other shapes ``data`` takes on success, chosen by an argument (e.g. the compact default besides
    #: the full shape of ``data_model``); the outputSchema accepts each.
    other_data_models: tuple[type[BaseModel], ...] = ()
    capability: Capability = READING
    #: Calling it twice with the same arguments has the effect of calling it once.
    idempotent: bool = True
    #: The capability that lists it where that is not its own (following or stopping a background
    #: operation: listed where writing or sending can start one).
    listed_by: Capability | None = None
    #: What changed in this release that a caller relies on (docs/tools.md's "Changed" list).
    changes: tuple[str, ...] = ()
    #: The whole story for docs/tools.md, beyond the short ``description`` a model reads in tools/list
    #: (every byte of that is paid for in every conversation): rules, limits and why.
    details: str = ""
    #: The attribute of ``data`` holding a page of message summaries, shortened where the page would pass
    #: a result's bound (:func:`~mail_imap_mcp.presentation.result_size.fit_summaries`).
    summaries: str | None = None
    #: Keeps a result of this tool within a result's bound after its handler (e.g. cuts a long list).
    fit: Callable[[ToolResult[Any]], None] | None = None
    #: Arguments that exist only where a capability is on: left out of the listed ``inputSchema`` where it
    #: is off, and refused (its capability's refusal) when given there.
    gated_arguments: Mapping[str, Capability] = field(default_factory=dict)
    #: Values of an argument (an enum's) that exist only where a capability is on, as
    #: ``{argument: {value: capability}}``: left out of the listed enum where it is off, and refused (its
    #: capability's refusal) when given there.
    gated_values: Mapping[str, Mapping[str, Capability]] = field(default_factory=dict)
    #: What a call's raw arguments ask for, in the words a failure's summary leads with ("Unsubscribe
    #: failed ...", not the title of a tool of several actions); None: the title.
    asked: Callable[[Mapping[str, Any]], str | None] | None = None

    @property
    def effect(self) -> Effect:
        return self.capability.effect

    @property
    def writes(self) -> bool:
        return self.capability.writes

    @property
    def sends(self) -> bool:
        return self.effect is Effect.SEND

    @property
    def listed_with(self) -> Capability:
        """The capability that must be on for it to be listed (:attr:`listed_by`, else its own)."""
        return self.capability if self.listed_by is None else self.listed_by

    @property
    def capabilities(self) -> tuple[Capability, ...]:
        """Every capability it declares: its own, its listing's and its arguments' (those that put bytes of it
        on the surface)."""
        values = [switch for gated in self.gated_values.values() for switch in gated.values()]
        return tuple(
            dict.fromkeys((self.capability, self.listed_with, *self.gated_arguments.values(), *values))
        )

    def annotations(self, hidden: Collection[str] = ()) -> dict[str, Any]:
        """The MCP tool annotations (``readOnlyHint``, ``destructiveHint``, ...) of this tool as listed
        without the gated arguments ``hidden``: those of its capability, made no longer read-only (or
        idempotent) by a listed argument whose capability changes something (or adds on each use)."""
        listed = [switch for name, switch in self.gated_arguments.items() if name not in hidden]
        hints = self.capability.annotations(self.idempotent and all(switch.idempotent for switch in listed))
        for switch in listed:
            hints["readOnlyHint"] = hints["readOnlyHint"] and not switch.changes_anything
            hints["destructiveHint"] = hints["destructiveHint"] or switch.effect is Effect.DESTRUCTIVE
        return hints


__all__ = [
    "DESTRUCTIVE_WRITING",
    "DRAFT_CONTENTS",
    "FOLLOWING",
    "READING",
    "SENDING",
    "STOPPING",
    "WRITING",
    "Effect",
    "ToolSpec",
]
