"""A rule checked before the server is asked: its query compiled to Sieve (what Sieve cannot say is
invalid_input naming the part), its mailbox existing, its recipients within allowed_recipients, the
extensions it needs offered; and tried on the user's mail (:mod:`.dry_run`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.mail.backend import MailBackend
from mail_imap_mcp.mail.write_errors import RoleMailboxMissing
from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import NotSayableInSieve, SieveCondition, sieve_condition
from mail_imap_mcp.services.rules_script import ANYONE, Rule, Vacation, WrittenRule, compile_rule
from mail_imap_mcp.services.search_scope import scope_mailbox
from mail_imap_mcp.tools.manage_rules.dry_run import dry_run
from mail_imap_mcp.tools.manage_rules.models import DryRun, ManageRulesInput

#: The extension each action needs, and the argument that asks for it.
_NEEDS = {"fileinto": "mailbox", "imap4flags": "flags", "copy": "redirect", "vacation": "vacation",
          "envelope": "vacation"}  # fmt: skip
#: A domain of allowed_recipients a vacation rule's test may name (IDNA's A-labels: no Sieve wildcard).
_PLAIN_DOMAIN = re.compile(r"[a-z0-9_.-]+")


def prepare(app: Call, account_id: str, args: ManageRulesInput) -> tuple[WrittenRule, DryRun]:
    """The rule ``args`` describe, compiled and checked, and its dry run on the user's mail."""
    if args.query is None:
        raise ToolFailure.invalid_input("query", "save needs the rule's condition.")
    if (args.vacation is None) != (args.vacation_subject is None):
        missing = "vacation_subject" if args.vacation_subject is None else "vacation"
        raise ToolFailure.invalid_input(missing, "a vacation reply needs both its text (vacation) and its "
                                        "subject (vacation_subject).")  # fmt: skip
    if args.vacation is None and "vacation_days" in args.model_fields_set:
        raise ToolFailure.invalid_input(
            "vacation_days", "it is the interval of a vacation reply: give vacation."
        )
    if args.mailbox is None and not args.flags and not args.sends:
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
        vacation=_vacation(app.config.accounts[account_id], args),
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


def _vacation(account: AccountConfig, args: ManageRulesInput) -> Vacation | None:
    """The rule's auto-reply, to the senders of ``allowed_recipients`` only (as the account has it now: the
    rule keeps that list, which the user approves with it)."""
    if args.vacation is None or args.vacation_subject is None:
        return None
    allowed = account.recipients_allowed
    senders = [ANYONE] if allowed.anyone else []
    senders += sorted(f"{local}@{domain}" for local, domain in allowed.addresses)
    senders += sorted(f"@{domain}" for domain in allowed.domains)
    senders += sorted(f"*.{domain}" for domain in allowed.parents)
    odd = [domain for domain in (*allowed.domains, *allowed.parents) if not _PLAIN_DOMAIN.fullmatch(domain)]
    if odd or not senders:
        why = f"{', '.join(odd)} cannot be tested in Sieve" if odd else "it is empty"
        raise ToolFailure.invalid_input(
            "vacation", f"a vacation rule replies only to allowed_recipients, and {why}; nothing was saved.")  # fmt: skip
    return Vacation(args.vacation_subject, args.vacation, args.vacation_days, tuple(senders))


def _trash(mail: MailBackend, account: AccountConfig) -> str | None:
    """The account's Trash, where a rule discards to (None: it has none)."""
    try:
        return mail.deletes_to(account)
    except RoleMailboxMissing:
        return None


def offered(extensions: frozenset[str], rule: Rule) -> None:
    """invalid_input naming the argument whose action needs an extension the server lacks."""
    for extension in rule.requires:
        if extension not in extensions:
            parameter = _NEEDS.get(extension, "query")
            raise ToolFailure.invalid_input(
                parameter, f"the server's Sieve lacks the {extension!r} extension this rule needs; nothing "
                "was changed.", extension=extension)  # fmt: skip
