"""imap_manage_rules: the rules the account's server runs as mail arrives (Sieve over ManageSieve), in
one tool of several actions; how they are kept is ``services/rules.py``, the dry run :mod:`.dry_run`,
arguments and data :mod:`.models`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import RULES, SENDING
from mail_imap_mcp.envelope import ErrorCode, ToolFailure, ToolResult
from mail_imap_mcp.operations.audit import audit
from mail_imap_mcp.tools.manage_rules.models import ManageRulesData, ManageRulesInput
from mail_imap_mcp.tools.spec import ToolSpec

NAME = "imap_manage_rules"
TITLE = "Manage the server's mail rules"
DESCRIPTION = (
    "Sieve rules for arriving mail: a search query, then file into a mailbox (Trash: discard), flags, stop. "
    "save first shows what it would do."
)
DETAILS = (
    "Rules the account's mail server runs on each message as it arrives (Sieve, RFC 5228, managed over "
    "ManageSieve, RFC 5804), without the agent running. A rule is a condition, written in the query "
    "language of imap_search_messages (from:, to:, subject:, words, larger:, header tests; what Sieve "
    "cannot test, flags or attachments, is invalid_input naming the part), and actions: file into an "
    "existing mailbox (none is created; the account's Trash to discard: never deleted), flags to add, or "
    "to remove with '-' first (imap4flags), and stop (the default: no later rule runs); where the account "
    "sends (send_enabled), redirect forwards a copy (redirect :copy) to addresses of allowed_recipients "
    "only, and only once the user approved the rule's exact text (MCP elicitation, else the approval page "
    "in their browser, where the call may wait in the background: data.background; never a token, never "
    "the agent); vacation, with vacation_subject, replies to matching mail (Sieve's vacation, at most once in "
    "vacation_days, 1 to 365, 7 by default, to each sender; the server may clamp it to its own bounds) only where its sender, by the From header and by the envelope's return path, is in "
    "allowed_recipients (the list as it is when the user approves the rule), approved the same way. reject "
    "and notify are not offered: they answer whoever wrote, or a service, with words the server composes. "
    "save answers "
    "what the rule would have done to the last 10,000 messages of INBOX (how many it matches, and the "
    "newest; from the local index where the account keeps one, else by IMAP SEARCH), and as_saved, the "
    "same for the rule as the server holds it once saved (its script read again); try only tries it. "
    "The rules live in a script of their own, which the user's active script includes (or, on a server "
    "without include, one marked section of it); the rest of the user's script is kept byte for byte. "
    "Every change keeps the scripts as they were: undo restores them (undo again redoes). The rules' "
    "script changed by hand, or a script changed since the change undo would revert, is a conflict, "
    "never overwritten; the server's verdict on a script is reported in its words. Listed only where "
    "rules_enabled is on for an account whose server may offer ManageSieve (not Gmail, Microsoft 365, "
    "iCloud..., nor a server whose ManageSieve port was found refusing, silent or speaking another protocol, "
    "as Courier's). docs/rules.md."
)
ERRORS = {
    "invalid_input": "A name, query, mailbox, flag or reply is malformed (vacation goes with vacation_subject, "
    "vacation_days with vacation); "
    "reject or notify asked for; the query holds what Sieve cannot test; "
    "the mailbox does not exist; the server lacks an extension the rule needs; or the server refused the "
    "script (its words in details.said).",
    "not_found": "No rule of that name, or nothing to undo.",
    "conflict": "The rules' script was changed by hand, or a script changed since the change undo would "
    "revert: nothing was changed.",
    "permission_denied": "rules_enabled is off for this account; redirect or vacation: sending is off, an "
    "address is outside allowed_recipients, or the client cannot ask the user and no approval page could be "
    "shown.",
    "confirmation_required": "redirect or vacation: the user is asked to approve the rule's exact text, or did not "
    "(declined, the page expired or was cancelled): nothing was saved.",
    "unsupported": "The account's server offers no ManageSieve.",
    "limit_exceeded": "The account's Sieve quota would be exceeded.",
    "auth_failed": "The ManageSieve server refused the credentials.",
    "unavailable": "The ManageSieve server cannot be reached; nothing was changed.",
    "timeout": "A command exceeded its time budget.",
}
_CHANGES = ("save", "delete", "enable", "disable", "undo")


def handle(app: Call, args: ManageRulesInput) -> ToolResult[ManageRulesData]:
    """``services.rules`` on ``app.sieve``; the dry run on ``app.mail``; audited (a rule that sends mail,
    where the user's approval is asked: ``actions._standing_send``)."""
    from mail_imap_mcp.tools.manage_rules.actions import audited, run

    account_id = app.resolve_account(args.account_id)
    if args.action not in ("list", "undo", "try") and args.name is None:
        raise ToolFailure.invalid_input("name", f"{args.action} needs the rule's name.")
    if args.action not in _CHANGES or (args.action == "save" and args.sends):
        return run(app, account_id, args)
    with audited(app, account_id, args.action):
        result = run(app, account_id, args)
    audit(app.caller, NAME, account_id, f"rule:{args.action}", 0, "ok")
    return result


def asked(arguments: Mapping[str, Any]) -> str | None:
    """What the call asks for in a failure's first words."""
    action = arguments.get("action")
    return f"{action.capitalize()} rules" if isinstance(action, str) and action in _ACTIONS else None


_ACTIONS = ("list", "get", "try", *_CHANGES)


def not_found(name: str) -> ToolFailure:
    return ToolFailure(
        ErrorCode.NOT_FOUND, f"No rule named {name!r}; list the rules to see them.", details={"name": name},
        retryable=False,
    )  # fmt: skip


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=ManageRulesInput,
    data_model=ManageRulesData,
    handle=handle,
    errors=ERRORS,
    capability=RULES,
    idempotent=False,
    gated_arguments={
        "redirect": SENDING,
        "vacation": SENDING,
        "vacation_subject": SENDING,
        "vacation_days": SENDING,
    },
    asked=asked,
)
