"""Attachment resources are never served with a type a client would run (issue 25, finding 6)."""

from __future__ import annotations

import pytest

from mail_imap_mcp.content.served_types import OPAQUE, served_type

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
HTML = b"<html><script>steal()</script></html>"


@pytest.mark.parametrize(
    ("declared", "data", "served"),
    [
        ("image/svg+xml", SVG, OPAQUE),
        ("text/html", HTML, OPAQUE),
        ("application/xhtml+xml", HTML, OPAQUE),
        ("text/xml", SVG, OPAQUE),
        ("application/javascript", b"alert(1)", OPAQUE),
        ("image/png", SVG, OPAQUE),  # a declared raster image whose bytes are not one
        ("image/png", PNG, "image/png"),
        ("IMAGE/PNG", PNG, "image/png"),
        ("application/octet-stream", PNG, "image/png"),  # the bytes say what it is
        ("text/plain", b"hello", "text/plain"),
        ("text/csv", b"a,b", "text/csv"),
        ("text/calendar", b"BEGIN:VCALENDAR", "text/calendar"),
        ("application/pdf", b"%PDF-1.7\n", "application/pdf"),
        ("application/pdf", HTML, OPAQUE),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", b"PK\3\4", OPAQUE),
    ],
)
def test_only_passive_types_are_served_as_such(declared: str, data: bytes, served: str) -> None:
    assert served_type(declared, data) == served
