"""The tools bound to the application: one envelope tool per declaration (``tools/registry.TOOLS``), whose
handler builds each call's view for its caller (:meth:`AppContext.for_caller`), hands it the call's way to
ask its user (``asking.asker``) and the gate bound to the call, runs the capability's gate where it is
checked at the call, and announces a write's account; and which tools a caller's ``tools/list`` leaves
out. The tools see the view as their :class:`~mail_imap_mcp.call.Call` alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking import asker
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.envelope.mcp import EnvelopeTool, envelope_tool
from mail_imap_mcp.envelope.request_state import StateSeal
from mail_imap_mcp.envelope.user_call import UserCall
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.ids import InvalidMessageId, parse_message_id
from mail_imap_mcp.operations import OperationRef
from mail_imap_mcp.presentation import failures
from mail_imap_mcp.presentation.result_size import fit_summaries
from mail_imap_mcp.state import ANONYMOUS
from mail_imap_mcp.tools.registry import TOOLS
from mail_imap_mcp.tools.spec import ToolSpec


def _changed_account(app: AppContext, args: Any) -> str | None:
    """The account a write's arguments name (``account_id``, else its message ids')."""
    ids = getattr(args, "message_ids", None) or [getattr(args, "message_id", None)]
    if isinstance(ids[0], str):
        try:
            return app.resolve_account(parse_message_id(ids[0], app.caller).account_id)
        except InvalidMessageId:
            return None
    account_id = getattr(args, "account_id", None)
    return app.resolve_account(account_id) if isinstance(account_id, str) else None


def _announce_change(app: AppContext, args: Any, result: ToolResult[Any]) -> None:
    """After a write tool that changed mail (not a dry run, not gone to the background: its watchers see
    that later), announce the account to the other instances."""
    data = result.data
    if not getattr(args, "dry_run", False) and not any(
        isinstance(getattr(data, name, None), OperationRef) for name in ("background", "operation")
    ):
        account_id = _changed_account(app, args)
        if account_id is not None:
            app.announce_change(account_id)


def _given(args: Any, name: str) -> bool:
    """Whether the call gave argument ``name`` a value other than its default."""
    return bool(getattr(args, name) != type(args).model_fields[name].default)


def _gated(spec: ToolSpec[Any]) -> Callable[[AppContext, Any], ToolResult[Any]]:
    """``spec``'s handler behind its capability's gate where that is checked at the call: on the account
    its arguments name (one they do not resolve to is left to the handler to refuse); and behind the gate
    of each argument, or value of an argument, of a capability (:attr:`ToolSpec.gated_arguments`,
    :attr:`ToolSpec.gated_values`) the call gives."""
    if not (spec.capability.checked_at_call or spec.gated_arguments or spec.gated_values):
        return spec.handle

    def handle(app: AppContext, args: Any) -> ToolResult[Any]:
        account_id = _changed_account(app, args)
        known = account_id is not None and account_id in app.config.accounts
        if known and spec.capability.checked_at_call:
            spec.capability.gate(app.config, str(account_id))
        given = [switch for name, switch in spec.gated_arguments.items() if _given(args, name)]
        given += [
            switch
            for name, values in spec.gated_values.items()
            for value, switch in values.items()
            if getattr(args, name) == value
        ]
        for switch in given:
            if known or switch.scope == "server":
                switch.gate(app.config, account_id or "")
        return spec.handle(app, args)

    return handle


def _handler(spec: ToolSpec[Any], app: AppContext) -> Callable[[Any, str, str, UserCall], ToolResult[Any]]:
    """The envelope tool's handler of ``spec``: the caller's view of ``app`` (:meth:`AppContext.for_caller`:
    the :class:`~mail_imap_mcp.state.Caller` record, their scope held under the call) handed to the
    tool's handler through the failure registry; a page of summaries kept within a result's bound; a
    write's announcing the account it changed."""

    def run(args: Any, user: str, as_given: str, call: UserCall) -> ToolResult[Any]:
        with app.for_caller(user, as_given).entered() as called:
            called.user_call, called.confirmations = call, app.confirmations.for_call(call)
            called.ask = asker(called, spec.name, args)
            result = failures.run(_gated(spec), called, args)
            bound_result(spec, result)
            if spec.writes:
                _announce_change(called, args, result)
            return result

    return run


