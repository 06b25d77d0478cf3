"""A leaf MIME part (:class:`Part`), which parts are the body and which are attachments, and a part's text.

Section numbers follow IMAP (RFC 3501 §6.4.5): leaves of a multipart are numbered ``1``, ``1.2``...;
a non-multipart message has the single section ``1``; ``message/rfc822`` parts are leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..content.charsets import decode_bytes
from ..content.text import BIDI_CONTROLS, strip_controls
from .header_text import clean_header
from .transfer import decode_transfer

__all__ = [
    "BODY_TYPES",
    "MAX_DEPTH",
    "MESSAGE_TYPES",
    "Part",
    "attachment_parts",
    "choose_body_parts",
    "decode_part_text",
    "decode_text",
    "has_attachments",
    "is_body_candidate",
    "make_part",
]


@dataclass(frozen=True, slots=True)
class Part:
    """A leaf MIME part as described by BODYSTRUCTURE (or by the parsed message).

    ``size_bytes`` is the *encoded* size (base64 is ~4/3 of the decoded size).
    ``content_id`` is stored without the surrounding ``<>``. ``disposition`` is
    normalised: leaves that are not ``text/plain``/``text/html`` and carry no
    disposition get ``"inline"`` when they have a Content-ID (embedded images) and
    ``"attachment"`` otherwise; unknown dispositions become ``"attachment"``.
    ``filename`` has any directory components removed.
    """

    section: str
    content_type: str
    params: dict[str, str] = field(hash=False)
    encoding: str
    size_bytes: int
    disposition: str | None
    filename: str | None
    content_id: str | None
    charset: str | None

    @property
    def part_id(self) -> str:
        """The section number as the tools name a part (``part_id``)."""
        return self.section


BODY_TYPES = frozenset({"text/plain", "text/html"})
MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})
MAX_DEPTH = 64


def _clean_filename(value: str | None) -> str | None:
    if not value:
        return None
    name = value.translate(BIDI_CONTROLS).replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name if name not in ("", ".", "..") else None


def make_part(
    section: str,
    content_type: str,
    params: dict[str, str],
    encoding: str,
    size: int,
    disposition: str | None,
    disposition_params: dict[str, str],
    content_id: str | None,
) -> Part:
    # Values straight from BODYSTRUCTURE have not been through decode_header_value.
    content_type = "".join(clean_header(content_type).split()) or "application/octet-stream"
    cid = clean_header(content_id or "").strip("<>").strip() or None
    filename = _clean_filename(disposition_params.get("filename") or params.get("name"))
    if disposition is not None and disposition not in ("inline", "attachment"):
        disposition = "attachment"
    if content_type in MESSAGE_TYPES:
        filename = filename or "message.eml"
        disposition = disposition or "attachment"
    elif disposition is None and content_type not in BODY_TYPES:
        disposition = "inline" if cid else "attachment"
    charset = (params.get("charset") or "").strip().strip("\"'").lower() or None
    return Part(
        section=section,
        content_type=content_type,
        params=params,
        encoding=(encoding or "7bit").strip().lower() or "7bit",
        size_bytes=max(size, 0),
        disposition=disposition,
        filename=filename,
        content_id=cid,
        charset=charset,
    )


def _is_attachment(part: Part) -> bool:
    if part.disposition == "attachment" or part.filename is not None:
        return True
    return part.disposition == "inline" and part.content_type not in BODY_TYPES


def is_body_candidate(part: Part) -> bool:
    return part.content_type in BODY_TYPES and part.disposition != "attachment" and part.filename is None


def choose_body_parts(parts: list[Part]) -> tuple[Part | None, Part | None]:
    """(first text/plain, first text/html) that are body text rather than attachments."""
    plain = next((p for p in parts if is_body_candidate(p) and p.content_type == "text/plain"), None)
    html = next((p for p in parts if is_body_candidate(p) and p.content_type == "text/html"), None)
    return plain, html


def attachment_parts(parts: list[Part]) -> list[Part]:
    """Parts shown as attachments: disposition attachment, a filename, or inline resources
    such as Content-ID images (``disposition == "inline"`` on a non-body type)."""
    return [part for part in parts if _is_attachment(part)]


def has_attachments(parts: list[Part]) -> bool:
    """Whether :func:`attachment_parts` would return anything."""
    return any(_is_attachment(part) for part in parts)


def decode_text(data: bytes, charset: str | None, *, partial: bool = False) -> str:
    """Decode body bytes using ``charset`` (aliases and supersets applied, unknown -> UTF-8).

    Invalid sequences are replaced; control characters other than tab, CR and LF (NUL,
    ESC, BEL, C1...) are removed. Absent or ASCII charsets
    accept UTF-8 and fall back to windows-1252. With ``partial=True`` (data cut by a
    partial fetch) an incomplete multi-byte character at the end is dropped instead of
    becoming U+FFFD.
    """
    if not data:
        return ""
    return strip_controls(decode_bytes(bytes(data), charset, final=not partial))


def decode_part_text(data: bytes, part: Part, *, final: bool = True) -> str:
    return strip_controls(decode_bytes(decode_transfer(data, part.encoding), part.charset, final=final))
