"""What each platform offers to open a file without following a link, to ask an open file for its real
path, and to mark a file as downloaded from the internet. POSIX calls by default; Windows' and macOS'
behind ``sys.platform`` (typed, checked by mypy on those platforms only, never run here)."""

from __future__ import annotations

import os
import sys
import time

#: Opening for reading: no final symlink followed, no wait on a FIFO or device, no controlling terminal.
READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
#: Creating: a new file only (a name taken, even by a dangling symlink, fails), never through a symlink.
CREATE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
#: A folder opened to create files in by name, not through its path again.
DIRECTORY_FLAGS = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)
#: Windows' Internet zone, the mark of a downloaded file (``Zone.Identifier``).
_INTERNET_ZONE = "[ZoneTransfer]\r\nZoneId=3\r\n"
_QUARANTINE = b"com.apple.quarantine"

if sys.platform == "win32":
    import ctypes
    import msvcrt
    from ctypes import wintypes

    _GENERIC_READ = 0x80000000
    _FILE_SHARE_READ = 0x1
    _OPEN_EXISTING = 3
    _FILE_FLAG_OPEN_REPARSE_POINT = 0x00200000
    _INVALID_HANDLE = wintypes.HANDLE(-1).value
    _kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _kernel32.CreateFileW.restype = wintypes.HANDLE
    _kernel32.CreateFileW.argtypes = [
        wintypes.LPCWSTR,
        wintypes.DWORD,
        wintypes.DWORD,
        wintypes.LPVOID,
        wintypes.DWORD,
        wintypes.DWORD,
        wintypes.HANDLE,
    ]
    _kernel32.GetFinalPathNameByHandleW.restype = wintypes.DWORD
    _kernel32.GetFinalPathNameByHandleW.argtypes = [
        wintypes.HANDLE,
        wintypes.LPWSTR,
        wintypes.DWORD,
        wintypes.DWORD,
    ]

    def open_for_reading(path: str) -> int:
        """A descriptor of ``path`` opened with ``FILE_FLAG_OPEN_REPARSE_POINT``: a link is opened as
        itself (and refused as no regular file), never followed."""
        handle = _kernel32.CreateFileW(
            path, _GENERIC_READ, _FILE_SHARE_READ, None, _OPEN_EXISTING, _FILE_FLAG_OPEN_REPARSE_POINT, None
        )
        if handle == _INVALID_HANDLE:
            error = ctypes.get_last_error()
            raise OSError(None, ctypes.FormatError(error), path, error)
        return msvcrt.open_osfhandle(handle, os.O_RDONLY | os.O_BINARY)

    def real_path(descriptor: int, path: str) -> str | None:
        """The path the system resolves the open file to (``GetFinalPathNameByHandleW``)."""
        buffer = ctypes.create_unicode_buffer(32768)
        handle = msvcrt.get_osfhandle(descriptor)
        length = _kernel32.GetFinalPathNameByHandleW(handle, buffer, len(buffer), 0)
        if not length or length >= len(buffer):
            return None
        found = buffer.value
        if found.startswith("\\\\?\\UNC\\"):
            return "\\\\" + found[8:]
        return found[4:] if found.startswith("\\\\?\\") else found

    def mark_downloaded(descriptor: int, path: str) -> bool:
        """Windows' mark: the ``Zone.Identifier`` stream of the Internet zone."""
        try:
            with open(f"{path}:Zone.Identifier", "w", encoding="ascii", newline="") as stream:
                stream.write(_INTERNET_ZONE)
        except OSError:
            return False  # a volume without streams (FAT, exFAT, some shares)
        return True

else:

    def open_for_reading(path: str) -> int:
        """A descriptor of ``path`` opened ``O_NOFOLLOW|O_NONBLOCK``: a final symlink refused, a FIFO
        opened without waiting for a writer."""
        return os.open(path, READ_FLAGS)

    if sys.platform == "darwin":
        import ctypes
        import fcntl

        _libc = ctypes.CDLL(None, use_errno=True)

        def real_path(descriptor: int, path: str) -> str | None:
            """The path the system resolves the open file to (``F_GETPATH``)."""
            found = fcntl.fcntl(descriptor, fcntl.F_GETPATH, bytes(1024))
            return os.fsdecode(found.split(b"\x00", 1)[0])

        def mark_downloaded(descriptor: int, path: str) -> bool:
            """macOS' mark: the ``com.apple.quarantine`` extended attribute, as a browser sets it."""
            value = f"0083;{int(time.time()):08x};mail-imap-mcp;".encode()
            return bool(_libc.fsetxattr(descriptor, _QUARANTINE, value, len(value), 0, 0) == 0)

    else:

        def real_path(descriptor: int, path: str) -> str | None:
            """The path the system resolves the open file to (``/proc/self/fd/N``); None without ``/proc``."""
            try:
                return os.readlink(f"/proc/self/fd/{descriptor}")
            except OSError:
                return None

        def mark_downloaded(descriptor: int, path: str) -> bool:
            """No mark of downloaded files exists on this platform."""
            return False
