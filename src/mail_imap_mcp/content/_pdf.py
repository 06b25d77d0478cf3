"""PDF text with pypdf (runs only in the sandboxed child)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import ExtractionError, format_bytes

_MAX_PAGE_NOTES = 20
# pypdf's per-stream default is 75 MB; inside a child limited to ``memory_bytes`` of
# address space a smaller share keeps one stream from taking it all.
_STREAM_SHARE = 6


def _configure(memory_bytes: int) -> int:
    import pypdf

    stream_cap = max(min(75_000_000, memory_bytes // _STREAM_SHARE), 1_000_000)
    pypdf.overwrite_configuration(
        maximum_declared_stream_length=stream_cap,
        array_based_stream_maximum_output_length=stream_cap,
        jbig2_maximum_output_length=stream_cap,
        lzw_maximum_output_length=stream_cap,
        run_length_maximum_output_length=stream_cap,
        zlib_maximum_output_length=stream_cap,
        brotli_maximum_output_length=stream_cap,
        image_maximum_buffer_size=stream_cap,
        stream_decoding_work_maximum_length=4 * stream_cap,
        xfa_decoding_work_maximum_length=4 * stream_cap,
        # Never start an external decoder process from the sandbox.
        jbig2dec_binary=None,
    )
    return stream_cap


def _open(path: str) -> Any:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError

    reader = PdfReader(path, strict=False)
    if reader.is_encrypted:
        decrypted: object
        try:
            decrypted = reader.decrypt("")
        except (DependencyError, NotImplementedError) as exc:
            raise ExtractionError(
                "encrypted", f"The PDF is encrypted with a method that cannot be opened here ({exc})."
            ) from exc
        except FileNotDecryptedError:
            decrypted = 0
        if not decrypted:
            raise ExtractionError(
                "encrypted",
                "The PDF is password-protected; its text cannot be read without the password. "
                "Fetch its bytes to open it elsewhere.",
            )
    return reader


def _has_images(page: Any) -> bool:
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        return bool(xobjects)
    except Exception:
        return False


def pdf_chunks(path: str, notes: list[str], meta: dict[str, Any], memory_bytes: int) -> Iterator[str]:
    """Yield the text page by page (``[page N]`` headers when there are several pages)."""
    from pypdf.errors import LimitReachedError

    stream_cap = _configure(memory_bytes)
    try:
        reader = _open(path)
        pages = reader.pages
        count = len(pages)
        meta["pages"] = count
        silent = 0
        for number in range(1, count + 1):
            page = pages[number - 1]
            text = page.extract_text() or ""
            if not text.strip():
                silent += 1
                if silent <= _MAX_PAGE_NOTES:
                    reason = " (an image only: scanned?)" if _has_images(page) else ""
                    notes.append(f"page {number} has no text layer{reason}")
            yield (f"[page {number}]\n{text}\n\n" if count > 1 else text)
        if silent > _MAX_PAGE_NOTES:
            notes.append(f"{silent - _MAX_PAGE_NOTES} more pages have no text layer")
        if count and silent == count:
            notes.append("no page has a text layer (a scan without OCR, or text drawn as shapes?)")
    except LimitReachedError as exc:
        raise _limit_error(str(exc), stream_cap) from exc


def _limit_error(detail: str, stream_cap: int) -> ExtractionError:
    detail = "".join(ch for ch in detail if ch.isprintable())[:160]
    if "cycl" in detail or "loop" in detail:
        return ExtractionError("extract_failed", f"The PDF's object structure is cyclic ({detail}).")
    if "decompress" in detail or "stream" in detail.lower() or "Declared size" in detail:
        return ExtractionError(
            "limit_exceeded",
            f"A PDF stream decompresses to more than the extraction limit ({format_bytes(stream_cap)}): "
            "a compression bomb or a huge embedded object. Fetch its bytes instead.",
            limit="decompressed_stream_bytes",
        )
    return ExtractionError(
        "limit_exceeded",
        f"The PDF exceeds a structural safety limit of the PDF reader ({detail}).",
        limit="pdf_structure",
    )
