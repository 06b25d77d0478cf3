"""MCP prompts: ready-made requests a person picks in their client, each naming the tools to call.

One module per prompt holds its :class:`~mail_imap_mcp.prompts.spec.PromptSpec`; :data:`PROMPTS` lists
them, :mod:`mail_imap_mcp.prompts.registry` registers them and completes their arguments.
"""

from __future__ import annotations

from mail_imap_mcp.prompts import clean_up_newsletters, daily_briefing, summarise_conversation, triage_inbox
from mail_imap_mcp.prompts.spec import PromptSpec

PROMPTS: tuple[PromptSpec, ...] = tuple(
    module.PROMPT for module in (triage_inbox, daily_briefing, summarise_conversation, clean_up_newsletters)
)

__all__ = ["PROMPTS", "PromptSpec"]
