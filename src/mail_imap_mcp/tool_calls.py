"""The tools bound to the application: one envelope tool per declaration (``tools/registry.TOOLS``), whose
handler builds each call's frozen :class:`ToolCall` (the caller's view of the application,
:meth:`AppContext.for_caller`, with the call's way to ask its user and the tool's own capability, whose gate
its ``write_connection`` runs), runs the gate of a capability checked at the call, and announces a write's
account; and :func:`listing`, what a caller's ``tools/list`` shows. The tools see the call as their
:class:`~mail_imap_mcp.call.Call` alone."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.answers import ApprovalPage
from mail_imap_mcp.asking.ask import asker
from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.call import Asker
from mail_imap_mcp.capabilities import Capability
from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.envelope.mcp import EnvelopeTool, envelope_tool
from mail_imap_mcp.envelope.request_state import StateSeal
from mail_imap_mcp.envelope.user_call import UserCall
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.ids import InvalidMessageId, parse_message_id
from mail_imap_mcp.operations import OperationRef, OperationRegistry
from mail_imap_mcp.presentation import failures
from mail_imap_mcp.presentation.result_size import fit_summaries
from mail_imap_mcp.state import ANONYMOUS, Caller, Store
from mail_imap_mcp.tools.registry import TOOLS
from mail_imap_mcp.tools.spec import ToolSpec

if TYPE_CHECKING:
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.imap.pool import ConnectionPool
    from mail_imap_mcp.index.engine import IndexEngine
    from mail_imap_mcp.index.runtime import AccountIndex
    from mail_imap_mcp.mail.backend import MailBackend
    from mail_imap_mcp.mail.sieve import SieveScripts
    from mail_imap_mcp.net.one_click import OneClickClient


@dataclass(frozen=True)
class ToolCall:
    """One call of ``spec``'s tool with ``args``, as its caller makes it (``view``: the application as they
    see it), built once per call: what the tool and its services see as their
    :class:`~mail_imap_mcp.call.Call`, and what asking the user reads (``user_call``, ``confirmations``)."""

    view: AppContext
    spec: ToolSpec[Any]
    args: Any
    user_call: UserCall
    confirmations: ConfirmationGate

    @classmethod
    def of(
        cls, view: AppContext, spec: ToolSpec[Any], args: Any, user_call: UserCall | None = None
    ) -> ToolCall:
        """The call of ``spec`` with ``args`` by ``view``'s caller, as ``user_call`` (a script's: nobody asked)."""
        call = user_call or UserCall()
        return cls(view, spec, args, call, view.confirmations.for_call(call))

    @property
    def capability(self) -> Capability:
        """The tool's own capability: the gate its ``write_connection`` runs."""
        return self.spec.capability

    @property
    def ask(self) -> Asker:
        # asking.ask's overloads (an Ask answers, a Confirm returns None) are what Asker declares.
        return cast(Asker, asker(self, self.spec.name, self.args))

    @property
    def caller(self) -> Caller:
        return self.view.caller

    @property
    def config(self) -> Config:
        return self.view.config

    def resolve_account(self, account_id: str) -> str:
        return self.view.resolve_account(account_id)

    def worded(self, handle: Callable[[], ToolResult[Any]]) -> ToolResult[Any]:
        return failures.run(lambda app, args: handle(), self, self.args)

    def connection(self, account_id: str) -> AccountConnection:
        return self.view.connection(account_id)

    def mail(self, account_id: str) -> MailBackend:
        return self.view.mail(account_id)

    def sieve(self, account_id: str) -> AbstractContextManager[SieveScripts]:
        self._found_sieve(account_id)
        return self.view.sieve(account_id)

    def sieve_offered(self, account_id: str) -> frozenset[str]:
        self._found_sieve(account_id)
        return self.view.sieve_offered(account_id)

    def _found_sieve(self, account_id: str) -> None:
        """The tool's own capability's gate once the account's server was looked at for ManageSieve (one
        found to offer none: the capability's refusal, as where the look at startup found it first)."""
        self.capability.gate(self.config, self.view.find_managesieve(account_id))

    def write_connection(self, account_id: str) -> AccountConnection:
        """The account's connection for a write, once the tool's own capability's gate allows it there (a
        tool whose capability changes no mail takes none)."""
        if not self.capability.writes:
            raise RuntimeError(f"{self.spec.name} changes no mail: it takes no write connection")
        connection = self.view.connection(account_id)
        self.capability.gate(self.config, connection.account_id)
        return connection

    @property
    def pool(self) -> ConnectionPool:
        return self.view.pool

    @property
    def one_click(self) -> OneClickClient:
        return self.view.one_click

    def index_of(self, account_id: str, *, start: bool = True) -> AccountIndex | None:
        return self.view.index_of(account_id, start=start)

    def index_state(self, account_id: str) -> str:
        return self.view.index_state(account_id)

    @property
    def index_engine(self) -> IndexEngine:
        return self.view.index_engine

    @property
    def operations(self) -> OperationRegistry:
        return self.view.operations

    @property
    def store(self) -> Store:
        return self.view.store

    @property
    def lasting_store(self) -> Store:
        return self.view.lasting_store

    @property
    def approval_page(self) -> ApprovalPage | None:
        return self.view.approval_page

    def mailbox_list(self, account_id: str, digest: str) -> tuple[str, ...] | None:
        return self.view.mailbox_list(account_id, digest)

    def remember_mailbox_list(self, account_id: str, digest: str, names: Sequence[str]) -> None:
        self.view.remember_mailbox_list(account_id, digest, names)


