"""The content type an attachment is served as: never one a client would run.

A sender chooses an attachment's declared type, and a client that renders a resource by its type would
run an SVG's or an HTML page's scripts. So only passive types are served as such: raster images whose
bytes are a PNG, JPEG, GIF or WebP (as the bytes say, whatever was declared), PDFs that start like one,
and plain text, CSV and calendar text. Everything else, SVG, HTML, XHTML and XML included, is served as
``application/octet-stream``, with the declared type reported beside it.
"""

from __future__ import annotations

from .images import image_format

OPAQUE = "application/octet-stream"
#: Text types no client executes, served as declared.
_PASSIVE_TEXT = frozenset({"text/plain", "text/csv", "text/tab-separated-values", "text/calendar"})


def served_type(declared: str, data: bytes) -> str:
    """The type to serve ``data`` (an attachment declared as ``declared``) as."""
    raster = image_format(data[:16])
    if raster is not None:
        return f"image/{raster}"
    declared = declared.strip().lower()
    if declared in _PASSIVE_TEXT:
        return declared
    if declared == "application/pdf" and data.startswith(b"%PDF-"):
        return declared
    return OPAQUE
