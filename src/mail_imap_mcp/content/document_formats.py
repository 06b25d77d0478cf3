"""Which document an attachment is: its format from the declared type, the file name's extension and the
first bytes (:func:`detect_format`), or from the declared type and name alone before anything is fetched
(:func:`declared_format`); None for what is not read as a document here."""

from __future__ import annotations

_ZIP_MAGIC = b"PK\x03\x04"
_ODF_TYPES = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
}
_OOXML_TYPES = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.ms-word.document.macroenabled.12": "docx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": "pptx",
}
_TYPE_FORMATS = {
    "application/pdf": "pdf",
    "application/x-pdf": "pdf",
    "text/calendar": "calendar",
    "application/ics": "calendar",
    "text/x-vcalendar": "calendar",
    "text/csv": "csv",
    "application/csv": "csv",
    "text/tab-separated-values": "csv",
    "application/json": "text",
    "application/xml": "text",
    "application/x-yaml": "text",
    "application/yaml": "text",
    **_ODF_TYPES,
    **_OOXML_TYPES,
}
_EXTENSION_FORMATS = {
    "pdf": "pdf",
    "docx": "docx",
    "docm": "docx",
    "xlsx": "xlsx",
    "xlsm": "xlsx",
    "pptx": "pptx",
    "pptm": "pptx",
    "odt": "odt",
    "ods": "ods",
    "odp": "odp",
    "ics": "calendar",
    "ical": "calendar",
    "ifb": "calendar",
    "vcs": "calendar",
    "csv": "csv",
    "tsv": "csv",
    "txt": "text",
    "text": "text",
    "md": "text",
    "log": "text",
    "json": "text",
    "xml": "text",
    "yaml": "text",
    "yml": "text",
}
# Handled by the caller, not here: HTML goes through the body HTML renderer, attached
# messages through the message reader.
_NOT_HERE = frozenset({"text/html", "application/xhtml+xml", "message/rfc822", "message/global"})
# Magic numbers of formats that are definitely not text documents.
_BINARY_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"RIFF",
    b"\x1f\x8b",
    b"7z\xbc\xaf",
    b"Rar!",
    b"\xd0\xcf\x11\xe0",  # legacy OLE2 (.doc/.xls/.msg): not read as text
    b"\x7fELF",
    b"MZ",
)


def media_type_of(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _extension(filename: str | None) -> str:
    if not filename or "." not in filename:
        return ""
    return filename.rsplit(".", 1)[-1].strip().lower()


def _zip_format(media_type: str, extension: str, head: bytes) -> str | None:
    # An ODF package starts with an uncompressed "mimetype" member naming its type.
    if head[30:38] == b"mimetype":
        declared = head[38:120].split(b"PK", 1)[0].decode("ascii", "replace")
        for odf_type, fmt in _ODF_TYPES.items():
            if declared.startswith(odf_type) and not declared.startswith(odf_type + "-"):
                return fmt
    for candidate in (_TYPE_FORMATS.get(media_type), _EXTENSION_FORMATS.get(extension)):
        if candidate in {"docx", "xlsx", "pptx", "odt", "ods", "odp"}:
            return candidate
    return None


def detect_format(content_type: str, filename: str | None, head: bytes) -> str | None:
    """The document format to read as text, or None when this is not such a document.

    Magic bytes win over the declared type, and the type over the file name extension
    (a PDF sent as ``application/octet-stream`` is still a PDF; a PNG named ``.txt`` is
    not text). HTML and attached messages return None: the caller renders those itself.
    """
    media_type = media_type_of(content_type or "")
    extension = _extension(filename)
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith(_ZIP_MAGIC):
        return _zip_format(media_type, extension, head)
    if start[:15].upper() == b"BEGIN:VCALENDAR":
        return "calendar"
    if head.startswith(_BINARY_MAGIC) or media_type in _NOT_HERE:
        return None
    by_type = _TYPE_FORMATS.get(media_type)
    if by_type is not None:
        return by_type if by_type in ("pdf", "calendar", "csv", "text") else None
    if media_type.startswith("text/"):
        return "text"
    by_extension = _EXTENSION_FORMATS.get(extension)
    if by_extension in ("csv", "text", "calendar") and b"\x00" in head:
        return None
    if by_extension in ("pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp"):
        return None  # the magic bytes above did not match: not really that format
    return by_extension


def declared_format(content_type: str, filename: str | None) -> str | None:
    """The document format a part claims by its type or file name, before its bytes are read (None: not
    a document read as text). :func:`detect_format` decides on the bytes."""
    media_type = media_type_of(content_type or "")
    if media_type in _NOT_HERE or media_type.startswith(("image/", "audio/", "video/")):
        return None
    by_type = _TYPE_FORMATS.get(media_type)
    if by_type is not None:
        return by_type
    if media_type.startswith("text/"):
        return "text"
    return _EXTENSION_FORMATS.get(_extension(filename))


# --------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------
