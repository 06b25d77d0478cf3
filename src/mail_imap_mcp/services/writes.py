"""The connection a bulk write runs on (the account's write connection, gated by the configuration), the
user's confirmation a permanent delete needs, and a move or copy that is a delete on the server."""

from __future__ import annotations

from mail_imap_mcp.asking.records import Confirm
from mail_imap_mcp.call import Call
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import AccountUnknown
from mail_imap_mcp.operations.batch import Batch
from mail_imap_mcp.operations.transfer import Action, commands_for, lands_as_delete


def batch_connection(app: Call, batch: Batch) -> AccountConnection:
    """The write connection of the batch's account; ``AccountUnknown`` naming ``message_ids`` when the ids
    name an account that is not configured."""
    try:
        return app.write_connection(batch.account_id)
    except AccountUnknown as unknown:  # named as the argument that gave it; the registry words it
        raise AccountUnknown(unknown.account_id, unknown.configured, parameter="message_ids") from None


def confirm_permanent_delete(app: Call, batch: Batch, connection: AccountConnection) -> None:
    """Ask the user before a permanent delete starts (a write that continues in the background can no
    longer ask), once the server is known to offer it (UIDPLUS: only these UIDs are expunged)."""

    def check(session: ImapSession) -> None:
        commands_for(session, "delete", permanent=True)

    connection.run(check)
    where = f"from {', '.join(repr(g.mailbox) for g in batch.groups)} (account {batch.given_account_id!r})"
    what = f"permanently delete {len(batch.items)} message(s) {where}; they cannot be recovered"
    app.ask(Confirm(what, irreversible=True))


def deletes_by_landing(connection: AccountConnection, action: Action, destination: str | None) -> bool:
    """Whether a move or copy into ``destination`` is a delete on this server (Gmail: into the mailbox
    marked ``\\Trash``), to be answered as action delete; into the one it reports as spam it is refused."""
    if action not in ("move", "copy") or destination is None:
        return False
    return connection.run(lambda session: lands_as_delete(session, action, destination))
