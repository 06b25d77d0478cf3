"""The one error type of content extraction (stdlib only: the sandboxed child raises it too)."""

from __future__ import annotations

from typing import Literal

__all__ = ["ExtractionError", "ExtractionErrorCode"]

ExtractionErrorCode = Literal["limit_exceeded", "unsupported_format", "extract_failed", "encrypted"]
_CODES: dict[str, ExtractionErrorCode] = {
    "limit_exceeded": "limit_exceeded",
    "unsupported_format": "unsupported_format",
    "extract_failed": "extract_failed",
    "encrypted": "encrypted",
}


def error_code(value: object) -> ExtractionErrorCode:
    """``value`` as an error code; anything unknown is ``extract_failed``."""
    return _CODES.get(value, "extract_failed") if isinstance(value, str) else "extract_failed"


class ExtractionError(Exception):
    """An attachment could not be turned into text or an image.

    ``code`` is one of ``limit_exceeded`` (a cap was hit: ``limit`` names the setting, e.g.
    ``max_attachment_bytes``, ``extract_timeout_s``, ``memory``), ``unsupported_format``,
    ``extract_failed`` (malformed or hostile input) and ``encrypted``; ``message`` is
    actionable text for the user.
    """

    def __init__(self, code: ExtractionErrorCode, message: str, *, limit: str | None = None) -> None:
        if code not in _CODES:
            raise ValueError(f"unknown extraction error code {code!r}")
        super().__init__(message)
        self.code: ExtractionErrorCode = code
        self.message = message
        self.limit = limit

    def __repr__(self) -> str:
        return f"ExtractionError({self.code!r}, {self.message!r}, limit={self.limit!r})"


def format_bytes(value: int) -> str:
    """``5242880`` -> ``5 MB``: sizes in messages the way a user writes them in the config."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= size:
            amount = value / size
            return f"{amount:.0f} {unit}" if amount == int(amount) or amount >= 10 else f"{amount:.1f} {unit}"
    return f"{value} bytes"
