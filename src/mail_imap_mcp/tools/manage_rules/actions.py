"""Each action of imap_manage_rules: list and get read the rules; save, delete, enable and disable change
them through ``services/rules.py``'s :func:`change_rules`; undo restores the scripts before the last
change. A rule to save is checked first (its query compiled to Sieve, its mailbox existing, the
extensions it needs offered) and tried on the user's mail (:mod:`.dry_run`) before the server is asked."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from mail_imap_mcp.asking.records import Confirm
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.mail.backend import MailBackend
from mail_imap_mcp.mail.write_errors import RoleMailboxMissing
from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import NotSayableInSieve, SieveCondition, sieve_condition
from mail_imap_mcp.services.rules import RulesState, Written, change_rules, read_state, undo
from mail_imap_mcp.services.rules_script import OWN_SCRIPT, Rule, WrittenRule, compile_rule
from mail_imap_mcp.services.search_scope import scope_mailbox
from mail_imap_mcp.tools.manage_rules import not_found
from mail_imap_mcp.tools.manage_rules.dry_run import dry_run
from mail_imap_mcp.tools.manage_rules.models import DryRun, ManageRulesData, ManageRulesInput, RuleView

#: The extension each action needs, and the argument that asks for it.
_NEEDS = {"fileinto": "mailbox", "imap4flags": "flags", "copy": "redirect"}


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


def run(app: Call, account_id: str, args: ManageRulesInput) -> tuple[ManageRulesData, str]:
    """The action ``args`` ask for, its data and summary."""
    prepared: tuple[WrittenRule, DryRun] | None = None
    if args.action in ("try", "save"):
        prepared = _prepare(app, account_id, args)
    with app.sieve(account_id) as scripts:
        if args.action in ("list", "get"):
            state = read_state(scripts)
            rules = state.rules
            if args.action == "get":
                found = state.rule(args.name or "")
                if found is None:
                    raise not_found(args.name or "")
                rules = [found]
            data = _data(account_id, args, state, rules, None, Written())
            return data, f"{len(state.rules)} rule(s), in {where(state)}"
        if args.action == "undo":
            state = read_state(scripts)
            written, undone = undo(scripts, state)
            after = read_state(scripts)
            data = _data(account_id, args, after, after.rules, None, written)
            return data, f"Undone: {undone or 'the last change'}; {len(after.rules)} rule(s) now"
        dry: DryRun | None = None
        if prepared is not None:
            written_rule, dry = prepared
            _offered(scripts.capabilities().extensions, written_rule.rule)
            if written_rule.rule.redirect and args.action == "save":
                approve_sends(app, account_id, written_rule)
            if args.action == "try":
                state = read_state(scripts)
                data = _data(account_id, args, state, [written_rule], dry, Written())
                return data, f"Tried, nothing saved: {dry.words}"

            def change(state: RulesState) -> tuple[list[WrittenRule], str]:
                return _saved(state, written_rule)
        else:

            def change(state: RulesState) -> tuple[list[WrittenRule], str]:
                return _changed(state, args)

        state, written, words = change_rules(scripts, None, change)
        after = read_state(scripts)
        shown = [found] if (found := after.rule(args.name or "")) is not None else []
        data = _data(account_id, args, after, shown, dry, written)
        summary = f"Done: {words}" + (f". {dry.words}" if dry else "")
        return data, summary


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


def _prepare(app: Call, account_id: str, args: ManageRulesInput) -> tuple[WrittenRule, DryRun]:
    """The rule ``args`` describe, compiled and checked, and its dry run on the user's mail."""
    if args.query is None:
        raise ToolFailure.invalid_input("query", "save needs the rule's condition.")
    if args.mailbox is None and not args.flags and not args.redirect:
        raise ToolFailure.invalid_input(
            "mailbox", f"{args.action} needs an action: a mailbox (Trash to discard) or flags."
        )
    parsed = parse(args.query, today=datetime.now(UTC).date())  # QuerySyntaxError names query
    if parsed.scope is not None:
        raise ToolFailure.invalid_input(
            "query", "a rule sees arriving mail only: the query names no mailbox."
        )
    try:
        condition: SieveCondition = sieve_condition(parsed.tree)
    except NotSayableInSieve as unsayable:
        raise ToolFailure.invalid_input(
            "query", f"{unsayable.part!r} cannot be said in a rule: {unsayable.reason}."
        ) from None
    mail = app.mail(account_id)
    mailbox, discard = args.mailbox, False
    if mailbox is not None:  # its name, its role's word (trash) or its last level, as in:<name> reads it
        found = mail.selectable(scope_mailbox(app, account_id, mailbox))
        if found is None:
            raise ToolFailure.invalid_input(
                "mailbox", f"no mailbox {mailbox!r}: a rule files into an existing one, and creates none "
                "(imap_manage_mailbox creates it).", mailbox=mailbox)  # fmt: skip
        mailbox, discard = found, found == _trash(mail, app.config.accounts[account_id])
    rule = Rule(
        name=args.name or "",
        query=args.query,
        mailbox=mailbox,
        add_flags=tuple(flag for flag in args.flags if not flag.startswith("-")),
        remove_flags=tuple(flag[1:] for flag in args.flags if flag.startswith("-") and flag[1:]),
        discard=discard,
        stop=args.stop,
        redirect=tuple(dict.fromkeys(args.redirect)),
    )
    if rule.redirect:
        _allowed(app.config.accounts[account_id], account_id, rule.redirect)
    written = compile_rule(rule, condition)
    return written, dry_run(app, account_id, written.rule, parsed.tree)


