"""The refusals of saving a draft (imap_save_draft): a message id of another account, a From that is no
address of the account, too many recipients, a message that is no draft to replace. Each carries the
facts its words need, never the words (the failure registry of ``presentation/`` says them, see
``presentation/draft_failures.py``)."""

from __future__ import annotations

from enum import StrEnum

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.errors import MailError


class ForeignMessage(MailError):
    """The message id given as ``parameter`` belongs to account ``owner``, not to ``account_id``."""

    def __init__(self, parameter: str, owner: str, account_id: str) -> None:
        super().__init__(f"the message ({parameter}) belongs to account {owner!r}, not {account_id!r}")
        self.parameter = parameter
        self.owner = owner
        self.account_id = account_id


class SenderNotOwn(MailError):
    """``from_address`` is none of the addresses of ``account`` (its ``effective_addresses``)."""

    def __init__(self, account: AccountConfig) -> None:
        super().__init__("from_address is none of the account's addresses")
        self.account = account
        self.identities = list(account.effective_addresses)


class TooManyRecipients(MailError):
    """A draft's recipients are more than a draft may have; ``said``: how many, and the bound."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


class NotReplaceable(StrEnum):
    """Why a message cannot be replaced by a new draft."""

    #: It is not in the Drafts folder.
    ELSEWHERE = "elsewhere"
    #: The Drafts folder is also the Trash: the replaced draft could not be kept for the undo.
    DRAFTS_IS_TRASH = "drafts_is_trash"
    #: It has no ``\Draft`` flag.
    NOT_A_DRAFT = "not_a_draft"
    #: It lost its ``\Draft`` flag after it was checked, before it was moved to Trash.
    LOST_DRAFT_FLAG = "lost_draft_flag"


class DraftNotReplaceable(MailError):
    """The message ``replace_message_id`` names cannot be replaced (``reason``); ``mailbox``: where it is,
    ``drafts`` and ``trash``: the account's Drafts and Trash folders."""

    def __init__(
        self, reason: NotReplaceable, *, mailbox: str = "", drafts: str = "", trash: str = ""
    ) -> None:
        super().__init__(f"the message cannot be replaced: {reason.value}")
        self.reason = reason
        self.mailbox = mailbox
        self.drafts = drafts
        self.trash = trash


class AttachmentRefused(MailError):
    """An attachment of a draft could not be taken: ``cause`` (a message or part that cannot be read, a
    size limit), said as the failure registry says it, naming ``parameter``, the argument that asked for
    it (``attachments[2]``, or ``forward_of`` for what a forward carries)."""

    def __init__(self, parameter: str, cause: Exception) -> None:
        super().__init__(f"{parameter}: {cause}")
        self.parameter = parameter
        self.cause = cause


class DraftTooLarge(MailError):
    """A draft with its attachments would be at least ``size`` bytes (encoded; where a part was refused
    before it was read, its size as the message's structure says), beyond ``limit``: the most
    ``limited_by`` takes (the IMAP server's APPENDLIMIT, the submission server's SIZE)."""

    def __init__(self, size: int, limit: int, limited_by: str) -> None:
        super().__init__(f"the draft is {size} bytes, beyond {limited_by} ({limit})")
        self.size = size
        self.limit = limit
        self.limited_by = limited_by
