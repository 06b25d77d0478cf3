"""The zeros the hostile documents are made of (tests/support/mail/documents.py): deflate data that inflates
to exactly the zeros asked for, and their CRC-32 as a ZIP entry declares it, now computed apart."""

from __future__ import annotations

import zlib

import pytest

from tests.support.mail.documents import MiB, crc32_of_zeros, deflated_zeros, zlib_zeros


@pytest.mark.parametrize("size", [0, 1, MiB - 1, MiB, 2 * MiB + 7])
def test_the_zeros_inflate_to_their_size_and_their_crc_is_zlibs(size: int) -> None:
    assert zlib.decompress(deflated_zeros(size), -15) == bytes(size)
    assert zlib.decompress(zlib_zeros(size)) == bytes(size)  # its Adler-32 checked by zlib
    assert crc32_of_zeros(size) == zlib.crc32(bytes(size))
