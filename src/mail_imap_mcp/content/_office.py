"""Office Open XML (DOCX/XLSX/PPTX) and OpenDocument (ODT/ODS/ODP) text (sandboxed child only).

Archives are read with :mod:`zipfile` under caps checked before inflating (member count,
declared sizes, compression ratio) and while inflating (bytes actually produced). XML is
parsed with ``defusedxml`` with DTDs forbidden, so entity expansion and external entities
(XXE) are refused, and streamed with ``iterparse`` so that reading stops as soon as the
requested window is full.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import IO, Any
from xml.etree.ElementTree import Element

from .errors import ExtractionError, format_bytes

_RATIO_FLOOR = 1 << 20  # members smaller than this may compress arbitrarily well
_MAX_COLUMNS = 1024
_MAX_REPEAT = 256
_MAX_SHARED_STRINGS = 1_000_000

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
SS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"


# --------------------------------------------------------------------------------------
# A zip archive under caps
# --------------------------------------------------------------------------------------


class _CountingReader:
    """A member stream that fails once it produced more than ``allowed`` bytes."""

    def __init__(self, stream: IO[bytes], allowed: int, archive: SafeArchive) -> None:
        self.stream = stream
        self.allowed = allowed
        self.archive = archive

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(64 * 1024 if size is None or size < 0 else size)
        self.allowed -= len(data)
        self.archive.account(len(data))
        if self.allowed < 0:
            raise self.archive.bomb("a member inflates to more than its declared size")
        return data


class SafeArchive:
    """A zip file whose members are read with size, count and ratio caps."""

    def __init__(self, path: str, params: dict[str, Any]) -> None:
        self.max_unpacked: int = params["max_unpacked_bytes"]
        self.max_ratio: int = params["max_compression_ratio"]
        max_members: int = params["max_archive_members"]
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ExtractionError(
                "extract_failed", f"The document is not a valid zip archive ({exc})."
            ) from exc
        infos = self.zip.infolist()
        if len(infos) > max_members:
            raise ExtractionError(
                "limit_exceeded",
                f"The archive has {len(infos)} entries, more than the limit of {max_members}.",
                limit="archive_members",
            )
        self.members = {info.filename: info for info in infos}
        self.unpacked = 0

    def bomb(self, reason: str, limit: str = "archive_unpacked_bytes") -> ExtractionError:
        cap = (
            f"at most {self.max_ratio}:1 for parts over 1 MB"
            if limit == "compression_ratio"
            else f"{format_bytes(self.max_unpacked)} unpacked"
        )
        return ExtractionError(
            "limit_exceeded",
            f"The document looks like a zip bomb ({reason}); the extraction limit is {cap}. "
            "Fetch its bytes instead.",
            limit=limit,
        )

    def account(self, count: int) -> None:
        self.unpacked += count
        if self.unpacked > self.max_unpacked:
            raise self.bomb("more data than the unpacked-size limit")

    def has(self, name: str) -> bool:
        return name in self.members

    def open(self, name: str) -> _CountingReader:
        info = self.members.get(name)
        if info is None:
            raise ExtractionError("extract_failed", f"The document has no {name} part.")
        if info.file_size > self.max_unpacked - self.unpacked:
            raise self.bomb(f"{name} declares {format_bytes(info.file_size)}")
        if info.file_size > _RATIO_FLOOR and info.file_size > self.max_ratio * max(info.compress_size, 1):
            ratio = info.file_size // max(info.compress_size, 1)
            raise self.bomb(f"{name} is compressed {ratio}:1", "compression_ratio")
        try:
            stream = self.zip.open(info)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
            raise ExtractionError(
                "extract_failed", f"The document part {name} cannot be read ({exc})."
            ) from exc
        return _CountingReader(stream, info.file_size, self)

    def close(self) -> None:
        self.zip.close()


def _iterparse(
    archive: SafeArchive, name: str, events: tuple[str, ...] = ("end",)
) -> Iterator[tuple[str, Element]]:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import iterparse

    try:
        yield from iterparse(archive.open(name), events=events, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise ExtractionError(
            "extract_failed",
            f"The document part {name} declares a DTD or XML entities ({type(exc).__name__}); they are refused "
            "(entity expansion and external entities are a known attack).",
        ) from exc
    except (SyntaxError, zipfile.BadZipFile, EOFError) as exc:  # ParseError is a SyntaxError
        raise ExtractionError(
            "extract_failed", f"The document part {name} is not well-formed ({exc})."
        ) from exc


class _Tree:
    """Streams iterparse events, keeping the open elements so that finished ones can be
    dropped from their parent (memory stays flat however long the document is)."""

    def __init__(self, events: Iterator[tuple[str, Element]]) -> None:
        self.events = events
        self.open: list[Element] = []

    def __iter__(self) -> Iterator[tuple[str, Element]]:
        for event, element in self.events:
            if event == "start":
                self.open.append(element)
            elif self.open:
                self.open.pop()
            yield event, element

    def drop(self, element: Element) -> None:
        """Forget a finished element (call on its end event)."""
        element.clear()
        if self.open:
            with contextlib.suppress(ValueError):
                self.open[-1].remove(element)


def _relationship_list(archive: SafeArchive, part: str) -> list[tuple[str, str, str]]:
    """(id, type, archive path) of each internal relationship of ``part`` (e.g. word/document.xml)."""
    folder, base = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    if not archive.has(rels):
        return []
    found = []
    for _, element in _iterparse(archive, rels):
        if element.tag == PKG_REL + "Relationship" and element.get("TargetMode") != "External":
            target = element.get("Target") or ""
            path = (
                target.lstrip("/")
                if target.startswith("/")
                else posixpath.normpath(posixpath.join(folder, target))
            )
            found.append((element.get("Id") or "", element.get("Type") or "", path))
    return found


def _relationships(archive: SafeArchive, part: str) -> dict[str, str]:
    """Relationship id -> archive path for ``part``."""
    return {rid: path for rid, _, path in _relationship_list(archive, part)}


def _related(archive: SafeArchive, part: str, kind: str) -> list[str]:
    """The parts ``part`` relates to with a relationship type ending in ``/kind``, in file order."""
    paths = [path for _, type_, path in _relationship_list(archive, part) if type_.endswith("/" + kind)]
    return [path for path in dict.fromkeys(paths) if archive.has(path)]


def _titled(title: str, lines: Iterator[str]) -> Iterator[str]:
    """``lines`` under a ``[title]`` line, or nothing when they hold no text (leading blank lines dropped)."""
    started = False
    for line in lines:
        if not started:
            if not line.strip():
                continue
            yield f"\n[{title}]\n"
            started = True
        yield line


# --------------------------------------------------------------------------------------
# Paragraphs and tables, shared by Word, PowerPoint and OpenDocument
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """Which elements are paragraphs, tables, rows and cells in one XML vocabulary."""

    paragraphs: frozenset[str]
    row: str
    cell: str
    paragraph_text: Callable[[Element], str]
    cell_repeat: Callable[[Element], int] = lambda element: 1
    row_repeat: Callable[[Element], int] = lambda element: 1
    # Start tag -> header line function (e.g. a sheet or slide name).
    headers: dict[str, Callable[[Element], str]] = field(default_factory=dict)
    # Elements whose whole subtree is not shown text (checked on their start tag).
    skipped: Callable[[Element], bool] = lambda element: False


def _runs_text(
    paragraph: Element,
    text_tag: str,
    tab_tag: str,
    break_tags: frozenset[str],
    hidden: Callable[[Element], bool],
) -> str:
    pieces: list[str] = []

    def visit(element: Element) -> None:
        for child in element:
            tag = child.tag
            if tag == text_tag:
                pieces.append(child.text or "")
            elif tag == tab_tag:
                pieces.append("\t")
            elif tag in break_tags:
                pieces.append("\n")
            elif not hidden(child):
                visit(child)

    visit(paragraph)
    return "".join(pieces)


def _flow(tree: _Tree, layout: _Layout) -> Iterator[str]:
    """Paragraphs as lines and table rows as tab-separated lines, in document order."""
    rows: list[list[str]] = []  # the cells of each open row
    cells: list[list[str]] = []  # the paragraphs of each open cell
    skipping: Element | None = None
    for event, element in tree:
        tag = element.tag
        if skipping is not None:
            if event == "end" and element is skipping:
                skipping = None
                tree.drop(element)
            continue
        if event == "start":
            if tag in layout.headers:
                yield layout.headers[tag](element)
            if layout.skipped(element):
                skipping = element
            elif tag == layout.row:
                rows.append([])
            elif tag == layout.cell:
                cells.append([])
            continue
        if tag in layout.paragraphs:
            text = layout.paragraph_text(element)
            tree.drop(element)
            if cells:
                cells[-1].append(text)
            else:
                yield text + "\n"
        elif tag == layout.cell and cells:
            parts = cells.pop()
            text = " ".join(part.strip() for part in parts if part.strip())
            text = text.replace("\t", " ").replace("\n", " ")
            if rows:
                repeat = min(layout.cell_repeat(element), _MAX_REPEAT if text else _MAX_COLUMNS)
                rows[-1].extend([text] * repeat)
            tree.drop(element)
        elif tag == layout.row and rows:
            row = rows.pop()
            while row and not row[-1]:
                row.pop()
            line = "\t".join(row[:_MAX_COLUMNS])
            if cells:  # a table nested in a cell
                cells[-1].append(line)
            elif line:
                for _ in range(min(layout.row_repeat(element), _MAX_REPEAT)):
                    yield line + "\n"  # one at a time: the window may be full after the first
            tree.drop(element)


# --------------------------------------------------------------------------------------
# Word, PowerPoint, Excel
# --------------------------------------------------------------------------------------


def _word_hidden(element: Element) -> bool:
    if element.tag != W + "r":
        return False
    properties = element.find(W + "rPr")
    if properties is None:
        return False
    vanish = properties.find(W + "vanish")
    return vanish is not None and vanish.get(W + "val", "true") not in ("0", "false", "off")


# Property subtrees (tab stop lists hold <w:tab>), deleted text and field codes are not text.
_SKIPPED_WORD = frozenset({W + "pPr", W + "rPr", W + "delText", W + "instrText"})
_SKIPPED_SLIDE = frozenset({A + "pPr", A + "rPr", A + "endParaRPr"})

_WORD = _Layout(
    paragraphs=frozenset({W + "p"}),
    row=W + "tr",
    cell=W + "tc",
    # mc:Fallback repeats an mc:Choice (e.g. a text box as VML): read once.
    skipped=lambda element: element.tag == MC + "Fallback",
    paragraph_text=lambda p: _runs_text(
        p,
        W + "t",
        W + "tab",
        frozenset({W + "br", W + "cr"}),
        lambda e: e.tag in _SKIPPED_WORD or _word_hidden(e),
    ),
)


def _hidden_slide(element: Element) -> bool:
    return element.tag == P + "sld" and element.get("show") in ("0", "false")


_SLIDE = _Layout(
    paragraphs=frozenset({A + "p"}),
    row=A + "tr",
    cell=A + "tc",
    headers={P + "sld": lambda element: "(a hidden slide: not shown)\n" if _hidden_slide(element) else ""},
    skipped=lambda element: element.tag == MC + "Fallback" or _hidden_slide(element),
    paragraph_text=lambda p: _runs_text(
        p, A + "t", "", frozenset({A + "br"}), lambda e: e.tag in _SKIPPED_SLIDE
    ),
)


# Parts read after the body, in this order, each under its own heading.
_WORD_EXTRA_PARTS = (
    ("footnotes", "footnotes"),
    ("endnotes", "endnotes"),
    ("comments", "comments"),
    ("header", "header"),
    ("footer", "footer"),
)


def _docx(archive: SafeArchive, notes: list[str]) -> Iterator[str]:
    part = _main_part(archive, "word/document.xml")
    yield from _flow(_Tree(_iterparse(archive, part, ("start", "end"))), _WORD)
    for kind, title in _WORD_EXTRA_PARTS:
        for path in _related(archive, part, kind):
            yield from _titled(title, _flow(_Tree(_iterparse(archive, path, ("start", "end"))), _WORD))


def _main_part(archive: SafeArchive, default: str) -> str:
    """The officeDocument target named by _rels/.rels (falls back to the usual path)."""
    for target in _relationships(archive, "").values():
        if target.endswith(".xml") and archive.has(target) and target.split("/")[0] == default.split("/")[0]:
            return target
    return default


def _pptx(archive: SafeArchive, notes: list[str], meta: dict[str, Any]) -> Iterator[str]:
    presentation = _main_part(archive, "ppt/presentation.xml")
    targets = _relationships(archive, presentation)
    order = [
        targets.get(element.get(R + "id") or "", "")
        for _, element in _iterparse(archive, presentation)
        if element.tag == P + "sldId"
    ]
    meta["pages"] = len(order)
    for number, slide in enumerate(order, 1):
        yield f"[slide {number}]\n"
        if not archive.has(slide):
            notes.append(f"slide {number} is missing from the file")
            continue
        yield from _flow(_Tree(_iterparse(archive, slide, ("start", "end"))), _SLIDE)
        for path in _related(archive, slide, "notesSlide")[:1]:
            yield from _titled("notes", _speaker_notes(archive, path))
        yield "\n"


# Placeholders of a notes page that repeat the slide (its picture, number, header, footer, date).
_NOTES_PLACEHOLDERS_SKIPPED = frozenset({"sldImg", "sldNum", "hdr", "ftr", "dt"})


def _speaker_notes(archive: SafeArchive, path: str) -> Iterator[str]:
    tree = _Tree(_iterparse(archive, path, ("start", "end")))
    for event, element in tree:
        if event != "end" or element.tag != P + "sp":
            continue
        placeholder = element.find(f".//{P}ph")
        if placeholder is None or placeholder.get("type") not in _NOTES_PLACEHOLDERS_SKIPPED:
            for paragraph in element.iter(A + "p"):
                yield _SLIDE.paragraph_text(paragraph) + "\n"
        tree.drop(element)


_CELL_REF = re.compile(r"([A-Z]{1,3})(\d*)")


def _column(reference: str | None) -> int | None:
    match = _CELL_REF.match(reference or "")
    if not match:
        return None
    number = 0
    for letter in match.group(1):
        number = number * 26 + ord(letter) - 64
    return number - 1


def _shared_strings(archive: SafeArchive, workbook: str, targets: dict[str, str]) -> list[str]:
    name = next(
        (path for path in targets.values() if path.endswith("sharedStrings.xml")), "xl/sharedStrings.xml"
    )
    if not archive.has(name):
        return []
    strings: list[str] = []
    tree = _Tree(_iterparse(archive, name, ("start", "end")))
    for event, element in tree:
        if event == "end" and element.tag == SS + "si":
            strings.append(_string_item(element))
            tree.drop(element)
            if len(strings) > _MAX_SHARED_STRINGS:
                raise ExtractionError(
                    "limit_exceeded",
                    f"The workbook has more than {_MAX_SHARED_STRINGS} shared strings.",
                    limit="shared_strings",
                )
    return strings


def _string_item(item: Element) -> str:
    """A shared string or inline string: its <t>, or its rich-text runs' <t> (phonetic runs skipped)."""
    pieces = []
    for child in item:
        if child.tag == SS + "t":
            pieces.append(child.text or "")
        elif child.tag == SS + "r":
            pieces.extend(t.text or "" for t in child.iter(SS + "t"))
    return "".join(pieces)


