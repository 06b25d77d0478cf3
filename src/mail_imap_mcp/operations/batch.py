"""The messages of a bulk write: ids parsed, de-duplicated and grouped per mailbox, of one account.

Aliases of one account (``default`` for the only configured account, and its own name) name the same
account: ids under both are accepted and a message named under both counts once, so it is never
written twice. So does ``INBOX`` in any case (RFC 3501 5.1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.mail.directory import canonical_inbox
from mail_imap_mcp.mail.ids import ForeignMessageId, InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.state import Caller


@dataclass(frozen=True)
class BatchItem:
    """One distinct message of the request."""

    #: The id as given (echoed in results and issues).
    text: str
    ref: MessageRef


@dataclass(eq=False)
class MailboxGroup:
    """The messages of one mailbox (one UIDVALIDITY), in the order given (hashed by identity)."""

    mailbox: str
    uidvalidity: int
    items: list[BatchItem] = field(default_factory=list)

    @property
    def uids(self) -> list[int]:
        return [item.ref.uid for item in self.items]

    def by_uid(self) -> dict[int, BatchItem]:
        return {item.ref.uid: item for item in self.items}


@dataclass
class Batch:
    """The distinct messages of a request, all of one account."""

    #: The configured account (aliases resolved).
    account_id: str
    #: The account as the first id spells it (new ids and next actions keep the caller's spelling).
    given_account_id: str
    items: list[BatchItem]
    groups: list[MailboxGroup]

    def position(self) -> dict[str, int]:
        """Each id's place in the request (to list results and issues in the order given)."""
        return {item.text: index for index, item in enumerate(self.items)}


def group_message_ids(
    message_ids: Sequence[str],
    resolve_account: Callable[[str], str],
    caller: Caller,
    parameter: str = "message_ids",
) -> Batch:
    """Parse ``message_ids`` given to ``caller`` (``invalid_input`` naming the item that is malformed), drop repeats of a
    message (also under another alias of its account), and group them per mailbox and UIDVALIDITY in the
    order given. Ids of several accounts are refused: one call writes to one account."""
    items: list[BatchItem] = []
    groups: dict[tuple[str, int], MailboxGroup] = {}
    seen: set[tuple[str, str, int, int]] = set()
    accounts: set[str] = set()
    for index, text in enumerate(message_ids):
        try:
            ref = parse_message_id(text, caller)
        except ForeignMessageId:  # said as a message that does not exist
            raise
        except InvalidMessageId as exc:
            raise ToolFailure.invalid_input(parameter, f"item {index}: {exc}.", index=index) from None
        account = resolve_account(ref.account_id)
        accounts.add(account)
        mailbox = canonical_inbox(ref.mailbox)
        key = (account, mailbox, ref.uidvalidity, ref.uid)
        if key in seen:
            continue
        seen.add(key)
        item = BatchItem(text, ref)
        items.append(item)
        group = groups.setdefault((mailbox, ref.uidvalidity), MailboxGroup(ref.mailbox, ref.uidvalidity))
        group.items.append(item)
    if not items:
        raise ToolFailure.invalid_input(parameter, "give at least one message id.")
    if len(accounts) > 1:
        raise ToolFailure.invalid_input(
            parameter, f"the ids name several accounts ({', '.join(sorted(accounts))}); one account per call."
        )
    (account,) = accounts
    return Batch(account, items[0].ref.account_id, items, list(groups.values()))
