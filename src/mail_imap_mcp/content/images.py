"""Image attachments prepared for a multimodal model: decoded, downscaled, re-encoded, bounded.

Decoding runs only in the sandboxed child (:mod:`.sandbox`), with Pillow. A pixel bomb
(huge declared dimensions in a small file) is refused from its header before any pixel is
decoded; everything else is downscaled to ``max_dimension`` on its longest side and
re-encoded (PNG for images with transparency or a palette, JPEG otherwise; metadata such
as EXIF location is not carried over) until it fits ``max_output_bytes``.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ExtractionError, format_bytes
from .sandbox import SandboxLimits, check_input, run_in_sandbox

__all__ = ["ImageLimits", "PreparedImage", "image_format", "prepare_image"]

_MiB = 1 << 20
_MAGIC = {b"\x89PNG\r\n\x1a\n": "png", b"\xff\xd8\xff": "jpeg", b"GIF87a": "gif", b"GIF89a": "gif"}
_OUTPUT_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}


class ImageLimits(BaseModel):
    """Caps of one image preparation, all from the server's settings (``ServerSettings`` in config/, the
    one place their defaults are defined)."""

    model_config = ConfigDict(frozen=True)

    max_input_bytes: int = Field(ge=1, description="Largest attachment read (max_attachment_bytes).")
    max_pixels: int = Field(
        ge=1, description="Most pixels (width x height) an image may declare; checked before decoding."
    )
    max_dimension: int = Field(ge=64, description="Longest side of the image returned.")
    max_output_bytes: int = Field(ge=16_384, description="Largest encoded image returned.")
    timeout_s: float = Field(gt=0, description="Wall-clock limit (extract_timeout_s).")
    cpu_s: float = Field(gt=0, description="CPU-time limit of the child (extract_timeout_s).")
    memory_bytes: int = Field(
        ge=64 * _MiB, description="Address-space limit (RLIMIT_AS) of the child (extract_memory_mb)."
    )


class PreparedImage(BaseModel):
    """An image ready to be sent as an MCP image content block."""

    data: bytes = Field(repr=False)
    mime_type: str
    format: str = Field(description="Format of data: png or jpeg.")
    source_format: str = Field(description="Format of the attachment: png, jpeg, gif or webp.")
    width: int
    height: int
    original_width: int
    original_height: int
    downscaled: bool
    notes: list[str] = Field(default_factory=list)


def image_format(head: bytes) -> str | None:
    """png, jpeg, gif or webp from the first bytes of a file; None for anything else."""
    for magic, fmt in _MAGIC.items():
        if head.startswith(magic):
            return fmt
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def prepare_image(path: Path, content_type: str, limits: ImageLimits) -> PreparedImage:
    """Decode, downscale and re-encode the image in ``path`` within ``limits``.

    The file's own bytes decide the format (``content_type`` is only named in messages).
    Raises :class:`ExtractionError`: ``unsupported_format`` (not PNG/JPEG/GIF/WebP),
    ``limit_exceeded`` (``max_attachment_bytes``, ``max_pixels``, ``max_output_bytes``,
    ``extract_timeout_s``, ``memory``) or ``extract_failed`` (broken image data).
    """
    check_input(path, limits.max_input_bytes)
    with path.open("rb") as stream:
        head = stream.read(16)
    if image_format(head) is None:
        declared = content_type.split(";", 1)[0].strip() or "The attachment"
        raise ExtractionError(
            "unsupported_format",
            f"{declared} is not a PNG, JPEG, GIF or WebP image (by its content); fetch its bytes instead.",
        )
    params = {
        "path": str(path),
        "max_pixels": limits.max_pixels,
        "max_dimension": limits.max_dimension,
        "max_output_bytes": limits.max_output_bytes,
    }
    result = run_in_sandbox(
        "image", params, SandboxLimits.of(limits, 2 * limits.max_output_bytes + 64 * 1024)
    )
    return _validated(result, limits)


def _validated(result: dict[str, object], limits: ImageLimits) -> PreparedImage:
    """The child's answer checked again here: size, dimensions and the output's magic bytes."""
    try:
        encoded = result.get("data")
        data = base64.b64decode(encoded if isinstance(encoded, str) else "", validate=True)
        image = PreparedImage.model_validate({**result, "data": data})
    except (ValidationError, binascii.Error, ValueError) as exc:
        raise ExtractionError("extract_failed", "The image process returned a malformed answer.") from exc
    magic = _OUTPUT_MAGIC.get(image.mime_type)
    if (
        magic is None
        or not image.data.startswith(magic)
        or len(image.data) > limits.max_output_bytes
        or max(image.width, image.height) > limits.max_dimension
    ):
        raise ExtractionError(
            "extract_failed",
            f"The image process returned an image outside the limits ({format_bytes(len(image.data))}, "
            f"{image.width} x {image.height}).",
        )
    return image