# Built-in number formats that show a date and/or time (ECMA-376 18.8.30).
_DATE_FORMAT_IDS = frozenset({*range(14, 23), 45, 46, 47})
_QUOTED_OR_BRACKETED = re.compile(r'"[^"]*"|\[[^\]]*\]|\\.')


@dataclass
class _Styles:
    """Which cell styles show dates (serial numbers in the file) and which date system is used."""

    date_styles: dict[int, str] = field(default_factory=dict)  # xf index -> "date" | "datetime" | "time"
    epoch: datetime = datetime(1899, 12, 30)


def _date_kind(code: str) -> str | None:
    code = _QUOTED_OR_BRACKETED.sub("", code).lower()
    has_date = any(ch in code for ch in "dy") or ("m" in code and "h" not in code and "s" not in code)
    has_time = any(ch in code for ch in "hs")
    if has_date and has_time:
        return "datetime"
    return "date" if has_date else ("time" if has_time else None)


def _number(value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        return -1


def _builtin_kind(format_id: int) -> str | None:
    if format_id in (18, 19, 20, 21, 45, 46, 47):
        return "time"
    if format_id == 22:
        return "datetime"
    return "date" if format_id in _DATE_FORMAT_IDS else None


def _styles(archive: SafeArchive, targets: dict[str, str], workbook_root: Element | None) -> _Styles:
    styles = _Styles()
    if workbook_root is not None and workbook_root.get("date1904") in ("1", "true"):
        styles.epoch = datetime(1904, 1, 1)
    name = next((path for path in targets.values() if path.endswith("styles.xml")), "xl/styles.xml")
    if not archive.has(name):
        return styles
    custom: dict[int, str | None] = {}
    index = 0
    in_cell_xfs = False
    for event, element in _iterparse(archive, name, ("start", "end")):
        if element.tag == SS + "cellXfs":
            in_cell_xfs = event == "start"
        elif event == "end" and element.tag == SS + "numFmt":
            custom[_number(element.get("numFmtId"))] = _date_kind(element.get("formatCode") or "")
        elif event == "end" and element.tag == SS + "xf" and in_cell_xfs:
            format_id = _number(element.get("numFmtId"))
            kind = custom[format_id] if format_id in custom else _builtin_kind(format_id)
            if kind:
                styles.date_styles[index] = kind
            index += 1
    return styles


def _as_date(text: str, kind: str, epoch: datetime) -> str:
    try:
        serial = float(text)
        moment = epoch + timedelta(days=serial)
    except (ValueError, OverflowError):
        return text
    if kind == "time":
        return moment.strftime("%H:%M:%S")
    if kind == "date" or moment.time() == datetime.min.time():
        return moment.date().isoformat()
    return moment.isoformat(sep=" ", timespec="seconds")


def _cell_value(cell: Element, strings: list[str], styles: _Styles) -> str:
    kind = cell.get("t")
    if kind == "inlineStr":
        inline = cell.find(SS + "is")
        return _string_item(inline) if inline is not None else ""
    value = cell.find(SS + "v")
    text = value.text if value is not None and value.text else ""
    if kind == "s":
        try:
            return strings[int(text)]
        except (ValueError, IndexError):
            return ""
    if kind == "b":
        return "TRUE" if text == "1" else "FALSE"
    date_kind = styles.date_styles.get(_number(cell.get("s") or "0"))
    if date_kind and kind in (None, "n") and text:
        return _as_date(text, date_kind, styles.epoch)
    return text


def _xlsx(archive: SafeArchive, notes: list[str]) -> Iterator[str]:
    workbook = _main_part(archive, "xl/workbook.xml")
    targets = _relationships(archive, workbook)
    strings = _shared_strings(archive, workbook, targets)
    sheets: list[tuple[str, str, bool]] = []
    properties: Element | None = None
    for _, element in _iterparse(archive, workbook):
        if element.tag == SS + "sheet":
            hidden = element.get("state") in ("hidden", "veryHidden")
            sheets.append((element.get("name") or "", targets.get(element.get(R + "id") or "", ""), hidden))
        elif element.tag == SS + "workbookPr":
            properties = element
    styles = _styles(archive, targets, properties)
    for name, path, hidden in sheets:
        if hidden:
            yield f"[sheet: {name} (hidden: not shown)]\n\n"
            continue
        yield f"[sheet: {name}]\n"
        if not archive.has(path):
            notes.append(f"sheet {name!r} is missing from the file")
            continue
        tree = _Tree(_iterparse(archive, path, ("start", "end")))
        for event, element in tree:
            if event != "end" or element.tag != SS + "row":
                continue
            row: list[str] = []
            for cell in element.iter(SS + "c"):
                column = _column(cell.get("r"))
                if column is not None and column >= _MAX_COLUMNS:
                    continue
                if column is not None and column > len(row):
                    row.extend([""] * (column - len(row)))
                value = (
                    _cell_value(cell, strings, styles)
                    .replace("\t", " ")
                    .replace("\n", " ")
                    .replace("\r", " ")
                )
                row.append(value)
            tree.drop(element)
            while row and not row[-1]:
                row.pop()
            if row:
                yield "\t".join(row[:_MAX_COLUMNS]) + "\n"
        yield "\n"


# --------------------------------------------------------------------------------------
# OpenDocument
# --------------------------------------------------------------------------------------


# Notes and comments interrupt the sentence they are anchored in; hidden text is hidden.
_ODF_NOT_TEXT = frozenset(
    {TEXT + "note", OFFICE + "annotation", TEXT + "hidden-text", TEXT + "hidden-paragraph"}
)


def _odf_text(element: Element) -> str:
    pieces: list[str] = [element.text or ""]
    for child in element:
        tag = child.tag
        if tag == TEXT + "s":
            pieces.append(" " * min(_repeat(child.get(TEXT + "c"), 1), _MAX_REPEAT))
        elif tag == TEXT + "tab":
            pieces.append("\t")
        elif tag == TEXT + "line-break":
            pieces.append("\n")
        elif tag not in _ODF_NOT_TEXT:
            pieces.append(_odf_text(child))
        pieces.append(child.tail or "")
    return "".join(pieces)


def _repeat(value: str | None, default: int) -> int:
    try:
        return max(int(value or default), 1)
    except ValueError:
        return default


def _odf_layout(fmt: str) -> _Layout:
    headers: dict[str, Callable[[Element], str]] = {}
    if fmt == "ods":
        headers[TABLE + "table"] = lambda element: f"[sheet: {element.get(TABLE + 'name') or ''}]\n"
    if fmt == "odp":
        counter = iter(range(1, 1 << 30))
        headers[DRAW + "page"] = lambda element: f"[slide {next(counter)}]\n"
    return _Layout(
        paragraphs=frozenset({TEXT + "p", TEXT + "h"}),
        row=TABLE + "table-row",
        cell=TABLE + "table-cell",
        paragraph_text=_odf_text,
        cell_repeat=lambda element: _repeat(element.get(TABLE + "number-columns-repeated"), 1),
        row_repeat=lambda element: _repeat(element.get(TABLE + "number-rows-repeated"), 1),
        headers=headers,
        skipped=_odf_skipped,
    )


def _odf_skipped(element: Element) -> bool:
    """Deleted text kept for change tracking, and sections hidden from the reader."""
    tag = element.tag
    if tag == TEXT + "tracked-changes":
        return True
    return tag == TEXT + "section" and (
        element.get(TEXT + "display") == "none" or element.get(TEXT + "is-hidden") == "true"
    )


def _odf(archive: SafeArchive, fmt: str) -> Iterator[str]:
    yield from _flow(_Tree(_iterparse(archive, "content.xml", ("start", "end"))), _odf_layout(fmt))


# --------------------------------------------------------------------------------------


def _actual_format(archive: SafeArchive, declared: str) -> str:
    """What the archive really holds (its parts decide, not the name or type it came with)."""
    if archive.has("content.xml") and archive.has("mimetype"):
        mimetype = archive.open("mimetype").read(200).decode("ascii", "replace").strip()
        for suffix, fmt in (("text", "odt"), ("spreadsheet", "ods"), ("presentation", "odp")):
            if mimetype == f"application/vnd.oasis.opendocument.{suffix}":
                return fmt
        return declared if declared in ("odt", "ods", "odp") else "odt"
    for prefix, fmt in (("word/", "docx"), ("xl/", "xlsx"), ("ppt/", "pptx")):
        if any(name.startswith(prefix) for name in archive.members):
            return fmt
    raise ExtractionError(
        "unsupported_format", "The archive is neither an Office Open XML nor an OpenDocument file."
    )


def office_chunks(
    path: str, declared: str, notes: list[str], meta: dict[str, Any], params: dict[str, Any]
) -> Iterator[str]:
    """Text of a DOCX/XLSX/PPTX/ODT/ODS/ODP file, in document order."""
    archive = SafeArchive(path, params)
    try:
        fmt = _actual_format(archive, declared)
        meta["format"] = fmt
        if fmt == "docx":
            yield from _docx(archive, notes)
        elif fmt == "xlsx":
            yield from _xlsx(archive, notes)
        elif fmt == "pptx":
            yield from _pptx(archive, notes, meta)
        else:
            yield from _odf(archive, fmt)
    finally:
        archive.close()
