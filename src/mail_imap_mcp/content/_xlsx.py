"""Excel (XLSX) text: sheets as rows of cells, shared strings and dates as Excel shows them
(sandboxed child only)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from xml.etree.ElementTree import Element

from ._archive import (
    MAX_COLUMNS,
    MAX_SHARED_STRINGS,
    SS,
    R,
    SafeArchive,
    Tree,
    iterparse,
    main_part,
    relationships,
)
from .errors import ExtractionError

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
    tree = Tree(iterparse(archive, name, ("start", "end")))
    for event, element in tree:
        if event == "end" and element.tag == SS + "si":
            strings.append(_string_item(element))
            tree.drop(element)
            if len(strings) > MAX_SHARED_STRINGS:
                raise ExtractionError(
                    "limit_exceeded",
                    f"The workbook has more than {MAX_SHARED_STRINGS} shared strings.",
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
    for event, element in iterparse(archive, name, ("start", "end")):
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


def xlsx_chunks(archive: SafeArchive, notes: list[str]) -> Iterator[str]:
    workbook = main_part(archive, "xl/workbook.xml")
    targets = relationships(archive, workbook)
    strings = _shared_strings(archive, workbook, targets)
    sheets: list[tuple[str, str, bool]] = []
    properties: Element | None = None
    for _, element in iterparse(archive, workbook):
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
        tree = Tree(iterparse(archive, path, ("start", "end")))
        for event, element in tree:
            if event != "end" or element.tag != SS + "row":
                continue
            row: list[str] = []
            for cell in element.iter(SS + "c"):
                column = _column(cell.get("r"))
                if column is not None and column >= MAX_COLUMNS:
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
                yield "\t".join(row[:MAX_COLUMNS]) + "\n"
        yield "\n"
