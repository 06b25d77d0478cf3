"""Reading a file only from inside the folders the user listed: one algorithm, in this order.

1. Windows names that leave a folder or reach a device are refused on the text alone (:mod:`.names`).
2. A relative path is taken in the one folder that holds it (more than one: refused); an absolute one
   as it is. It is resolved (symlinks followed) and must lie inside a folder, names compared as the
   platform compares them; outside is one answer, whether anything exists there or not. A name there
   holding a control character (CR, LF, tab...) is refused: no message carries it as a file name.
3. It is opened without following a final symlink and without waiting (a FIFO), then from the open
   file: a regular file, one link (a hard link brings in any file of the filesystem), within the size.
4. The open file's real path is asked again and must lie inside the same folder, so a directory swapped
   for a symlink between 2 and 3 gets nothing through; then it is read from that descriptor, at most
   ``max_bytes + 1`` bytes.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import platform
from .errors import (
    AmbiguousName,
    ControlInName,
    FileMissing,
    FileTooLarge,
    FileUnreadable,
    NotRegularFile,
    OutsideFolders,
)
from .names import lies_inside, path_refusal

_READ_CHUNK = 1 << 20
#: Characters no file name in a message may hold (C0, DEL, C1): a line break would add header lines.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class LocalFile:
    """A file read from inside a listed folder: its ``name``, the path ``shown`` to the user relative to
    its folder's parent ("Documents/report.pdf"), its ``size`` and its bytes."""

    name: str
    shown: str
    size: int
    data: bytes


@dataclass(frozen=True)
class _Found:
    folder: str
    resolved: str


#: Windows' attribute of a link or junction (opened as itself, never followed).
_REPARSE_POINT = 0x400


def _kind(status: os.stat_result) -> str | None:
    """What the open file is when it is not a plain file of its own; None when it is."""
    mode, links = status.st_mode, status.st_nlink
    if getattr(status, "st_file_attributes", 0) & _REPARSE_POINT:
        return "a link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if not stat.S_ISREG(mode):
        return "not a plain file"
    if links != 1:
        return f"a file with {links} hard links"
    return None


def _shown(folder: str, resolved: str) -> str:
    """The path as the user sees it: from the folder's own name down ("Documents/report.pdf")."""
    return os.path.relpath(resolved, os.path.dirname(folder)).replace(os.sep, "/")


def _resolved(path: str, parameter: str) -> str:
    """``path`` with its links followed; :class:`OutsideFolders` where a link changes while it is followed
    (a link swapped for a directory between ``realpath``'s lstat and readlink raises EINVAL there)."""
    try:
        return os.path.realpath(path)
    except OSError:
        raise OutsideFolders(parameter) from None


def _find(path: str, folders: Sequence[str], parameter: str) -> _Found:
    """The folder holding ``path`` and the path resolved inside it; :class:`OutsideFolders` otherwise."""
    if os.path.isabs(path):
        resolved = _resolved(path, parameter)
        for folder in folders:
            if lies_inside(resolved, folder):
                return _Found(folder, resolved)
        raise OutsideFolders(parameter)
    if ".." in Path(path).parts:
        raise OutsideFolders(parameter)
    inside = [_Found(folder, _resolved(os.path.join(folder, path), parameter)) for folder in folders]
    inside = [found for found in inside if lies_inside(found.resolved, found.folder)]
    holders = [found for found in inside if os.path.lexists(found.resolved)]
    if len(holders) > 1:
        raise AmbiguousName(parameter, tuple(_shown(found.folder, found.resolved) for found in holders))
    if holders:
        return holders[0]
    if len(inside) < len(folders):
        raise OutsideFolders(parameter)
    raise FileMissing(parameter, path)


def _open(found: _Found, path: str, parameter: str) -> int:
    try:
        return platform.open_for_reading(found.resolved)
    except FileNotFoundError:
        raise FileMissing(parameter, path) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink put at the name since it was resolved
            raise OutsideFolders(parameter) from None
        raise FileUnreadable(
            parameter, _shown(found.folder, found.resolved), exc.strerror or str(exc)
        ) from None


def _still_inside(descriptor: int, found: _Found, status: os.stat_result) -> bool:
    """Whether the open file is the one inside the folder (its real path asked of the open file; where
    the system cannot say, the path resolved again must be the same file)."""
    real = platform.real_path(descriptor, found.resolved)
    if real is not None:
        return lies_inside(real, found.folder)
    try:
        again = os.path.realpath(found.resolved)
        there = os.stat(again, follow_symlinks=False)
    except OSError:
        return False
    same = (there.st_dev, there.st_ino) == (status.st_dev, status.st_ino)
    return same and lies_inside(again, found.folder)


def _read(descriptor: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = os.read(descriptor, min(_READ_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_inside(path: str, folders: Sequence[Path], *, max_bytes: int, parameter: str = "path") -> LocalFile:
    """The file ``path`` names, read only when it lies inside one of ``folders`` (the module's algorithm).

    Raises :class:`OutsideFolders`, :class:`AmbiguousName`, :class:`FileMissing`, :class:`ControlInName`,
    :class:`NotRegularFile`, :class:`FileTooLarge` or :class:`FileUnreadable`, each naming ``parameter``.
    """
    if path_refusal(path) is not None:
        raise OutsideFolders(parameter, path_refusal(path) or "")
    roots = [os.path.realpath(folder) for folder in folders]
    found = _find(os.path.expanduser(path) if path.startswith("~") else path, roots, parameter)
    shown = _shown(found.folder, found.resolved)
    if _CONTROL.search(shown):
        raise ControlInName(parameter, shown)
    descriptor = _open(found, path, parameter)
    try:
        status = os.fstat(descriptor)
        if not _still_inside(descriptor, found, status):
            raise OutsideFolders(parameter)
        what = _kind(status)
        if what is not None:
            raise NotRegularFile(parameter, shown, what)
        if status.st_size > max_bytes:
            raise FileTooLarge(parameter, shown, max_bytes)
        try:
            data = _read(descriptor, max_bytes)
        except OSError as exc:
            raise FileUnreadable(parameter, shown, exc.strerror or str(exc)) from None
        if len(data) > max_bytes:
            raise FileTooLarge(parameter, shown, max_bytes)
        return LocalFile(name=os.path.basename(found.resolved), shown=shown, size=len(data), data=data)
    finally:
        os.close(descriptor)
