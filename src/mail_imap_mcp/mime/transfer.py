"""Content-Transfer-Encodings undone (base64, quoted-printable, uuencode), whole or as a stream.

Tolerant of garbage and truncation: a body cut by a partial fetch still decodes as far as it goes.
The chunks of a partial fetch end anywhere: inside a base64 group, a quoted-printable escape or a
uuencoded line. :class:`StreamDecoder` keeps the unfinished tail for the next chunk, so its output is
exactly what :func:`decode_transfer` gives for the whole input, and only one chunk is in memory at a time.
"""

from __future__ import annotations

import binascii

__all__ = ["StreamDecoder", "decode_base64", "decode_qp", "decode_transfer", "encoding_name"]


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_DELETE = bytes(sorted(set(range(256)) - set(_B64_ALPHABET) - {ord("=")}))
_HEX = frozenset(b"0123456789abcdefABCDEF")


def decode_base64(raw: bytes) -> bytes:
    # Padding inside the data means concatenated chunks (seen from some mailers); each
    # chunk is decoded on its own, and a final partial group yields its complete bytes.
    out = bytearray()
    for chunk in raw.translate(None, _B64_DELETE).split(b"="):
        whole = len(chunk) - len(chunk) % 4
        try:
            out += binascii.a2b_base64(chunk[:whole])
            rest = chunk[whole:]
            if len(rest) >= 2:
                out += binascii.a2b_base64(rest + b"=" * (4 - len(rest)))
        except (binascii.Error, ValueError):
            continue
    return bytes(out)


def decode_qp(raw: bytes, *, header: bool = False) -> bytes:
    # A body cut by a partial fetch can end inside an escape ("=", "=C", "=\r").
    if raw.endswith(b"="):
        raw = raw[:-1]
    elif len(raw) >= 2 and raw[-2] == ord("=") and (raw[-1] in _HEX or raw[-1] == ord("\r")):
        raw = raw[:-2]
    try:
        return binascii.a2b_qp(raw, header=header)
    except (binascii.Error, ValueError):
        return raw


def _decode_uu(raw: bytes) -> bytes:
    out = bytearray()
    for line in raw.splitlines():
        if not line.strip() or line.startswith((b"begin ", b"end")):
            continue
        try:
            out += binascii.a2b_uu(line)
        except binascii.Error:
            # Buggy encoders pad lines with garbage; decode only the declared length.
            length = (((line[0] - 32) & 63) * 4 + 5) // 3
            try:
                out += binascii.a2b_uu(line[:length])
            except binascii.Error:
                continue
    return bytes(out)


def decode_transfer(raw: bytes, encoding: str) -> bytes:
    """Undo a Content-Transfer-Encoding, tolerating garbage and truncation.

    base64 ignores non-alphabet bytes and missing padding and decodes as much as is
    present; quoted-printable drops a dangling escape at the end; uuencode is decoded
    line by line; 7bit/8bit/binary and unknown encodings are returned unchanged.
    """
    if not raw:
        return b""
    data = bytes(raw)
    enc = (encoding or "").strip().strip("\"'").lower()
    try:
        if enc in ("base64", "base-64", "b64"):
            return decode_base64(data)
        if enc in ("quoted-printable", "quoted_printable", "qp"):
            return decode_qp(data)
        if enc in ("x-uuencode", "uuencode", "x-uue", "uue"):
            return _decode_uu(data)
    except Exception:
        return data
    return data


_BASE64 = frozenset({"base64", "base-64", "b64"})
_QUOTED_PRINTABLE = frozenset({"quoted-printable", "quoted_printable", "qp"})
_UUENCODE = frozenset({"x-uuencode", "uuencode", "x-uue", "uue"})
_B64_KEEP = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_B64_DELETE = bytes(sorted(set(range(256)) - set(_B64_KEEP)))
# A line longer than this without a line break is decoded without waiting for its end.
_MAX_CARRY = 1024 * 1024


def encoding_name(encoding: str | None) -> str:
    """The normalised transfer encoding: ``base64``, ``quoted-printable``, ``x-uuencode`` or ``identity``."""
    enc = (encoding or "").strip().strip("\"'").lower()
    if enc in _BASE64:
        return "base64"
    if enc in _QUOTED_PRINTABLE:
        return "quoted-printable"
    if enc in _UUENCODE:
        return "x-uuencode"
    return "identity"


class StreamDecoder:
    """Incremental transfer decoding (7bit, 8bit, binary and unknown encodings pass through)."""

    def __init__(self, encoding: str | None) -> None:
        self.encoding = encoding_name(encoding)
        self._carry = b""

    def feed(self, chunk: bytes) -> bytes:
        """Decoded bytes of ``chunk``; an unfinished group or line waits for the next chunk."""
        if self.encoding == "identity":
            return bytes(chunk)
        if self.encoding == "base64":
            return self._feed_base64(bytes(chunk))
        data = self._carry + bytes(chunk)
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) > _MAX_CARRY:
            cut = len(data) - 2  # keep a possible "=X" escape for the next chunk
        self._carry = data[cut:]
        return self._decode(data[:cut])

    def finish(self) -> bytes:
        """The decoded rest, at the end of the input."""
        rest, self._carry = self._carry, b""
        if self.encoding == "base64":
            return decode_transfer(rest, "base64")
        return self._decode(rest) if self.encoding != "identity" else rest

    def _feed_base64(self, chunk: bytes) -> bytes:
        data = self._carry + chunk.translate(None, _B64_DELETE)
        # Everything up to the last padding is complete; after it, whole 4-character groups are.
        pad = data.rfind(b"=") + 1
        cut = pad + (len(data) - pad) // 4 * 4
        self._carry = data[cut:]
        return decode_transfer(data[:cut], "base64")

    def _decode(self, data: bytes) -> bytes:
        return decode_transfer(data, self.encoding)