def _allowed(account: AccountConfig, account_id: str, addresses: tuple[str, ...]) -> None:
    """``permission_denied`` naming ``allowed_recipients`` where a rule would forward outside it."""
    outside = [address for address in addresses if not account.recipients_allowed.allows(address)]
    if outside:
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"Account {account_id!r} may not send to {', '.join(outside)}: not in its allowed recipients, and "
            f"a rule that forwards sends mail. Nothing was saved. Only the user can allow them, in "
            f"{account.setting('allowed_recipients')}.",
            details={"account_id": account_id, "setting": "allowed_recipients", "recipients": outside},
            retryable=False,
        )


def approve_sends(app: Call, account_id: str, written: WrittenRule) -> None:
    """Return once the user approved, through their client, the exact text of a rule that sends mail
    (never a token, never the agent: :class:`~mail_imap_mcp.asking.records.Confirm` with a refusal)."""
    rule = written.rule
    what = (
        f"save the rule {rule.name!r} on account {account_id!r}: the mail server will forward a copy of each "
        f"arriving message it matches to {', '.join(rule.redirect)}, whenever it matches, with nobody asked "
        f"again. Its condition: {rule.query}. Its Sieve, exactly: {written.block.strip()}"
    )
    refusal = (
        "A rule that forwards mail sends it while nobody watches, so only the user may approve its exact "
        "text, in a client that asks them (MCP elicitation); this client cannot ask. Nothing was saved."
    )
    app.ask(Confirm(what, irreversible=True, refusal=refusal, details={"parameter": "redirect"}))


def _trash(mail: MailBackend, account: AccountConfig) -> str | None:
    """The account's Trash, where a rule discards to (None: it has none)."""
    try:
        return mail.deletes_to(account)
    except RoleMailboxMissing:
        return None


def _offered(extensions: frozenset[str], rule: Rule) -> None:
    """invalid_input naming the argument whose action needs an extension the server lacks."""
    for extension in rule.requires:
        if extension not in extensions:
            parameter = _NEEDS.get(extension, "query")
            raise ToolFailure.invalid_input(
                parameter, f"the server's Sieve lacks the {extension!r} extension this rule needs; nothing "
                "was changed.", extension=extension)  # fmt: skip


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
