"""Content-Transfer-Encodings undone as a stream: bytes go in chunk by chunk, decoded bytes come out.

The chunks of a partial fetch end anywhere: inside a base64 group, a quoted-printable escape or a
uuencoded line. :class:`StreamDecoder` keeps the unfinished tail for the next chunk, so the output is
exactly what :func:`mail_imap_mcp.imap.mime.decode_transfer` gives for the whole input, and only
one chunk is in memory at a time. Pure; no network.
"""

from __future__ import annotations

from mail_imap_mcp.imap import mime

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
            return mime.decode_transfer(rest, "base64")
        return self._decode(rest) if self.encoding != "identity" else rest

    def _feed_base64(self, chunk: bytes) -> bytes:
        data = self._carry + chunk.translate(None, _B64_DELETE)
        # Everything up to the last padding is complete; after it, whole 4-character groups are.
        pad = data.rfind(b"=") + 1
        cut = pad + (len(data) - pad) // 4 * 4
        self._carry = data[cut:]
        return mime.decode_transfer(data[:cut], "base64")

    def _decode(self, data: bytes) -> bytes:
        return mime.decode_transfer(data, self.encoding)
