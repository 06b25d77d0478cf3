"""The prompts on a server, and the completion of their arguments from the caller's own accounts.

``completion/complete`` is answered per request: the request's user (the HTTP transport's verified
access token) sees only their accounts (:meth:`AppContext.for_caller`), and the mailboxes of one of
those. It answers resource templates' ``account_id`` and ``mailbox`` the same way.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Message, Prompt, UserMessage
from mcp.server.mcpserver.prompts.base import PromptArgument as SdkPromptArgument
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CompleteRequestParams, CompleteResult, Completion, PromptReference
from pydantic import Field

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.presentation.failures import failure_of
from mail_imap_mcp.prompts import PROMPTS
from mail_imap_mcp.prompts.spec import Completes, PromptArgumentError, PromptSpec
from mail_imap_mcp.sdk import lowlevel_server
from mail_imap_mcp.state import user_of

log = logging.getLogger("mail_imap_mcp")

#: At most this many values in one completion (the protocol's own bound).
MAX_VALUES = 100
#: What the arguments of a resource template complete from (they bear these names there).
TEMPLATE_ARGUMENTS: dict[str, Completes] = {"account_id": "account", "mailbox": "mailbox"}


def register_prompts(server: MCPServer[Any], app: AppContext) -> None:
    """Add every prompt of :data:`PROMPTS` to ``server``, and the completion of their arguments."""
    for spec in PROMPTS:
        server.add_prompt(_sdk_prompt(spec))
    completes = {spec.name: {a.name: a.completes for a in spec.arguments if a.completes} for spec in PROMPTS}

    async def complete(ctx: ServerRequestContext[Any], params: CompleteRequestParams) -> CompleteResult:
        if isinstance(params.ref, PromptReference):
            kind = completes.get(params.ref.name, {}).get(params.argument.name)
        else:
            kind = TEMPLATE_ARGUMENTS.get(params.argument.name)
        given = params.context.arguments if params.context and params.context.arguments else {}
        values = [] if kind is None else await _candidates(app, user_of(ctx), kind, given)
        prefix = params.argument.value.casefold()
        matching = [value for value in values if value.casefold().startswith(prefix)]
        return CompleteResult(
            completion=Completion(
                values=matching[:MAX_VALUES], total=len(matching), has_more=len(matching) > MAX_VALUES
            )
        )

    lowlevel_server(server).add_request_handler("completion/complete", CompleteRequestParams, complete)


class _TemplatePrompt(Prompt):
    """A prompt rendered from its :class:`PromptSpec`; a wrong argument is the caller's error
    (``INVALID_PARAMS`` naming it), not the SDK's "internal error"."""

    spec: PromptSpec = Field(exclude=True)

    async def render(self, arguments: dict[str, Any] | None, context: Any) -> list[Message]:
        try:
            return [UserMessage(self.spec.render(arguments or {}))]
        except PromptArgumentError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None


def _sdk_prompt(spec: PromptSpec) -> Prompt:
    return _TemplatePrompt(
        spec=spec,
        fn=spec.render,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        arguments=[
            SdkPromptArgument(name=a.name, description=a.description, required=a.required)
            for a in spec.arguments
        ],
    )


async def _candidates(app: AppContext, user: str, kind: Completes, given: dict[str, str]) -> list[str]:
    return await anyio.to_thread.run_sync(_candidates_of_user, app, user, kind, given)


def _candidates_of_user(app: AppContext, user: str, kind: Completes, given: dict[str, str]) -> list[str]:
    """The caller's account ids, or the mailbox names of the one of their accounts ``given`` names (none
    where it names no account of theirs, or the server cannot be reached: a completion is a hint)."""
    with app.for_caller(user).entered() as called:
        accounts = sorted(called.config.accounts)
        if kind == "account":
            return accounts
        account_id = given.get("account_id") or (accounts[0] if accounts else "")
        if account_id not in accounts:
            return []
        from mail_imap_mcp.imap.mailboxes import list_mailboxes  # with the connection stack it runs on

        try:
            boxes = called.connection(account_id).run(list_mailboxes)
        except Exception as exc:  # a domain error (the registry words it): no hint rather than a failure
            if failure_of(exc) is None:
                raise
            log.info("no mailbox completion for %s: %s", account_id, type(exc).__name__)
            return []
        return [box.name for box in boxes if box.selectable]
