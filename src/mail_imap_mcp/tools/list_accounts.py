"""imap_list_accounts: which accounts are configured (never a secret)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import NextAction, Payload, ToolResult
from mail_imap_mcp.tools.spec import ToolSpec

NAME = "imap_list_accounts"
TITLE = "List IMAP accounts"
DESCRIPTION = "The configured accounts: id, host, username, own addresses (never passwords). Start here."
DETAILS = (
    "List the configured IMAP accounts (id, host, port, security, username, own addresses; never passwords). "
    "Start here: pass an account_id from the result to imap_list_mailboxes or imap_search_messages. An "
    "environment account whose settings cannot work (an empty password, no host for an address at no known "
    "provider, a wrong port or security: docs/bundle.md) is listed with usable false and its problems, each "
    "naming the bundle form's field and the setting; the summary names it, next_action skips it, and every "
    "call on it fails until the user corrects the setting."
)
ERRORS: dict[str, str] = {"invalid_input": "Any argument was given (the tool takes none)."}


class ListAccountsInput(BaseModel):
    """No arguments."""

    model_config = ConfigDict(extra="forbid")


class AccountProblem(Payload):
    field: str | None = Field(description="The label of the extension's settings field to correct, if any.")
    setting: str = Field(description="The setting (environment variable) to correct.")
    reason: str = Field(description="What is wrong with it.")


class AccountSummary(Payload):
    account_id: str = Field(description="Id to pass as account_id to the other tools.")
    host: str = Field(description="IMAP server host.")
    port: int = Field(description="IMAP server port.")
    security: str = Field(description="tls, starttls or plain.")
    secure: bool = Field(description="True when the connection is encrypted (tls or starttls).")
    username: str = Field(description="Login name.")
    addresses: list[str] = Field(
        description="The account's own email addresses (the ones compact results call 'me'); empty when "
        "the username is not an address and none are configured."
    )
    index: str = Field(
        default="off",
        description="Local search index: off, not started, building n of N, ready, behind by N, unavailable.",
    )
    usable: bool = Field(
        default=True,
        description="False when a setting cannot work (problems says which): every call on the account "
        "fails until it is corrected and the server restarted. host is empty without a host, port 0 when "
        "the port given is none, security as given.",
    )
    problems: list[AccountProblem] = Field(default_factory=list, description="The settings to correct.")


class ListAccountsData(Payload):
    accounts: list[AccountSummary] = Field(description="Configured accounts, sorted by id.")
    next_action: NextAction | None = Field(default=None, description="The obvious next call.")


def summary(account_id: str, cfg: AccountConfig, index: str) -> AccountSummary:
    """What the listing says of one account; of a setting at fault, what was given (nothing else)."""
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
        problems=[
            AccountProblem(field=fault.label, setting=fault.setting, reason=fault.reason)
            for fault in cfg.faults
        ],
    )


def handle(app: AppContext, args: ListAccountsInput) -> ToolResult[ListAccountsData]:
    accounts = [
        summary(account_id, cfg, app.index_state(account_id))
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
