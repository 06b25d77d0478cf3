"""Local files, safely: reading a file only from inside folders the user listed (:func:`read_inside`)
and creating one only inside a folder, never overwriting (:func:`create_inside`). Protocol-free: it
knows no mail and no MCP; its refusals are :mod:`.errors`' classes, worded by
``presentation/local_file_failures.py``. docs/security.md says what it refuses and why."""

from __future__ import annotations

from .creating import SavedFile, create_inside
from .errors import (
    AmbiguousName,
    ControlInName,
    FileMissing,
    FileTooLarge,
    FileUnreadable,
    FolderUnusable,
    LocalFileError,
    NotRegularFile,
    OutsideFolders,
)
from .reading import LocalFile, read_inside

__all__ = [
    "AmbiguousName",
    "ControlInName",
    "FileMissing",
    "FileTooLarge",
    "FileUnreadable",
    "FolderUnusable",
    "LocalFile",
    "LocalFileError",
    "NotRegularFile",
    "OutsideFolders",
    "SavedFile",
    "create_inside",
    "read_inside",
]
