"""Character sets: MIME charset labels to Python codecs, and lenient decoding.

Shared by message bodies and headers (mime/) and text attachments (documents.py); stdlib only. It stays in
content/ because mime/ builds on content/ (HTML to text, quotes) and text attachments need it too.
"""

from __future__ import annotations

import codecs

__all__ = ["codec_for", "decode_bytes"]

# Labels seen in the wild that Python does not know, and labels that are better served
# by a superset codec (what mail clients and browsers actually do).
_CHARSET_ALIASES = {
    "utf8": "utf-8",
    "unicode-1-1-utf-8": "utf-8",
    "unicode-1-1-utf-7": "utf-7",
    "x-utf-7": "utf-7",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "iso-ir-100": "cp1252",
    "8859-1": "cp1252",
    "cp819": "cp1252",
    "x-ansi": "cp1252",
    "ansi": "cp1252",
    "latin-2": "iso-8859-2",
    "latin2": "iso-8859-2",
    "iso-8859-6-i": "iso-8859-6",
    "iso-8859-6-e": "iso-8859-6",
    "iso-8859-8-i": "iso-8859-8",
    "iso-8859-8-e": "iso-8859-8",
    "iso-8859-9": "cp1254",
    "iso-8859-11": "cp874",
    "tis-620": "cp874",
    "windows-874": "cp874",
    "x-windows-874": "cp874",
    "gb2312": "gb18030",
    "gb_2312": "gb18030",
    "gb_2312-80": "gb18030",
    "csgb2312": "gb18030",
    "euc-cn": "gb18030",
    "x-euc-cn": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "cp936": "gb18030",
    "chinese": "gb18030",
    "hz-gb-2312": "hz",
    "big5": "cp950",
    "x-big5": "cp950",
    "ks_c_5601-1987": "cp949",
    "ks_c_5601-1989": "cp949",
    "ks_c_5601": "cp949",
    "ksc5601": "cp949",
    "ksc_5601": "cp949",
    "korean": "cp949",
    "euc-kr": "cp949",
    "x-euc-kr": "cp949",
    "windows-949": "cp949",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "csshiftjis": "cp932",
    "x-euc-jp": "euc-jp",
    "x-mac-roman": "mac-roman",
    "macintosh": "mac-roman",
    "mac": "mac-roman",
    "x-mac-cyrillic": "mac-cyrillic",
    "x-mac-ukrainian": "mac-cyrillic",
    "x-mac-greek": "mac-greek",
    "x-mac-turkish": "mac-turkish",
    "x-mac-ce": "mac-latin2",
    "x-cp1250": "cp1250",
    "x-cp1251": "cp1251",
    "x-cp1252": "cp1252",
}
# Labels that carry no information: decode as UTF-8 (with replacement).
_UNKNOWN_CHARSETS = frozenset(
    {"x-unknown", "unknown", "unknown-8bit", "x-user-defined", "default", "charset", "none", "binary"}
)
# "Guess" labels: mail declared ASCII (or nothing) but often carries UTF-8 or cp1252.
_GUESS_CHARSETS = frozenset({"us-ascii", "ascii", "us_ascii", "ansi_x3.4-1968", "iso-646-us", "7bit", "8bit"})
# Text codecs that are not character sets (or always fail); never used for mail data.
_BAD_CODECS = frozenset(
    {"undefined", "idna", "punycode", "unicode-escape", "raw-unicode-escape", "charmap", "mbcs", "oem"}
)
_CODEC_CACHE: dict[str, str | None] = {}


def codec_for(charset: str | None) -> str | None:
    """Python codec name for a MIME charset label, or None for "guess" (ASCII/absent)."""
    if not charset:
        return None
    key = charset.strip().strip("\"'").strip().lower()
    cached = _CODEC_CACHE.get(key, "")
    if cached != "":
        return cached
    # Labels like "utf-8; format=flowed" or "utf-8*en" come from sloppy parameter parsing.
    words = key.split(";")[0].split("*")[0].split()
    label = words[0] if words else ""
    result: str | None
    if not label or label in _GUESS_CHARSETS:
        result = None
    elif label in _UNKNOWN_CHARSETS:
        result = "utf-8"
    else:
        name = _CHARSET_ALIASES.get(label, label)
        try:
            info = codecs.lookup(name)
        except (LookupError, ValueError):
            info = None
        if info is None or info.name in _BAD_CODECS or not getattr(info, "_is_text_encoding", True):
            result = "utf-8"
        else:
            result = info.name
    if len(_CODEC_CACHE) < 1024:
        _CODEC_CACHE[key] = result
    return result


def decode_bytes(data: bytes, charset: str | None, *, final: bool = True) -> str:
    """Decode with the charset (errors replaced); ``final=False`` drops a cut-off trailing char."""
    try:
        codec = codec_for(charset)
        if codec is None:
            try:
                return codecs.getincrementaldecoder("utf-8")("strict").decode(data, final)
            except UnicodeDecodeError:
                codec = "cp1252"
        return codecs.getincrementaldecoder(codec)("replace").decode(data, final)
    except Exception:
        # Some CJK/stateful codecs can still raise on pathological input.
        return data.decode("utf-8", "replace")
