"""Image attachments prepared for a model (pure: no IMAP server, real child processes)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from mail_imap_mcp.content.documents import ExtractionError
from mail_imap_mcp.content.images import ImageLimits, PreparedImage, image_format, prepare_image
from tests.support.limits import default_image_limits
from tests.support.mail.documents import CORPUS, Document, images, png_of_zeros

LIMITS = default_image_limits()
pytestmark = pytest.mark.usefixtures("no_leftover_children")


def prepare(
    tmp_path: Path, data: bytes, content_type: str = "image/png", limits: ImageLimits = LIMITS
) -> PreparedImage:
    path = tmp_path / "image"
    path.write_bytes(data)
    return prepare_image(path, content_type, limits)


@pytest.mark.parametrize("item", images(), ids=lambda item: item.name)
def test_corpus_image_is_prepared_or_refused(tmp_path: Path, item: Document) -> None:
    data = item.data  # built on first use: not part of the timed span
    if item.expect_error:
        with pytest.raises(ExtractionError) as caught:
            prepare(tmp_path, data, item.content_type)
        assert caught.value.code == item.expect_error
        if item.expect_limit:
            assert caught.value.limit == item.expect_limit
        return
    result = prepare(tmp_path, data, item.content_type)
    assert result.format == item.expect_format
    assert result.mime_type == f"image/{item.expect_format}"
    assert result.downscaled is item.expect_downscaled
    assert len(result.data) <= LIMITS.max_output_bytes
    assert max(result.width, result.height) <= LIMITS.max_dimension
    decoded = Image.open(io.BytesIO(result.data))
    assert decoded.format == item.expect_format.upper()
    assert decoded.size == (result.width, result.height)
    source = Image.open(io.BytesIO(data))
    assert (result.original_width, result.original_height) == source.size
    assert result.source_format == source.format.lower()
    if result.downscaled:
        # The aspect ratio survives downscaling.
        assert abs(result.width / result.height - source.width / source.height) < 0.02


def test_the_pixel_bomb_is_refused_from_its_header(tmp_path: Path) -> None:
    bomb = CORPUS["png_pixel_bomb"].data
    with pytest.raises(ExtractionError) as caught:
        prepare(tmp_path, bomb)
    assert "100000 x 100000" in caught.value.message
    assert caught.value.limit == "max_pixels"  # refused from its header, not decoded up to the memory limit


def test_a_memory_hungry_image_ends_at_the_memory_limit(tmp_path: Path) -> None:
    # 7000 x 7000 RGBA under max_pixels needs ~196 MB decoded; the child may have 128 MiB.
    data = png_of_zeros(7000, 7000)
    assert len(data) < 300_000
    limits = default_image_limits(memory_bytes=128 << 20, max_pixels=60_000_000)
    with pytest.raises(ExtractionError) as caught:
        prepare(tmp_path, data, limits=limits)
    assert (caught.value.code, caught.value.limit) == ("limit_exceeded", "memory")
    assert "128 MB" in caught.value.message
    # With enough memory the same image is read and downscaled.
    result = prepare(tmp_path, data, limits=default_image_limits(max_pixels=60_000_000))
    assert (result.width, result.height, result.format) == (1568, 1568, "png")


def test_a_slow_image_is_stopped_at_the_wall_limit(tmp_path: Path) -> None:
    # Regression: the corpus builds its 1400x1400 noise PNG on first use, and that took 2-3 s on a
    # loaded machine inside the timed span (the test failed though the limit held). Built first now.
    noise = CORPUS["png_noise"].data
    with pytest.raises(ExtractionError) as caught:
        prepare(tmp_path, noise, limits=default_image_limits(timeout_s=0.2))
    # The wall limit ended it (the error says which), not the child's CPU time nor its memory.
    assert caught.value.limit == "extract_timeout_s" and "CPU time" not in caught.value.message


def test_an_image_that_cannot_fit_the_output_cap_is_refused(tmp_path: Path) -> None:
    limits = default_image_limits(max_output_bytes=16_384)
    with pytest.raises(ExtractionError) as caught:
        prepare(tmp_path, CORPUS["png_noise"].data, limits=limits)
    assert (caught.value.code, caught.value.limit) == ("limit_exceeded", "max_output_bytes")
    assert "output limit (16 KB)" in caught.value.message


def test_exif_orientation_is_applied_and_metadata_dropped(tmp_path: Path) -> None:
    photo = Image.new("RGB", (800, 600), "teal")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise when shown
    exif[0x010F] = "SecretCam"
    out = io.BytesIO()
    photo.save(out, "JPEG", exif=exif)
    result = prepare(tmp_path, out.getvalue(), "image/jpeg")
    assert (result.width, result.height) == (600, 800)
    assert (result.original_width, result.original_height) == (600, 800)
    assert not Image.open(io.BytesIO(result.data)).getexif()


def test_broken_image_data_fails_cleanly(tmp_path: Path) -> None:
    data = CORPUS["jpeg_photo"].data
    with pytest.raises(ExtractionError) as caught:
        prepare(tmp_path, data[:2000], "image/jpeg")
    assert caught.value.code == "extract_failed"


def test_an_image_over_max_attachment_bytes_is_not_read(tmp_path: Path) -> None:
    with pytest.raises(ExtractionError) as caught:
        prepare(tmp_path, CORPUS["jpeg_photo"].data, limits=default_image_limits(max_input_bytes=100_000))
    assert caught.value.limit == "max_attachment_bytes"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"\x89PNG\r\n\x1a\n....", "png"),
        (b"\xff\xd8\xff\xe0", "jpeg"),
        (b"GIF89a", "gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "webp"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", None),
        (b"<svg xmlns=", None),
        (b"BM", None),
    ],
)
def test_image_format_by_magic(head: bytes, expected: str | None) -> None:
    assert image_format(head) == expected
