"""An account's submission server as the SMTP client takes it: for sending, for the size a draft may have,
and for ``check`` and ``setup``'s submission check, which import no more of the services than this."""

from __future__ import annotations

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.smtp.client import Server


def submission_server(account: AccountConfig) -> Server | None:
    """The account's submission server as the SMTP client takes it; None where it has none."""
    endpoint = account.submission
    if endpoint is None:
        return None
    return Server(
        endpoint.host,
        endpoint.port,
        endpoint.security.value,
        account.ca_file,
        account.connect_timeout_s,
        account.command_timeout_s,
    )
