"""imap_list_accounts: which accounts are configured (never a secret)."""

from __future__ import annotations

from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import rules_missing
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.config.faults import sending_without_writes
from mail_imap_mcp.envelope import NextAction, ToolResult
from mail_imap_mcp.meaning.model import unavailable_reason
from mail_imap_mcp.tools.list_accounts_models import (
    AccountProblem,
    AccountSummary,
    ListAccountsData,
    ListAccountsInput,
)
from mail_imap_mcp.tools.spec import ToolSpec

NAME = "imap_list_accounts"
TITLE = "List IMAP accounts"
DESCRIPTION = "The configured accounts: id, host, username, own addresses (never passwords). Start here."
DETAILS = (
    "List the configured IMAP accounts (id, host, port, security, username, own addresses; never passwords). "
    "Start here: pass an account_id from the result to imap_list_mailboxes or imap_search_messages. An "
    "environment account whose settings cannot work (an empty password, no host for an address at no known "
    "provider, a wrong port or security: docs/bundle.md), or whose built-in sign-in has no keychain on this "
    "computer to be kept in, is listed with usable false and its problems, each "
    "naming the bundle form's field and the setting; the summary names it, next_action skips it, and every "
    "call on it fails until the user corrects the setting."
)
ERRORS: dict[str, str] = {"invalid_input": "Any argument was given (the tool takes none)."}


def summary(account_id: str, cfg: AccountConfig, index: str, writes_allowed: bool) -> AccountSummary:
    """What the listing says of one account; of a setting at fault, what was given (nothing else). Its
    problems: the faults, and sending on with writes off (the account still usable)."""
    noted = sending_without_writes(cfg, writes_allowed)
    given = {fault.key: fault.given for fault in cfg.faults}
    security = str(given.get("security", cfg.security.value))
    return AccountSummary(
        account_id=account_id,
        host=(given["host"] or "") if "host" in given else cfg.host,
        port=0 if "port" in given else cfg.effective_port,
        security=security,
        secure=security in {"tls", "starttls"},
        username=cfg.username,
        addresses=cfg.effective_addresses,
        index=index,
        usable=not cfg.faults,
        rules=rules_words(cfg),
        problems=[
            AccountProblem(field=fault.label, setting=fault.setting, reason=fault.reason)
            for fault in (*cfg.faults, *([noted] if noted else []))
        ],
    )


def rules_words(cfg: AccountConfig) -> str:
    """Whether imap_manage_rules serves the account, or why not, in a few words."""
    if not cfg.rules_enabled:
        return "off (rules_enabled)"
    why = rules_missing(cfg)
    return "on" if why is None else f"unavailable: {why}"


def index_words(app: Call, account_id: str) -> str:
    """The state of the caller's index of ``account_id``, and why it keeps no vectors where its search by
    meaning is on but cannot run here (the meaning extra missing, the model unreadable)."""

    state = app.index_state(account_id)
    if app.config.meaning_indexed(account_id) and (why := unavailable_reason(app.config)) is not None:
        return f"{state}; search by meaning unavailable: {why}"
    return state


def handle(app: Call, args: ListAccountsInput) -> ToolResult[ListAccountsData]:
    """The caller's accounts from ``app.config`` with each index's state; no service, no failure but a bug."""
    accounts = [
        summary(account_id, cfg, index_words(app, account_id), app.config.writes_allowed(account_id))
        for account_id, cfg in sorted(app.config.accounts.items())
    ]
    first = next((account.account_id for account in accounts if account.usable), None)
    next_action = (
        NextAction(
            instruction="List the mailboxes of an account",
            tool="imap_list_mailboxes",
            arguments={"account_id": first},
        )
        if first
        else None
    )
    unusable = [account.account_id for account in accounts if not account.usable]
    # Said in the summary, which a model reads first: the user must correct a setting, no call can.
    wrong = f"; not usable until a setting is corrected (problems): {', '.join(unusable)}" if unusable else ""
    noted = [account.account_id for account in accounts if account.usable and account.problems]
    wrong += f"; a setting to correct (problems): {', '.join(noted)}" if noted else ""
    return ToolResult(
        summary=f"{len(accounts)} account(s) configured{wrong}",
        data=ListAccountsData(accounts=accounts, next_action=next_action),
    )


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=ListAccountsInput,
    data_model=ListAccountsData,
    handle=handle,
    errors=ERRORS,
)
