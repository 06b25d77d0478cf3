"""The account a bulk write by ids runs on (its write gate passed), the user's confirmation a permanent
delete needs, and a move or copy that is a delete on the server: each through the account's mail
(``mail/backend.py``)."""

from __future__ import annotations

from mail_imap_mcp.asking.records import Confirm
from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.errors import AccountUnknown
from mail_imap_mcp.operations.batch import Batch
from mail_imap_mcp.operations.transfer import spam_landing
from mail_imap_mcp.operations.transfer_words import Action


def batch_account(app: Call, batch: Batch) -> str:
    """The account of the batch, resolved, once its write gate allows a write there; ``AccountUnknown``
    naming ``message_ids`` when the ids name an account that is not configured."""
    try:
        return app.write_connection(batch.account_id).account_id
    except AccountUnknown as unknown:  # named as the argument that gave it; the registry words it
        raise AccountUnknown(unknown.account_id, unknown.configured, parameter="message_ids") from None


def confirm_permanent_delete(app: Call, batch: Batch) -> None:
    """Ask the user before a permanent delete starts (a write that continues in the background can no
    longer ask), once the backend is known to remove exactly these messages (IMAP: UIDPLUS)."""
    app.mail(batch.account_id).check_expunge()
    where = f"from {', '.join(repr(g.mailbox) for g in batch.groups)} (account {batch.given_account_id!r})"
    what = f"permanently delete {len(batch.items)} message(s) {where}; they cannot be recovered"
    app.ask(Confirm(what, irreversible=True))


def deletes_by_landing(app: Call, account_id: str, action: Action, destination: str | None) -> bool:
    """Whether a move or copy into ``destination`` is a delete on this server (Gmail: into the mailbox
    marked ``\\Trash``), to be answered as action delete; into the one it reports as spam it is refused."""
    if action not in ("move", "copy") or destination is None:
        return False
    landed = app.mail(account_id).landing(destination)
    if landed is None:
        return False
    landing, mailbox = landed
    if landing == "spam":
        raise spam_landing(action, mailbox)
    return True
