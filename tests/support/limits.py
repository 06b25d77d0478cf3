"""Sandbox limits as the server builds them from its default ``[server]`` settings, for content tests.

config/settings.py is the one place those defaults are defined; tests take them from there too.
"""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.content.documents import MAX_DOCUMENT_CHARS, ExtractLimits
from mail_imap_mcp.content.images import ImageLimits
from mail_imap_mcp.services.attachment_text import extract_limits, image_limits


def default_extract_limits(**overrides: Any) -> ExtractLimits:
    """The server's document limits, with the parsers' own text cap unless ``overrides`` set one."""
    served = extract_limits(ServerSettings()).model_dump()
    return ExtractLimits(**{**served, "max_chars": MAX_DOCUMENT_CHARS, **overrides})


def default_image_limits(**overrides: Any) -> ImageLimits:
    """The server's image limits, with ``overrides``."""
    return ImageLimits(**{**image_limits(ServerSettings()).model_dump(), **overrides})
