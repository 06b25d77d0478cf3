"""The words of the refusals of local files (:mod:`mail_imap_mcp.local_files.errors`). A path outside the
folders is ``permission_denied`` naming the setting that lists them, with no word of what exists there.
The failure registry (:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.local_files import (
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
from mail_imap_mcp.presentation.call import Call

#: The setting listing the folders files are read from.
READ_FOLDERS_SETTING = "attachment_dirs"


def _outside(exc: OutsideFolders, call: Call | None) -> ToolFailure:
    why = f" ({exc.why})" if exc.why else ""
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"'{exc.parameter}' is not inside a folder of {READ_FOLDERS_SETTING}{why}; only files in those "
        f"folders can be used. Nothing was read.",
        details={"parameter": exc.parameter, "setting": READ_FOLDERS_SETTING},
    )


def _ambiguous(exc: AmbiguousName, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        exc.parameter,
        f"more than one folder of {READ_FOLDERS_SETTING} holds this name ({', '.join(exc.shown)}); give "
        "the absolute path.",
        candidates=list(exc.shown),
    )


def _missing(exc: FileMissing, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"No file {exc.shown!r} in the folders of {READ_FOLDERS_SETTING}.",
        details={"parameter": exc.parameter, "setting": READ_FOLDERS_SETTING},
    )


def _not_regular(exc: NotRegularFile, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        exc.parameter, f"{exc.shown} is {exc.what}; only a regular file is read."
    )


def _control_in_name(exc: ControlInName, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        exc.parameter,
        f"the name {exc.shown!r} holds a control character (a line break, tab or the like), which a "
        "message cannot carry as a file name; rename the file. Nothing was read.",
    )


def _too_large(exc: FileTooLarge, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.LIMIT_EXCEEDED,
        f"{exc.shown} is larger than {exc.limit} bytes; nothing beyond that was read or kept.",
        details={"parameter": exc.parameter, "limit": exc.limit},
    )


def _unreadable(exc: FileUnreadable, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"{exc.shown} cannot be read: {exc.reason}.",
        details={"parameter": exc.parameter},
    )


def _folder_unusable(exc: FolderUnusable, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.UNAVAILABLE,
        f"{exc.parameter} ({exc.folder}) cannot take a new file: {exc.reason}. Nothing was saved.",
        details={"setting": exc.parameter},
        retryable=False,
    )


def _local_file(exc: LocalFileError, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.UNAVAILABLE, f"A local file failed: {exc}.", details={"parameter": exc.parameter}
    )


#: The registry's lines of the local files' refusals.
LOCAL_FILE_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    LocalFileError: _local_file,
    OutsideFolders: _outside,
    AmbiguousName: _ambiguous,
    FileMissing: _missing,
    NotRegularFile: _not_regular,
    ControlInName: _control_in_name,
    FileTooLarge: _too_large,
    FileUnreadable: _unreadable,
    FolderUnusable: _folder_unusable,
}
