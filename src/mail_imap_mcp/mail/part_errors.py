"""Why a part of a message (an attachment) cannot be read: none with that id, the body text, an unusable
structure, the message gone, the server's refusal. Each carries the facts its words need, never the words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.ids import MessageRef

if TYPE_CHECKING:
    from mail_imap_mcp import mime


class PartError(MailError):
    """An attachment part of a message cannot be read; ``ref``: the message (:func:`read_part` sets it),
    which the failure registry's words name."""

    ref: MessageRef | None = None


class PartNotFound(PartError):
    """No leaf part with this section number; ``available`` lists the attachment part ids."""

    def __init__(self, part_id: str, available: list[str]) -> None:
        super().__init__(part_id)
        self.part_id = part_id
        self.available = available


class NotAnAttachment(PartError):
    """The section is the message's body text (or another non-attachment leaf)."""

    def __init__(self, part: mime.Part, available: list[str]) -> None:
        super().__init__(part.section)
        self.part = part
        self.available = available


class StructureUnusable(PartError):
    """The server's BODYSTRUCTURE is missing, unusable or contradicts the message's headers."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PartGone(PartError):
    """The message no longer exists."""


class PartRefused(PartError):
    """The server answered NO (or BAD) to the FETCH of an existing part; ``said``: its words."""

    def __init__(self, part_id: str, said: str) -> None:
        super().__init__(f"FETCH of part {part_id!r} refused: {said}")
        self.part_id = part_id
        self.said = said
