"""Who a call is made for, as one record handed to each tool handler (:class:`Caller`).

Where a request enters (a tool call, a resource read, a subscription) the user its access token names
(:func:`~mail_imap_mcp.state.request_user.user_of`, folded by :func:`fold_user`) becomes a :class:`Caller`
with the accounts served per user for them; the handler reads it from the application it is given
(``AppContext.caller``) and hands what the layers below need to them as arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from mail_imap_mcp.state.request_user import ANONYMOUS, user_key, user_tag

#: The ``user_claim`` whose values are folded (:func:`fold_user`).
FOLDED_CLAIM = "email"


def fold_user(name: str, user_claim: str) -> str:
    """The user's name as everything is keyed by it (the tag, the sealing key, the index file, the
    store's keys, the audit line): ``str.casefold()`` of an address (``user_claim = "email"``:
    ``Alice@`` and ``alice@`` are one person), any other claim exactly as the token gives it."""
    return name.casefold() if user_claim == FOLDED_CLAIM else name


@dataclass(frozen=True)
class Caller:
    """The user a call is made for (:data:`ANONYMOUS` on a one-person server), folded
    (:func:`fold_user`), the accounts served per user for them (``per_user = true``: their ids and
    audit lines name the user's own mailbox), and the name as their token spelled it."""

    user: str = ANONYMOUS
    per_user_accounts: frozenset[str] = frozenset()
    #: The name as the caller's token spelled it, before folding (``Alice@`` of ``alice@``).
    as_given: str = ANONYMOUS

    @property
    def spelled_otherwise(self) -> str | None:
        """The token's own spelling where folding changed it (what an earlier version keyed the
        user's index file by), else None."""
        return self.as_given if self.as_given not in (ANONYMOUS, self.user) else None

    @property
    def tag(self) -> str:
        """The user as the store names them (:func:`~mail_imap_mcp.state.request_user.user_tag`)."""
        return user_tag(self.user)

    def key(self, kind: str, *parts: str) -> str:
        """The store key of ``kind`` for this user."""
        return user_key(kind, *parts, user=self.user)

    def mailbox_key(self, kind: str, account_id: str, *parts: str) -> str:
        """The store key of ``kind`` for what belongs to the mailbox ``account_id`` opens, not to the user:
        one key for every user of a shared account, the user's own for an account served per user."""
        owner = self.user if self.owns_mailbox_of(account_id) else ANONYMOUS
        return user_key(kind, account_id, *parts, user=owner)

    def owns_mailbox_of(self, account_id: str) -> bool:
        """Whether ``account_id`` opens this user's own mailbox (an account served per user)."""
        return account_id in self.per_user_accounts

    def audit_fields(self, account_id: str) -> dict[str, str]:
        """What an audit line says of the caller: ``user`` (``-`` for nobody in particular) and, for an
        account served per user, ``mailbox_of``: whose mailbox the write changed."""
        fields = {"user": self.user or "-"}
        if self.owns_mailbox_of(account_id):
            fields["mailbox_of"] = self.user
        return fields


#: The caller of a one-person server (stdio, the static bearer token): every account that is not a
#: template.
ANONYMOUS_CALLER = Caller()
