"""Creating a file only inside a folder, under a safe name derived from the one it was wanted under,
never overwriting anything: the folder opened once as a directory and the file created by name in it
(``dir_fd``: no symlinked component of the path followed), exclusively, ``O_NOFOLLOW``, mode 0600; a
partial file removed on any failure; marked as downloaded from the internet where the platform has a
mark (:func:`.platform.mark_downloaded`). A folder that does not exist is made (0700, its own only)
where the folder holding it exists."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import platform
from .errors import FileTooLarge, FolderUnusable
from .names import name_fold, numbered_names


@dataclass(frozen=True)
class SavedFile:
    """A file created inside a folder: its full ``path``, its ``name``, its ``size`` in bytes, and
    whether it carries the platform's mark of a downloaded file (``marked``)."""

    path: Path
    name: str
    size: int
    marked: bool


def _windows_folder_problem(folder: str) -> str | None:
    """Why ``folder`` is not the user's alone on Windows (its owner and access list), as secret files are
    judged; None when it is."""
    from mail_imap_mcp.config.secret_storage import windows_acl_problem
    from mail_imap_mcp.config.windows_acl import read_acl

    try:
        return windows_acl_problem(*read_acl(Path(folder)))
    except (OSError, AttributeError, ImportError) as exc:
        return f"its access list cannot be read ({type(exc).__name__}: {exc})"


def _open_folder(folder: str, setting: str) -> int | None:
    """The folder as a directory descriptor (None on Windows, which creates by path after the checks)."""
    if sys.platform == "win32":
        if not os.path.isdir(folder) or os.path.islink(folder):
            raise FolderUnusable(setting, folder, "it is no directory")
        problem = _windows_folder_problem(folder)
        if problem is not None:
            raise FolderUnusable(setting, folder, problem)
        return None
    try:
        return os.open(folder, platform.DIRECTORY_FLAGS)
    except FileNotFoundError:
        _made(folder, setting)
    except OSError as exc:
        raise FolderUnusable(setting, folder, exc.strerror or str(exc)) from None
    try:
        return os.open(folder, platform.DIRECTORY_FLAGS)
    except OSError as exc:
        raise FolderUnusable(setting, folder, exc.strerror or str(exc)) from None


def _made(folder: str, setting: str) -> None:
    """The folder made, the user's alone (0700), where the folder holding it exists; never its parents
    (a mistyped setting makes no tree of folders)."""
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        raise FolderUnusable(
            setting, folder, f"it does not exist, nor does the folder {parent} that would hold it"
        )
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:  # made meanwhile
        pass
    except OSError as exc:
        raise FolderUnusable(
            setting, folder, f"it does not exist and cannot be made: {exc.strerror or exc}"
        ) from None


def _claim(folder: str, directory: int | None, wanted: str, setting: str) -> tuple[str, int]:
    """The first free name of :func:`.names.numbered_names` (free whatever the case or Unicode form) and
    the new file's descriptor."""
    taken = {name_fold(name) for name in os.listdir(folder if directory is None else directory)}
    for name in numbered_names(wanted):
        if name_fold(name) in taken:
            continue
        try:
            if directory is None:
                return name, os.open(os.path.join(folder, name), platform.CREATE_FLAGS, 0o600)
            return name, os.open(name, platform.CREATE_FLAGS, 0o600, dir_fd=directory)
        except FileExistsError:
            taken.add(name_fold(name))  # made meanwhile by someone else
        except OSError as exc:
            raise FolderUnusable(setting, folder, exc.strerror or str(exc)) from None
    raise FolderUnusable(setting, folder, f"every numbered name of {wanted!r} is taken")


def _write(descriptor: int, chunks: Iterable[bytes], max_bytes: int, setting: str, name: str) -> int:
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise FileTooLarge(setting, name, max_bytes)
        view = memoryview(chunk)
        while view:
            view = view[os.write(descriptor, view) :]
    return size


def create_inside(
    folder: Path, wanted_name: str, chunks: Iterable[bytes], *, max_bytes: int, setting: str = "download_dir"
) -> SavedFile:
    """A new file in ``folder`` holding ``chunks``, under the safe name of ``wanted_name`` (numbered when
    taken). :class:`FolderUnusable` or :class:`FileTooLarge` (past ``max_bytes``) name ``setting``; on any
    failure nothing is left behind."""
    where = os.path.realpath(folder)
    directory = _open_folder(where, setting)
    try:
        name, descriptor = _claim(where, directory, wanted_name, setting)
        path = os.path.join(where, name)
        try:
            size = _write(descriptor, chunks, max_bytes, setting, name)
            marked = platform.mark_downloaded(descriptor, path)
        except BaseException:
            os.close(descriptor)
            if directory is None:
                os.unlink(path)
            else:
                os.unlink(name, dir_fd=directory)
            raise
        os.close(descriptor)
        return SavedFile(path=Path(path), name=name, size=size, marked=marked)
    finally:
        if directory is not None:
            os.close(directory)