def _changed_account(app: ToolCall, args: Any) -> str | None:
    """The account a write's arguments name (``account_id``, else its message ids')."""
    ids = getattr(args, "message_ids", None) or [getattr(args, "message_id", None)]
    if isinstance(ids[0], str):
        try:
            return app.resolve_account(parse_message_id(ids[0], app.caller).account_id)
        except InvalidMessageId:
            return None
    account_id = getattr(args, "account_id", None)
    return app.resolve_account(account_id) if isinstance(account_id, str) else None


def _announce_change(app: ToolCall, args: Any, result: ToolResult[Any]) -> None:
    """After a write tool that changed mail (not a dry run, not gone to the background: its watchers see
    that later), announce the account to the other instances."""
    data = result.data
    if not getattr(args, "dry_run", False) and not any(
        isinstance(getattr(data, name, None), OperationRef) for name in ("background", "operation")
    ):
        account_id = _changed_account(app, args)
        if account_id is not None:
            app.view.announce_change(account_id)


def _given(args: Any, name: str) -> bool:
    """Whether the call gave argument ``name`` a value other than its default (its factory's, where a
    list defaults to a new empty one)."""
    return bool(getattr(args, name) != type(args).model_fields[name].get_default(call_default_factory=True))


def _names_an_account(args: Any) -> bool:
    """Whether the call's arguments name an account, resolvable or not (``account_id``, message ids)."""
    return any(
        isinstance(getattr(args, name, None), (str, list))
        for name in ("account_id", "message_id", "message_ids")
    )


def _gate(gated: Capability, app: ToolCall, args: Any, account_id: str | None) -> None:
    """Run the gate of ``gated`` (a capability) for the call: on the account its arguments name; a switch of
    ``[server]`` whatever they name; a call that names no account at all, on each of the caller's (refused
    where none allows it). An account named that is not the caller's is left to the handler to refuse as
    unknown."""
    if (account_id is not None and account_id in app.config.accounts) or gated.scope == "server":
        gated.gate(app.config, account_id or "")
    elif gated.scope == "account" and not _names_an_account(args):
        refusals = [gated.permits(app.config, account) for account in app.config.accounts]
        if refusals and all(refusal is not None for refusal in refusals):
            raise next(refusal for refusal in refusals if refusal is not None).failure()


