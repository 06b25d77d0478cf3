"""The refusals of reading or creating a local file. Each carries the facts its words need, never the
words: ``presentation/local_file_failures.py`` says them. ``parameter`` is the argument that named the
file (or the setting that named the folder), as the user wrote it."""

from __future__ import annotations


class LocalFileError(Exception):
    """A local file could not be read or created; nothing outside the folders was read or written."""

    def __init__(self, message: str, parameter: str) -> None:
        super().__init__(message)
        self.parameter = parameter


class OutsideFolders(LocalFileError):
    """The path lies outside every listed folder, or names something the rules refuse before any look at
    the disk (``why``: a Windows device, share or stream name). The same answer whether it exists or not."""

    def __init__(self, parameter: str, why: str = "") -> None:
        super().__init__(f"the path is outside the listed folders{': ' + why if why else ''}", parameter)
        self.why = why


class AmbiguousName(LocalFileError):
    """A relative path that more than one listed folder holds (``shown``: each, relative to its folder)."""

    def __init__(self, parameter: str, shown: tuple[str, ...]) -> None:
        super().__init__(f"more than one folder holds the name: {', '.join(shown)}", parameter)
        self.shown = shown


class FileMissing(LocalFileError):
    """No file of that name inside the folders (``shown``: the path as the user wrote it)."""

    def __init__(self, parameter: str, shown: str) -> None:
        super().__init__(f"no file {shown!r} in the listed folders", parameter)
        self.shown = shown


class NotRegularFile(LocalFileError):
    """Inside a folder, but no plain file of its own: ``what`` it is (a directory, a FIFO, a device, a
    file with several hard links)."""

    def __init__(self, parameter: str, shown: str, what: str) -> None:
        super().__init__(f"{shown!r} is {what}, not a regular file", parameter)
        self.shown = shown
        self.what = what


class ControlInName(LocalFileError):
    """The path inside the folder holds a control character (CR, LF, tab...): no message carries it as a
    file name, and a line break would add header lines. Nothing was read."""

    def __init__(self, parameter: str, shown: str) -> None:
        super().__init__(f"{shown!r} holds a control character in its name", parameter)
        self.shown = shown


class FileTooLarge(LocalFileError):
    """The file (read or written) passed ``limit`` bytes; nothing beyond was read, a partial file removed."""

    def __init__(self, parameter: str, shown: str, limit: int) -> None:
        super().__init__(f"{shown!r} is larger than {limit} bytes", parameter)
        self.shown = shown
        self.limit = limit


class FileUnreadable(LocalFileError):
    """Inside a folder, but the system refused to open or read it (``reason``: its words)."""

    def __init__(self, parameter: str, shown: str, reason: str) -> None:
        super().__init__(f"{shown!r} cannot be read: {reason}", parameter)
        self.shown = shown
        self.reason = reason


class FolderUnusable(LocalFileError):
    """The folder to create a file in is missing, no directory, not the user's alone (Windows' access
    list), or refused the new file (``reason``); ``parameter`` is the setting that names it."""

    def __init__(self, parameter: str, folder: str, reason: str) -> None:
        super().__init__(f"{folder} cannot take a new file: {reason}", parameter)
        self.folder = folder
        self.reason = reason
