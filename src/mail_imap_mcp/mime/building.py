"""A draft with attachments as one RFC 5322 message, built by the standard library's email package and
streamed: pure, no IMAP.

The message's headers and each part's headers come from the email package (``multipart/mixed``, names
as RFC 2231 parameters, CRLF); each attachment's body is written in its place as the message is read
out, base64 in 76-character lines, from chunks of its content: only one chunk of an attachment is in
memory at a time, and the message's exact size is known before any content is read. The draft's text
part is the email package's, unchanged byte for byte; a draft without attachments is the text message
itself.

Where an attachment comes from (a part of a message, a file) is recorded for the user's approval in one
top-level :data:`SOURCE_HEADER` line per attachment, naming its part; ``smtp/outgoing.py`` leaves those
lines out of what is transmitted.
"""

from __future__ import annotations

import base64
import email.policy
import io
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import BinaryIO, Literal

__all__ = [
    "SOURCE_HEADER",
    "Attachment",
    "BuiltMessage",
    "base64_size",
    "build_message",
    "recorded_sources",
]

#: The header recording an attachment's source for the approval: ``<part>; <source>``, never transmitted.
SOURCE_HEADER = "X-Mail-Imap-Mcp-Source"
_POLICY = email.policy.SMTP
#: Decoded bytes per base64 line (76 characters).
_LINE_BYTES = 57
#: Decoded bytes encoded at a time: 1,024 lines (about 76 KB encoded).
_CHUNK_BYTES = _LINE_BYTES * 1024
_SOURCE_VALUE = re.compile(r"^(\d+(?:\.\d+)*); (.*)$", re.DOTALL)
_TOKEN_BYTES = 16

Disposition = Literal["attachment", "inline"]
Encoding = Literal["base64", "7bit", "8bit"]


@dataclass(frozen=True)
class Attachment:
    """One attachment of a draft: its decoded content (``read``: a fresh stream of exactly ``size``
    bytes each time it is called), its type, name and disposition, and where it comes from in words."""

    name: str
    content_type: str
    size: int
    read: Callable[[], BinaryIO]
    #: Where it comes from, for the user ("from the message 'Invoice' of Acme"); empty: not recorded.
    source: str = ""
    disposition: Disposition = "attachment"
    #: base64 (any content); 7bit or 8bit: the content as it is, CRLF lines (a ``message/rfc822``).
    encoding: Encoding = "base64"
    #: More Content-Type parameters (``method`` of a ``text/calendar``).
    params: Mapping[str, str] = field(default_factory=dict)
    content_id: str | None = None

    @classmethod
    def of_bytes(
        cls, content: bytes, name: str, content_type: str, *, source: str = "", encoding: Encoding = "base64"
    ) -> Attachment:
        """An attachment whose content is ``content``."""
        return cls(name, content_type, len(content), lambda: io.BytesIO(content), source, encoding=encoding)

    @property
    def encoded_size(self) -> int:
        """Its body's bytes in the message (before the CRLF that precedes the next boundary)."""
        return base64_size(self.size) if self.encoding == "base64" else self.size


