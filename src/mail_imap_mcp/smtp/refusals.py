"""Why a send is refused before anything is submitted: the draft, the sender, the recipients, the rate
limit, an earlier send of the same message, or no way to ask the user. Domain errors, worded by the failure
registry (``presentation/send_failures.py``); each one means nothing was sent."""

from __future__ import annotations

from enum import StrEnum


class DraftUnsendable(StrEnum):
    """What makes a saved message no draft this server sends."""

    NOT_IN_DRAFTS = "not_in_drafts"
    TOO_LARGE = "too_large"
    MALFORMED = "malformed"
    REPEATED_HEADER = "repeated_header"
    NO_RECIPIENTS = "no_recipients"
    TOO_MANY_RECIPIENTS = "too_many_recipients"
    SENDER_NOT_OWN = "sender_not_own"


class SendRefused(Exception):
    """A send refused before any connection to the submission server."""


class DraftRefused(SendRefused):
    """The draft cannot be sent as it is; ``detail`` says what of it, in words safe to show."""

    def __init__(self, reason: DraftUnsendable, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class RecipientsNotAllowed(SendRefused):
    """Recipients outside the account's ``allowed_recipients``."""

    def __init__(self, account_id: str, setting: str, addresses: list[str]) -> None:
        super().__init__(f"{len(addresses)} recipient(s) not allowed")
        self.account_id = account_id
        #: The setting as the user writes it (``allowed_recipients`` of ``[accounts.x]``).
        self.setting = setting
        self.addresses = addresses


class SendRateReached(SendRefused):
    """The account's sends in the last hour reached ``send_rate_per_hour``; ``retry_after_s``: when one may go."""

    def __init__(self, account_id: str, setting: str, limit: int, retry_after_s: int) -> None:
        super().__init__(f"{limit} sends an hour")
        self.account_id = account_id
        self.setting = setting
        self.limit = limit
        self.retry_after_s = retry_after_s


class AlreadySent(SendRefused):
    """The draft's Message-ID was sent before (``state``: ``sent``), its send is under way (``sending``)
    or its outcome is unknown (``unknown``); ``sent_mailbox`` is where to look."""

    def __init__(self, header_id: str, state: str, sent_mailbox: str | None) -> None:
        super().__init__(f"{header_id}: {state}")
        self.header_id = header_id
        self.state = state
        self.sent_mailbox = sent_mailbox


class ApprovalPageOpen(SendRefused):
    """An approval page of the account is open (another send waits for the user there): at most one is."""

    def __init__(self, account_id: str) -> None:
        super().__init__(f"an approval page of {account_id!r} is open")
        self.account_id = account_id