def bound_result(spec: ToolSpec[Any], result: ToolResult[Any]) -> None:
    """Keep ``result`` of ``spec`` within a result's bound: a page of summaries shortened, the tool's own
    cut made (:attr:`ToolSpec.fit`)."""
    if spec.summaries:
        fit_summaries(result, spec.summaries)
    if spec.fit:
        spec.fit(result)


def build_tools(app: AppContext) -> list[EnvelopeTool]:
    """One envelope tool per declaration, its handler bound to ``app`` (a write's announcing the
    account it changed, :meth:`AppContext.announce_change`)."""
    return [_envelope_tool(spec, app, spec.annotations()) for spec in TOOLS]


def _envelope_tool(spec: ToolSpec[Any], app: AppContext, hints: dict[str, Any]) -> EnvelopeTool:
    return envelope_tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_model=spec.input_model,
        data_model=spec.data_model,
        other_data_models=spec.other_data_models,
        handler=_handler(spec, app),
        read_only=hints["readOnlyHint"],
        destructive=hints["destructiveHint"],
        idempotent=hints["idempotentHint"],
        takes_call=True,
        state_seal=StateSeal(sealing),
    )


def unlisted_tools(
    app: AppContext, user: str = ANONYMOUS, tools: Sequence[ToolSpec[Any]] = TOOLS
) -> set[str]:
    """Tools left out of ``tools/list``: those whose capability is off (:meth:`Capability.on`: the write
    tools when no account allows writes, so a read-only user pays no tokens for them; a sending tool when
    no account ``user`` may use has send_enabled). They still answer a call, with ``permission_denied``
    naming the setting."""
    off = {spec.listed_with for spec in tools if not spec.listed_with.on(app.full_config, user)}
    return {spec.name for spec in tools if spec.listed_with in off}


def hidden_arguments(
    app: AppContext, user: str = ANONYMOUS, tools: Sequence[ToolSpec[Any]] = TOOLS
) -> dict[str, set[str]]:
    """Per tool, the arguments left out of its listed ``inputSchema`` for ``user``: those whose capability
    is off (:attr:`ToolSpec.gated_arguments`). A call that gives one is refused naming the setting."""
    hidden = {
        spec.name: {
            name for name, switch in spec.gated_arguments.items() if not switch.on(app.full_config, user)
        }
        for spec in tools
    }
    return {tool: names for tool, names in hidden.items() if names}


def listed_annotations(
    app: AppContext, user: str = ANONYMOUS, tools: Sequence[ToolSpec[Any]] = TOOLS
) -> dict[str, dict[str, Any]]:
    """Per tool whose gated arguments ``user`` does not all see, its annotations as listed without them
    (:meth:`ToolSpec.annotations`): a tool is read-only as listed unless an argument listed changes
    something."""
    hidden = hidden_arguments(app, user, tools)
    return {spec.name: spec.annotations(hidden[spec.name]) for spec in tools if spec.name in hidden}


def hidden_values(
    app: AppContext, user: str = ANONYMOUS, tools: Sequence[ToolSpec[Any]] = TOOLS
) -> dict[str, dict[str, set[str]]]:
    """Per tool and argument, the values left out of its listed ``enum`` for ``user``: those whose
    capability is off (:attr:`ToolSpec.gated_values`). A call that gives one is refused naming the setting."""
    hidden = {
        spec.name: {
            name: {value for value, switch in values.items() if not switch.on(app.full_config, user)}
            for name, values in spec.gated_values.items()
        }
        for spec in tools
    }
    return {
        tool: {k: v for k, v in names.items() if v} for tool, names in hidden.items() if any(names.values())
    }
