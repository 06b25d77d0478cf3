"""Office Open XML (DOCX/XLSX/PPTX) and OpenDocument (ODT/ODS/ODP) text (sandboxed child only).

Archives are read with :mod:`zipfile` under caps checked before inflating (member count,
declared sizes, compression ratio) and while inflating (bytes actually produced). XML is
parsed with ``defusedxml`` with DTDs forbidden, so entity expansion and external entities
(XXE) are refused, and streamed with ``iterparse`` so that reading stops as soon as the
requested window is full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from xml.etree.ElementTree import Element

from ._archive import (
    DRAW,
    MAX_COLUMNS,
    MAX_REPEAT,
    MC,
    OFFICE,
    TABLE,
    TEXT,
    A,
    P,
    R,
    SafeArchive,
    Tree,
    W,
    iterparse,
    main_part,
    related,
    relationships,
    titled,
)
from ._xlsx import xlsx_chunks
from .errors import ExtractionError

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


def _flow(tree: Tree, layout: _Layout) -> Iterator[str]:
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
                repeat = min(layout.cell_repeat(element), MAX_REPEAT if text else MAX_COLUMNS)
                rows[-1].extend([text] * repeat)
            tree.drop(element)
        elif tag == layout.row and rows:
            row = rows.pop()
            while row and not row[-1]:
                row.pop()
            line = "\t".join(row[:MAX_COLUMNS])
            if cells:  # a table nested in a cell
                cells[-1].append(line)
            elif line:
                for _ in range(min(layout.row_repeat(element), MAX_REPEAT)):
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
    part = main_part(archive, "word/document.xml")
    yield from _flow(Tree(iterparse(archive, part, ("start", "end"))), _WORD)
    for kind, title in _WORD_EXTRA_PARTS:
        for path in related(archive, part, kind):
            yield from titled(title, _flow(Tree(iterparse(archive, path, ("start", "end"))), _WORD))


def _pptx(archive: SafeArchive, notes: list[str], meta: dict[str, Any]) -> Iterator[str]:
    presentation = main_part(archive, "ppt/presentation.xml")
    targets = relationships(archive, presentation)
    order = [
        targets.get(element.get(R + "id") or "", "")
        for _, element in iterparse(archive, presentation)
        if element.tag == P + "sldId"
    ]
    meta["pages"] = len(order)
    for number, slide in enumerate(order, 1):
        yield f"[slide {number}]\n"
        if not archive.has(slide):
            notes.append(f"slide {number} is missing from the file")
            continue
        yield from _flow(Tree(iterparse(archive, slide, ("start", "end"))), _SLIDE)
        for path in related(archive, slide, "notesSlide")[:1]:
            yield from titled("notes", _speaker_notes(archive, path))
        yield "\n"


# Placeholders of a notes page that repeat the slide (its picture, number, header, footer, date).
_NOTES_PLACEHOLDERS_SKIPPED = frozenset({"sldImg", "sldNum", "hdr", "ftr", "dt"})


def _speaker_notes(archive: SafeArchive, path: str) -> Iterator[str]:
    tree = Tree(iterparse(archive, path, ("start", "end")))
    for event, element in tree:
        if event != "end" or element.tag != P + "sp":
            continue
        placeholder = element.find(f".//{P}ph")
        if placeholder is None or placeholder.get("type") not in _NOTES_PLACEHOLDERS_SKIPPED:
            for paragraph in element.iter(A + "p"):
                yield _SLIDE.paragraph_text(paragraph) + "\n"
        tree.drop(element)


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
            pieces.append(" " * min(_repeat(child.get(TEXT + "c"), 1), MAX_REPEAT))
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
    yield from _flow(Tree(iterparse(archive, "content.xml", ("start", "end"))), _odf_layout(fmt))


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
            yield from xlsx_chunks(archive, notes)
        elif fmt == "pptx":
            yield from _pptx(archive, notes, meta)
        else:
            yield from _odf(archive, fmt)
    finally:
        archive.close()
