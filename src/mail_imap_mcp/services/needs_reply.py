"""``needs_reply`` of imap_search_messages after the search: a page's candidates (already narrowed by the
server, :class:`mail_imap_mcp.query.NeedsReply`) without those a message in the Sent
mailbox answers. Three round trips at most, however many messages and mailboxes the page spans: LIST
(to find Sent), EXAMINE with the SEARCH of Sent, and the FETCH of what it found."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.directory import directory_of
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.replies import Candidate, first_message_id
from mail_imap_mcp.mail.roles import SENT
from mail_imap_mcp.mail.step_failure import StepFailed

__all__ = ["Answered", "answered_from_sent"]


class Listed(Protocol):
    """What is read of a message a page lists (its summary)."""

    @property
    def message_id(self) -> str: ...
    @property
    def header_message_id(self) -> str | None: ...
    @property
    def from_(self) -> str | None: ...
    @property
    def date(self) -> str | None: ...
    @property
    def arrived(self) -> str | None: ...


@dataclass
class Answered:
    """Which of a page's messages a message in Sent answers, and what the check could not do."""

    message_ids: set[str] = field(default_factory=set)
    #: The Sent mailbox could not be searched (worded by presentation: ``presentation/issues.py``).
    issues: list[StepFailed] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _instant(iso: str | None) -> datetime | None:
    return datetime.fromisoformat(iso) if iso else None


def sent_mailbox(boxes: list[MailboxInfo], account: AccountConfig) -> str | None:
    """The account's Sent mailbox among ``boxes``: the one marked ``\\Sent``, else its ``sent_mailbox``
    setting where that exists, else one of the usual name; None when there is none."""
    directory = directory_of(boxes, account)
    return directory.special_use(SENT) or next(iter(directory.with_role(SENT)), None)


def answered_from_sent(app: Call, account_id: str, messages: Sequence[Listed]) -> Answered:
    """The ``messages`` a message in Sent answers: it names them (In-Reply-To or References), is
    addressed to their sender and is not older than they are."""
    account = app.config.accounts[account_id]
    answered = Answered()
    if not account.user_addresses:
        answered.warnings.append(
            "needs_reply: the account names no addresses of its own (the addresses setting), so your own "
            "messages are not left out."
        )
    candidates = []
    for message in messages:
        header_id = first_message_id(message.header_message_id)
        if header_id is not None:
            senders = mime.parse_address_list(message.from_)
            sender = senders[0].email if senders else None
            dates = (mime.parse_date(message.date), _instant(message.arrived))
            candidates.append(Candidate(message.message_id, header_id, sender, *dates))
    if not candidates:
        return answered

    try:
        found_answered = app.mail(account_id).answered(lambda boxes: sent_mailbox(boxes, account), candidates)
    except MailError as exc:  # an issue of the answer, in the registry's words (presentation's)
        if exc.for_caller:
            raise
        found_answered = set()
        said = "The Sent mailbox could not be searched for your answers ("
        answered.issues.append(StepFailed("search", exc, said, ").", code="sent_not_checked", retryable=True))
    if found_answered is None:
        answered.warnings.append(
            "needs_reply: no Sent mailbox was found (no \\Sent special-use, no sent_mailbox setting, no "
            f"usual name), so only \\Answered tells answered mail; the user sets "
            f"{account.setting('sent_mailbox', '<a mailbox from imap_list_mailboxes>')}."
        )
    else:
        answered.message_ids = found_answered
    return answered
