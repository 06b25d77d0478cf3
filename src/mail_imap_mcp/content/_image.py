"""Decode, downscale and re-encode one image with Pillow (sandboxed child only)."""

from __future__ import annotations

import base64
import io
import warnings
from typing import Any

from .errors import ExtractionError, format_bytes

_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
_MIN_SIDE = 64
_JPEG_QUALITIES = (85, 70, 55)
_SHRINK = 0.75


def _pixels_error(width: int, height: int, max_pixels: int) -> ExtractionError:
    return ExtractionError(
        "limit_exceeded",
        f"The image declares {width} x {height} pixels, more than the limit of {max_pixels} pixels; "
        "it is not decoded. Fetch its bytes instead.",
        limit="max_pixels",
    )


def _open(path: str, max_pixels: int) -> Any:
    from PIL import Image, UnidentifiedImageError

    # Opening reads the header only; the pixel count is checked here, with the numbers in the
    # message, and Pillow's own bomb check then guards any later frame.
    Image.MAX_IMAGE_PIXELS = None
    warnings.simplefilter("error", Image.DecompressionBombWarning)
    try:
        image = Image.open(path, formats=_FORMATS)
    except UnidentifiedImageError as exc:
        raise ExtractionError(
            "unsupported_format", "The file is not a PNG, JPEG, GIF or WebP image that can be read."
        ) from exc
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ExtractionError(
            "limit_exceeded",
            f"The image has more pixels than the limit of {max_pixels}; it is not decoded.",
            limit="max_pixels",
        ) from exc
    width, height = image.size
    if width * height > max_pixels:
        raise _pixels_error(width, height, max_pixels)
    Image.MAX_IMAGE_PIXELS = max_pixels
    return image


def _has_alpha(image: Any) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        image.mode == "P" and "transparency" in image.info
    )


def _fit(size: tuple[int, int], bound: int) -> tuple[int, int]:
    width, height = size
    scale = min(1.0, bound / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def _encode(image: Any, fmt: str, quality: int) -> bytes:
    out = io.BytesIO()
    if fmt == "PNG":
        image.save(out, "PNG", optimize=image.width * image.height <= 1_000_000)
    else:
        image.save(out, "JPEG", quality=quality, optimize=True, progressive=True)
    return out.getvalue()


def _normalise(image: Any, png: bool) -> Any:
    """A mode the output format takes (palette/bilevel images stay compact as PNG)."""
    if png:
        if image.mode in ("1", "L", "LA", "P", "RGB", "RGBA"):
            return image
        return image.convert("RGBA" if _has_alpha(image) else "RGB")
    return image if image.mode in ("L", "RGB") else image.convert("RGB")


def prepare_image_file(params: dict[str, Any]) -> dict[str, Any]:
    """The PreparedImage fields for one image file (``data`` base64-encoded)."""
    from PIL import Image, ImageOps

    max_dimension: int = params["max_dimension"]
    max_output: int = params["max_output_bytes"]
    image = _open(params["path"], params["max_pixels"])
    source = (image.format or "").lower()
    original = image.size
    if image.getexif().get(0x0112) in (5, 6, 7, 8):  # EXIF orientation turns the picture a quarter
        original = (original[1], original[0])
    notes: list[str] = []
    if getattr(image, "is_animated", False):
        notes.append("animated image: only the first frame is shown")
    try:
        image.seek(0)
        if source == "jpeg":
            # Let the JPEG decoder scale by 1/2..1/8 while decoding: far less memory and time.
            image.draft("RGB", _fit(original, max_dimension))
        image = ImageOps.exif_transpose(image) or image
        image.load()
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ExtractionError("extract_failed", f"The image data is broken or truncated ({exc}).") from exc
    png = _has_alpha(image) or image.mode in ("P", "1")
    fmt = "PNG" if png else "JPEG"
    if png and image.mode in ("P", "1") and max(image.size) > max_dimension:
        image = image.convert("RGBA" if _has_alpha(image) else "RGB")  # resampling needs true colour
    image = _normalise(image, png)
    base = image
    bound = max_dimension
    shown = (
        image.resize(_fit(image.size, bound), Image.Resampling.LANCZOS) if max(image.size) > bound else image
    )
    while True:
        for quality in _JPEG_QUALITIES if fmt == "JPEG" else (0,):
            data = _encode(shown, fmt, quality)
            if len(data) <= max_output:
                return {
                    "data": base64.b64encode(data).decode("ascii"),
                    "mime_type": f"image/{fmt.lower()}",
                    "format": fmt.lower(),
                    "source_format": source,
                    "width": shown.width,
                    "height": shown.height,
                    "original_width": original[0],
                    "original_height": original[1],
                    "downscaled": shown.size != original,
                    "notes": notes,
                }
        # Encoded size grows with the pixel count: aim straight at the cap, never shrink by less.
        bound = int(max(shown.size) * min(_SHRINK, 0.95 * (max_output / len(data)) ** 0.5))
        if bound < _MIN_SIDE:
            raise ExtractionError(
                "limit_exceeded",
                f"The image does not fit the output limit ({format_bytes(max_output)}) even at "
                f"{shown.width} x {shown.height} pixels. Fetch its bytes instead.",
                limit="max_output_bytes",
            )
        shown = base.resize(_fit(base.size, bound), Image.Resampling.LANCZOS)
