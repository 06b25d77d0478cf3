"""Document extraction inside the sandboxed child: format dispatch and windowing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._window import TextCollector
from .errors import ExtractionError


def _chunks(fmt: str, params: dict[str, Any], notes: list[str], meta: dict[str, Any]) -> Iterator[str]:
    path: str = params["path"]
    if fmt == "pdf":
        from ._pdf import pdf_chunks

        memory_bytes: int = params["memory_bytes"]
        return pdf_chunks(path, notes, meta, memory_bytes)
    if fmt in ("docx", "xlsx", "pptx", "odt", "ods", "odp"):
        from ._office import office_chunks

        return office_chunks(path, fmt, notes, meta, params)
    if fmt == "calendar":
        from ._calendar import calendar_chunks

        return calendar_chunks(path, notes, meta, params)
    raise ExtractionError("unsupported_format", f"No text extractor for format {fmt!r}.")


def extract_document(params: dict[str, Any]) -> dict[str, Any]:
    """Extract the requested window of a document's text; the fields of ExtractedText."""
    fmt: str = params["format"]
    notes: list[str] = []
    meta: dict[str, Any] = {"format": fmt}
    collector = TextCollector(
        offset=params["offset"], max_chars=params["max_chars"], hard_cap=params["hard_cap"]
    )
    chunks = _chunks(fmt, params, notes, meta)
    complete = True
    try:
        for chunk in chunks:
            if not collector.add(chunk):
                complete = False
                break
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    window = collector.finish(complete=complete)
    if window.pop("cut_at_limit"):
        notes.append(f"the text was cut at {params['hard_cap']} characters (the extraction limit)")
    return {**meta, **window, "notes": notes}
