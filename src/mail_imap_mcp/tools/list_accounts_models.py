"""imap_list_accounts's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import NextAction, Payload


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
    rules: str = Field(
        default="off",
        description="Rules (imap_manage_rules): on, or why not in a few words.",
    )
    problems: list[AccountProblem] = Field(default_factory=list, description="The settings to correct.")


class ListAccountsData(Payload):
    accounts: list[AccountSummary] = Field(description="Configured accounts, sorted by id.")
    next_action: NextAction | None = Field(default=None, description="The obvious next call.")