def _gated(spec: ToolSpec[Any]) -> Callable[[ToolCall, Any], ToolResult[Any]]:
    """``spec``'s handler behind its capability's gate where that is checked at the call, and behind the
    gate of each argument, or value of an argument, of a capability (:attr:`ToolSpec.gated_arguments`,
    :attr:`ToolSpec.gated_values`) the call gives (:func:`_gate`)."""
    if not (spec.capability.checked_at_call or spec.gated_arguments or spec.gated_values):
        return spec.handle

    def handle(app: ToolCall, args: Any) -> ToolResult[Any]:
        account_id = _changed_account(app, args)
        given = [spec.capability] if spec.capability.checked_at_call else []
        given += [switch for name, switch in spec.gated_arguments.items() if _given(args, name)]
        given += [
            switch
            for name, values in spec.gated_values.items()
            for value, switch in values.items()
            if getattr(args, name) == value
        ]
        for gated in given:
            _gate(gated, app, args, account_id)
        return spec.handle(app, args)

    return handle


def _handler(spec: ToolSpec[Any], app: AppContext) -> Callable[[Any, str, str, UserCall], ToolResult[Any]]:
    """The envelope tool's handler of ``spec``: the call (:class:`ToolCall`, of the caller's view of ``app``,
    :meth:`AppContext.for_caller`, their scope held under the call) handed to the tool's handler through
    the failure registry; a page of summaries kept within a result's bound; a write's announcing the
    account it changed."""

    def run(args: Any, user: str, as_given: str, call: UserCall) -> ToolResult[Any]:
        with app.for_caller(user, as_given).entered() as view:
            called = ToolCall.of(view, spec, args, call)
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


def build_tools(app: AppContext, tools: Sequence[ToolSpec[Any]] = TOOLS) -> list[EnvelopeTool]:
    """One envelope tool per declaration of ``tools``, its handler bound to ``app`` (a write's announcing
    the account it changed, :meth:`AppContext.announce_change`)."""
    return [_envelope_tool(spec, app, spec.annotations()) for spec in tools]


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
        state_seal=StateSeal(sealing, ttl_s=app.config.server.request_state_ttl_s),
        asked=spec.asked,
    )


@dataclass(frozen=True)
class ListedTool:
    """A tool as one caller's ``tools/list`` shows it: without the arguments (``hidden_arguments``) and the
    values of an argument's enum (``hidden_values``) whose capability is off, with the annotations of what
    it lists (``annotations``: None where that is all it declares)."""

    hidden_arguments: frozenset[str] = frozenset()
    hidden_values: Mapping[str, frozenset[str]] = field(default_factory=dict)
    annotations: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ListedSurface:
    """What one caller's ``tools/list`` shows, from the declarations: each tool listed, by name (a tool not
    in it is left out: its capability is off for the caller; it still answers a call, refused naming the
    setting)."""

    tools: Mapping[str, ListedTool]


def listing(app: AppContext, user: str = ANONYMOUS, tools: Sequence[ToolSpec[Any]] = TOOLS) -> ListedSurface:
    """What ``user``'s ``tools/list`` shows: the tools whose capability is on for them (:meth:`Capability.on`:
    the write tools when an account allows writes, so a read-only user pays no tokens for them; a sending
    tool when an account ``user`` may use has send_enabled), each without the arguments and values of a
    capability that is off (a call giving one is refused naming the setting), and then with the
    annotations of the arguments it lists (:meth:`ToolSpec.annotations`: read-only unless an argument
    listed changes something)."""
    config = app.full_config
    listed: dict[str, ListedTool] = {}
    for spec in tools:
        if not spec.listed_with.on(config, user):
            continue
        hidden = frozenset(
            name for name, switch in spec.gated_arguments.items() if not switch.on(config, user)
        )
        values = {
            name: frozenset(value for value, switch in gated.items() if not switch.on(config, user))
            for name, gated in spec.gated_values.items()
        }
        listed[spec.name] = ListedTool(
            hidden,
            {name: off for name, off in values.items() if off},
            spec.annotations(hidden) if hidden else None,
        )
    return ListedSurface(listed)