def base64_size(size: int) -> int:
    """The bytes of ``size`` bytes as base64 in 76-character lines joined by CRLF (no CRLF after the last)."""
    lines = -(-size // _LINE_BYTES)
    return 4 * -(-size // 3) + 2 * max(lines - 1, 0)


class ContentChanged(ValueError):
    """An attachment's content was not the size it declared when it was read out."""


def _encoded(attachment: Attachment) -> Iterator[bytes]:
    """The attachment's body as it stands in the message, a chunk at a time."""
    read = 0
    with attachment.read() as stream:
        while chunk := stream.read(_CHUNK_BYTES):
            while len(chunk) % _LINE_BYTES and (more := stream.read(_LINE_BYTES - len(chunk) % _LINE_BYTES)):
                chunk += more  # a short read: fill the last line so lines stay 76 characters
            if attachment.encoding != "base64":
                yield chunk
            else:
                text = base64.b64encode(chunk)
                lines = [text[i : i + 76] for i in range(0, len(text), 76)]
                yield (b"\r\n" if read else b"") + b"\r\n".join(lines)
            read += len(chunk)
    if read != attachment.size:
        raise ContentChanged(f"{attachment.name!r} was {read} bytes, not {attachment.size}, when it was read")


def _part(attachment: Attachment, token: str) -> EmailMessage:
    part = EmailMessage(policy=_POLICY)
    part["Content-Type"] = attachment.content_type
    for name, value in attachment.params.items():
        part.set_param(name, value)
    if attachment.name:
        part.set_param("name", attachment.name)
    part["Content-Disposition"] = attachment.disposition
    if attachment.name:
        part.set_param("filename", attachment.name, header="Content-Disposition")
    if attachment.content_id is not None:
        part["Content-ID"] = attachment.content_id
    part["Content-Transfer-Encoding"] = attachment.encoding
    part.set_payload(token)
    return part


@dataclass(frozen=True)
class BuiltMessage:
    """A message as a sequence of pieces: the email package's bytes between the attachments' bodies."""

    #: The message's bytes around the bodies: ``len(attachments) + 1`` pieces.
    frame: tuple[bytes, ...]
    attachments: tuple[Attachment, ...]

    @property
    def size(self) -> int:
        """The message's exact size in bytes, as saved or sent (nothing read)."""
        return sum(map(len, self.frame)) + sum(a.encoded_size for a in self.attachments)

    def chunks(self) -> Iterator[bytes]:
        """The message's bytes in order, an attachment's body a chunk at a time."""
        yield self.frame[0]
        for attachment, after in zip(self.attachments, self.frame[1:], strict=True):
            yield from _encoded(attachment)
            yield after

    def whole(self) -> bytearray:
        """The whole message in one buffer: its size in memory once, and one chunk of an attachment
        besides (never copied: what APPEND sends as it is)."""
        whole = bytearray(self.size)
        at = 0
        for chunk in self.chunks():
            whole[at : at + len(chunk)] = chunk
            at += len(chunk)
        if at != len(whole):
            raise ContentChanged(f"the message was {at} bytes, not {len(whole)}")
        return whole

    def to_bytes(self) -> bytes:
        """The whole message as bytes (a copy of :meth:`whole`)."""
        return bytes(self.whole())


def build_message(text: EmailMessage, attachments: Sequence[Attachment]) -> BuiltMessage:
    """``text`` (a single-part draft, e.g. from ``content/drafts.py``) with ``attachments``: the text
    message itself when there are none, else ``multipart/mixed`` of its text part and each attachment,
    with a :data:`SOURCE_HEADER` line for each attachment whose source is recorded. ``text`` is changed."""
    if not attachments:
        return BuiltMessage((text.as_bytes(policy=_POLICY),), ())
    tokens = [f"mim-body-{secrets.token_hex(_TOKEN_BYTES)}" for _ in attachments]
    text.make_mixed()
    for number, (attachment, token) in enumerate(zip(attachments, tokens, strict=True), start=2):
        if attachment.source:
            text[SOURCE_HEADER] = f"{number}; {attachment.source}"
        text.attach(_part(attachment, token))
    whole = text.as_bytes(policy=_POLICY)
    pieces: list[bytes] = []
    for token in tokens:
        before, found, whole = whole.partition(token.encode("ascii"))
        if not found:  # the email package wrote the body otherwise than as given
            raise AssertionError("an attachment's place was not found in the message")
        pieces.append(before)
    return BuiltMessage((*pieces, whole), tuple(attachments))


def recorded_sources(values: Iterable[str]) -> dict[str, str]:
    """The sources :func:`build_message` recorded, by part number (``"2"``), from the values of the
    message's :data:`SOURCE_HEADER` lines; a value in another form is left out."""
    found: dict[str, str] = {}
    for value in values:
        match = _SOURCE_VALUE.match(" ".join(str(value).split()))
        if match is not None:
            found.setdefault(match.group(1), match.group(2))
    return found
