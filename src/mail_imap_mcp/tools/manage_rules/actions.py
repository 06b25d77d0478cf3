"""Each action of imap_manage_rules: list and get read the rules; save, delete, enable and disable change
them through ``services/rules.py``'s :func:`change_rules`; undo restores the scripts before the last
change. A rule to save is checked and tried first (:mod:`.checks`); once saved, its dry run is
that of the rule as the server holds it (:func:`as_saved`); a rule that sends mail (forwards, or replies)
is saved only once the user approved it (:func:`_standing_send`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from mail_imap_mcp.asking.records import Ask
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.mail.sieve import SieveScripts
from mail_imap_mcp.operations import Operation
from mail_imap_mcp.operations.audit import audit
from mail_imap_mcp.presentation.writes import write_failure as failure_of
from mail_imap_mcp.query import parse
from mail_imap_mcp.services.rules import RulesState, Written, change_rules, read_state, undo
from mail_imap_mcp.services.rules_review import RENDER, rule_review
from mail_imap_mcp.services.rules_script import OWN_SCRIPT, WrittenRule
from mail_imap_mcp.tools.manage_rules import NAME, not_found
from mail_imap_mcp.tools.manage_rules.checks import offered, prepare
from mail_imap_mcp.tools.manage_rules.dry_run import dry_run
from mail_imap_mcp.tools.manage_rules.models import DryRun, ManageRulesData, ManageRulesInput, RuleView


def view(written: WrittenRule) -> RuleView:
    rule = written.rule
    return RuleView(name=rule.name, query=rule.query, actions=rule.actions(), enabled=rule.enabled,
                    sieve=written.block)  # fmt: skip


def where(state: RulesState) -> str:
    """Where the rules live, in words."""
    if state.mode == "own":
        return f"their own script {OWN_SCRIPT!r}, the active one"
    if state.mode == "include":
        return f"their own script {OWN_SCRIPT!r}, included from your active script {state.active!r}"
    return f"a marked section of your active script {state.active!r} (the server has no include)"


def run(app: Call, account_id: str, args: ManageRulesInput) -> ToolResult[ManageRulesData]:
    """The action ``args`` ask for, its data and summary (a rule that sends: once the user approved it)."""
    if args.action == "save" and args.sends:
        return _standing_send(app, account_id, args)
    if args.action == "try":
        return _tried(app, account_id, args)
    prepared = prepare(app, account_id, args) if args.action == "save" else None
    with app.sieve(account_id) as scripts:
        if args.action in ("list", "get"):
            state = read_state(scripts, reading=True)
            rules = state.rules
            if args.action == "get":
                found = state.rule(args.name or "")
                if found is None:
                    raise not_found(args.name or "")
                rules = [found]
            data = _data(account_id, args, state, rules, None, Written())
            return ToolResult(summary=f"{len(state.rules)} rule(s), in {where(state)}", data=data)
        if args.action == "undo":
            state = read_state(scripts)
            written, undone = undo(scripts, state)
            after = read_state(scripts, reading=True)
            data = _data(account_id, args, after, after.rules, None, written)
            summary = f"Undone: {undone or 'the last change'}; {len(after.rules)} rule(s) now"
            return ToolResult(summary=summary, data=data)
        if prepared is None:
            return _changed_by(scripts, account_id, args, lambda state: _changed(state, args), None)
        offered(scripts.capabilities().extensions, prepared[0].rule)
        return _save(app, scripts, account_id, args, prepared)


def _tried(app: Call, account_id: str, args: ManageRulesInput) -> ToolResult[ManageRulesData]:
    """The dry run alone: no script is read, and a ManageSieve session is opened only where this process
    has not yet learnt which extensions the server offers (its first session's announcement)."""
    written, dry = prepare(app, account_id, args)
    offered(app.sieve_offered(account_id), written.rule)
    data = ManageRulesData(
        account_id=account_id, action="try", rules=[view(written)], dry_run=dry, changed=False,
        where="not read: try reads no script (save says where the rules live)", server_said=[],
    )  # fmt: skip
    return ToolResult(summary=f"Tried, nothing saved: {dry.words}", data=data)


def _save(
    app: Call,
    scripts: SieveScripts,
    account_id: str,
    args: ManageRulesInput,
    prepared: tuple[WrittenRule, DryRun],
) -> ToolResult[ManageRulesData]:
    """Save the rule of ``prepared`` (tried already: its dry run), then say what the rule the server now
    holds would have done (:func:`as_saved`)."""
    written_rule, dry = prepared
    result = _changed_by(scripts, account_id, args, lambda state: _saved(state, written_rule), dry)
    held = as_saved(app, account_id, read_state(scripts, reading=True), prepared)
    data = result.data.model_copy(update={"as_saved": held})
    return ToolResult(summary=result.summary + (f" {held.words}" if held else ""), data=data)


def _changed_by(
    scripts: SieveScripts,
    account_id: str,
    args: ManageRulesInput,
    change: Callable[[RulesState], tuple[list[WrittenRule], str]],
    dry: DryRun | None,
) -> ToolResult[ManageRulesData]:
    _, written, words = change_rules(scripts, None, change)
    after = read_state(scripts, reading=True)
    shown = [found] if (found := after.rule(args.name or "")) is not None else []
    data = _data(account_id, args, after, shown, dry, written)
    return ToolResult(summary=f"Done: {words}" + (f". {dry.words}" if dry else ""), data=data)


def as_saved(
    app: Call, account_id: str, after: RulesState, prepared: tuple[WrittenRule, DryRun]
) -> DryRun | None:
    """The dry run of the rule as the server now holds it (its script read again after the save): the
    tried one where the server holds exactly the Sieve and the condition that were tried (the same test,
    so the same messages), else that of the condition it holds; None where it holds no such rule."""
    tried, dry = prepared
    held = after.rule(tried.rule.name)
    if held is None:
        return None
    if held.block != tried.block or held.rule.query != tried.rule.query:
        dry = dry_run(app, account_id, held.rule, parse(held.rule.query, today=datetime.now(UTC).date()).tree)
    return dry.model_copy(update={"words": f"As saved on the server: {dry.words[:1].lower()}{dry.words[1:]}"})


def _standing_send(app: Call, account_id: str, args: ManageRulesInput) -> ToolResult[ManageRulesData]:
    """Save a rule that sends mail (forwards, or replies) once the user approved its exact text: ``app.ask``
    chooses the way (the client's question, else the approval page; never a token); a "no", an expired or
    cancelled page saves nothing. Audited here, each step (a change the user decides on may end in the background)."""
    with audited(app, account_id, "save"):
        prepared = prepare(app, account_id, args)
        with app.sieve(account_id) as scripts:
            offered(scripts.capabilities().extensions, prepared[0].rule)

    def then() -> ToolResult[ManageRulesData]:
        with app.sieve(account_id) as scripts:
            result = _save(app, scripts, account_id, args, prepared)
        audit(app.caller, NAME, account_id, "rule:save", 0, "ok")
        return result

    def waiting(operation: Operation) -> ToolResult[Any]:
        data = ManageRulesData(
            account_id=account_id, action="save", rules=[view(prepared[0])], dry_run=prepared[1],
            changed=False, where="nowhere yet: the user decides on the approval page", server_said=[],
            background=operation.ref(),
        )  # fmt: skip
        summary = (
            f"Waiting for the user's approval of the rule on the approval page, as {operation.operation_id}; "
            "nothing is saved unless they approve (imap_get_operation says the outcome)."
        )
        return ToolResult(summary=summary, data=data)

    asked = Ask(account_id, rule_review(account_id, prepared[0]), RENDER, then, nullcontext,
                lambda: audited(app, account_id, "save"))  # fmt: skip
    answer: ToolResult[ManageRulesData] = app.ask(asked).answer(waiting)
    return answer


@contextmanager
def audited(app: Call, account_id: str, action: str) -> Iterator[None]:
    """The audit line of a change that fails here (its failure's code); the failure leaves as it is."""
    try:
        yield
    except Exception as exc:
        failure = failure_of(exc)
        audit(app.caller, NAME, account_id, f"rule:{action}", 0, failure.code.value if failure else "error")
        raise


def _data(
    account_id: str,
    args: ManageRulesInput,
    state: RulesState,
    rules: list[WrittenRule],
    dry: DryRun | None,
    written: Written,
) -> ManageRulesData:
    return ManageRulesData(
        account_id=account_id,
        action=args.action,
        rules=[view(rule) for rule in rules],
        dry_run=dry,
        changed=bool(written.changed),
        where=where(state),
        server_said=written.warnings,
    )


def _saved(state: RulesState, new: WrittenRule) -> tuple[list[WrittenRule], str]:
    rules = list(state.rules)
    at = next((i for i, written in enumerate(rules) if written.rule.name == new.rule.name), None)
    if at is None:
        return [*rules, new], f"saved the new rule {new.rule.name!r}"
    rules[at] = new
    return rules, f"replaced the rule {new.rule.name!r}"


def _changed(state: RulesState, args: ManageRulesInput) -> tuple[list[WrittenRule], str]:
    name = args.name or ""
    if state.rule(name) is None:
        raise not_found(name)
    if args.action == "delete":
        return [w for w in state.rules if w.rule.name != name], f"deleted the rule {name!r}"
    enabled = args.action == "enable"
    rules = [
        replace(w, rule=replace(w.rule, enabled=enabled)) if w.rule.name == name else w for w in state.rules
    ]
    return rules, f"turned the rule {name!r} {'on' if enabled else 'off'}"
