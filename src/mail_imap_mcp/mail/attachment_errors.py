"""The refusals of reading an attachment (a limit, a mode it cannot be read in, a part id that names no
section), raised by the services that read one: each carries the facts its words need, never the words
(the failure registry of ``presentation/`` says them, see ``presentation/attachment_failures.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.ids import MessageRef

if TYPE_CHECKING:
    from mail_imap_mcp import mime


class AttachmentTooLarge(MailError):
    """Attachment ``part`` is ``size`` bytes, beyond ``limit`` bytes, the ``[server]`` setting ``setting``;
    ``exact``: its decoded size (else the size its encoded size suggests)."""

    def __init__(self, part: mime.Part, limit: int, setting: str, *, size: int, exact: bool) -> None:
        super().__init__(f"attachment {part.section} is beyond {setting} = {limit}")
        self.part = part
        self.limit = limit
        self.setting = setting
        self.size = size
        self.exact = exact


class WindowBeyondLimit(MailError):
    """A window of an attachment's bytes that ends at byte ``end``, beyond ``max_attachment_bytes``
    (``limit``)."""

    def __init__(self, end: int, limit: int) -> None:
        super().__init__(f"the window ends at byte {end}, beyond max_attachment_bytes = {limit}")
        self.end = end
        self.limit = limit


class InvalidPartId(MailError):
    """``part_id`` is no IMAP section number (``2``, ``1.3``)."""

    def __init__(self, part_id: str) -> None:
        super().__init__(f"part id {part_id!r} is no IMAP section number")
        self.part_id = part_id


class ModeUnsupported(MailError):
    """Attachment ``part`` of ``ref`` cannot be read as ``mode`` (``image``, ``text``): ``why`` says why."""

    def __init__(self, ref: MessageRef, part: mime.Part, mode: str, why: str) -> None:
        super().__init__(f"attachment {part.section} cannot be read as {mode}: {why}")
        self.ref = ref
        self.part = part
        self.mode = mode
        self.why = why


class ExtractionLimitHit(MailError):
    """The extraction sandbox stopped at one of its limits (``limit``, the ``[server]`` setting
    ``setting`` when it is one) reading attachment ``part``; ``said``: the sandbox's message."""

    def __init__(self, said: str, limit: str | None, setting: str | None, part: mime.Part) -> None:
        super().__init__(said)
        self.said = said
        self.limit = limit
        self.setting = setting
        self.part = part
