"""Office archives read under caps: a zip whose members are inflated under limits, streamed XML, and
the package relationships that name its parts (sandboxed child only)."""

from __future__ import annotations

import contextlib
import posixpath
import zipfile
from collections.abc import Iterator
from typing import IO, Any
from xml.etree.ElementTree import Element
from xml.parsers.expat import errors as expat_errors

from .errors import ExtractionError, format_bytes

RATIO_FLOOR = 1 << 20  # members smaller than this may compress arbitrarily well
MAX_COLUMNS = 1024
MAX_REPEAT = 256
MAX_SHARED_STRINGS = 1_000_000

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
        if info.file_size > RATIO_FLOOR and info.file_size > self.max_ratio * max(info.compress_size, 1):
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


_EXPAT_NO_MEMORY = expat_errors.codes[expat_errors.XML_ERROR_NO_MEMORY]


def iterparse(
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
        if getattr(exc, "code", None) == _EXPAT_NO_MEMORY:
            raise MemoryError from exc  # expat out of memory: the memory limit, not a malformed part
        raise ExtractionError(
            "extract_failed", f"The document part {name} is not well-formed ({exc})."
        ) from exc


class Tree:
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


def relationship_list(archive: SafeArchive, part: str) -> list[tuple[str, str, str]]:
    """(id, type, archive path) of each internal relationship of ``part`` (e.g. word/document.xml)."""
    folder, base = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    if not archive.has(rels):
        return []
    found = []
    for _, element in iterparse(archive, rels):
        if element.tag == PKG_REL + "Relationship" and element.get("TargetMode") != "External":
            target = element.get("Target") or ""
            path = (
                target.lstrip("/")
                if target.startswith("/")
                else posixpath.normpath(posixpath.join(folder, target))
            )
            found.append((element.get("Id") or "", element.get("Type") or "", path))
    return found


def relationships(archive: SafeArchive, part: str) -> dict[str, str]:
    """Relationship id -> archive path for ``part``."""
    return {rid: path for rid, _, path in relationship_list(archive, part)}


def related(archive: SafeArchive, part: str, kind: str) -> list[str]:
    """The parts ``part`` relates to with a relationship type ending in ``/kind``, in file order."""
    paths = [path for _, type_, path in relationship_list(archive, part) if type_.endswith("/" + kind)]
    return [path for path in dict.fromkeys(paths) if archive.has(path)]


def titled(title: str, lines: Iterator[str]) -> Iterator[str]:
    """``lines`` under a ``[title]`` line, or nothing when they hold no text (leading blank lines dropped)."""
    started = False
    for line in lines:
        if not started:
            if not line.strip():
                continue
            yield f"\n[{title}]\n"
            started = True
        yield line


def main_part(archive: SafeArchive, default: str) -> str:
    """The officeDocument target named by _rels/.rels (falls back to the usual path)."""
    for target in relationships(archive, "").values():
        if target.endswith(".xml") and archive.has(target) and target.split("/")[0] == default.split("/")[0]:
            return target
    return default
