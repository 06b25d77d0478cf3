"""The contract of a prompt: one declaration per prompt module, from which registration, completion and
docs/prompts.md are generated (as :mod:`mail_imap_mcp.tools.spec` is for the tools).

A prompt is a template a person picks in their client; it names the tools and their arguments for the
model to call, in the form ``imap_tool(argument=value)``. None adds to ``tools/list``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

#: What an argument's value is completed from (``completion/complete``): the caller's own accounts, or
#: the mailboxes of the account named by the prompt's ``account_id``.
Completes = Literal["account", "mailbox"]


class PromptArgumentError(ValueError):
    """A prompt was asked for with an argument it does not take, or without one it needs."""


@dataclass(frozen=True)
class PromptArgument:
    """One argument a person fills in: its name, words for them, and where its value is completed from."""

    name: str
    description: str
    #: The text put in the template where the person gave no value (``None``: the argument is required).
    absent: str | None = None
    completes: Completes | None = None

    @property
    def required(self) -> bool:
        return self.absent is None


@dataclass(frozen=True)
class PromptSpec:
    """One prompt: its name, title, description for the person choosing, arguments and template.

    ``template`` is a :meth:`str.format` text whose fields are the arguments' names; a value is put in
    as ``repr``-quoted text (``'INBOX'``), so a mailbox name cannot close the call it stands in.
    """

    name: str
    title: str
    description: str
    template: str
    arguments: tuple[PromptArgument, ...] = ()

    def render(self, values: Mapping[str, str]) -> str:
        """The template with ``values`` filled in; an unknown or missing required argument is refused."""
        known = {argument.name: argument for argument in self.arguments}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise PromptArgumentError(f"{self.name} takes no argument {', '.join(unknown)}")
        filled: dict[str, str] = {}
        for name, argument in known.items():
            given = values.get(name)
            if given:
                filled[name] = repr(given)
            elif argument.absent is None:
                raise PromptArgumentError(f"{self.name} needs the argument {name}")
            else:
                filled[name] = argument.absent
        return self.template.format_map(filled)

    def fields(self) -> set[str]:
        """The argument names the template uses."""
        return {name for _, name, _, _ in string.Formatter().parse(self.template) if name}
