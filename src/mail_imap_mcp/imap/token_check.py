"""Whose sign-in a new token is, as the mail server says (issue 56 item 4): before a new sign-in is kept,
the account's username logs in to its IMAP server with the new access token. A token of another account
(someone else signed in at the provider and handed their answer to the loopback listener) or one without
the mail permission is refused there, and the sign-in is not kept. The provider's ID token is no proof:
the server decides whose token it is.
"""

from __future__ import annotations

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.net.tokens import TokenSource

__all__ = ["new_sign_in_refusal"]


def new_sign_in_refusal(account_id: str, account: AccountConfig, new_token: TokenSource) -> str | None:
    """Why a new sign-in of ``account_id`` must not be kept: the IMAP server refused ``account.username``
    with its access token (``new_token``, a source of that token alone, handed by the sign-in), or could
    not be asked; None when it logged in."""
    # A server's start hands this check to its sign-ins: the connection stack loads with the first one.
    from .connection import AccountConnection
    from .errors import ConnectFailed, ConnectPhase, LoginRefused, OAuthRejected, ServerLimited

    server = f"{account.host}:{account.effective_port}"
    connection = AccountConnection(account_id, account, credentials=new_token)
    try:
        connection.run(lambda session: None, retry=False)
    except ConnectFailed as failed:
        # A limit of the server's (Dovecot's "[UNAVAILABLE]" when it could not check the token) is no
        # answer about whose token it is.
        refused = failed.phase is ConnectPhase.LOGIN and not isinstance(failed.cause, ServerLimited)
        if refused or isinstance(failed.cause, LoginRefused | OAuthRejected):
            return (
                f"the mail server {server} refused to log in as {account.username} with the new sign-in: "
                f"it is another account's (or lacks the permission to read mail), so it was not kept. "
                f"Sign in again as {account.username}"
            )
        return f"the mail server {server} could not be asked whether the new sign-in is {account.username}'s ({failed}), so it was not kept; try again"
    except MailError as failed:
        return f"the mail server {server} could not be asked whether the new sign-in is {account.username}'s ({type(failed).__name__}), so it was not kept; try again"
    finally:
        connection.close()
    return None
