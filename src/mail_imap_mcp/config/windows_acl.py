"""A file's owner and access list on Windows, and the current user, as SID strings (``S-1-5-21-...``),
through advapi32 (``GetNamedSecurityInfoW``, ``GetAce``, ``GetTokenInformation``). Imported only where
``os.getuid`` is missing; elsewhere ``ctypes.WinDLL`` does not exist and the caller says the access list
cannot be read. :func:`.secret_storage.windows_acl_problem` judges what this reads.
"""

from __future__ import annotations

import ctypes
from ctypes import wintypes
from pathlib import Path
from typing import Any

_SE_FILE_OBJECT = 1
_OWNER_SECURITY_INFORMATION = 0x1
_DACL_SECURITY_INFORMATION = 0x4
_TOKEN_QUERY = 0x8
_TOKEN_USER = 1
_ACCESS_ALLOWED_ACE_TYPE = 0
_ACCESS_DENIED_ACE_TYPE = 1
_INHERIT_ONLY_ACE = 0x8
_SID_OFFSET_IN_ACE = 8  # ACE_HEADER (4 bytes), then the access mask (4), then the SID


class _Acl(ctypes.Structure):
    _fields_ = [
        ("AclRevision", ctypes.c_ubyte),
        ("Sbz1", ctypes.c_ubyte),
        ("AclSize", wintypes.WORD),
        ("AceCount", wintypes.WORD),
        ("Sbz2", wintypes.WORD),
    ]


class _AceHeader(ctypes.Structure):
    _fields_ = [("AceType", ctypes.c_ubyte), ("AceFlags", ctypes.c_ubyte), ("AceSize", wintypes.WORD)]


def _dll(name: str) -> Any:
    return ctypes.WinDLL(name, use_last_error=True)  # type: ignore[attr-defined,unused-ignore]


def _sid_string(advapi32: Any, kernel32: Any, sid: int | ctypes.c_void_p) -> str:
    text = ctypes.c_wchar_p()
    if not advapi32.ConvertSidToStringSidW(sid, ctypes.byref(text)):
        raise OSError(ctypes.get_last_error(), "ConvertSidToStringSidW failed")  # type: ignore[attr-defined,unused-ignore]
    try:
        return str(text.value)
    finally:
        kernel32.LocalFree(text)


def _current_user(advapi32: Any, kernel32: Any) -> str:
    token = wintypes.HANDLE()
    if not advapi32.OpenProcessToken(kernel32.GetCurrentProcess(), _TOKEN_QUERY, ctypes.byref(token)):
        raise OSError(ctypes.get_last_error(), "OpenProcessToken failed")  # type: ignore[attr-defined,unused-ignore]
    try:
        needed = wintypes.DWORD()
        advapi32.GetTokenInformation(token, _TOKEN_USER, None, 0, ctypes.byref(needed))
        buffer = ctypes.create_string_buffer(needed.value)
        if not advapi32.GetTokenInformation(token, _TOKEN_USER, buffer, needed, ctypes.byref(needed)):
            raise OSError(ctypes.get_last_error(), "GetTokenInformation failed")  # type: ignore[attr-defined,unused-ignore]
        # TOKEN_USER starts with SID_AND_ATTRIBUTES, whose first field is the user's SID pointer.
        sid = ctypes.c_void_p.from_buffer(buffer).value
        return _sid_string(advapi32, kernel32, ctypes.c_void_p(sid))
    finally:
        kernel32.CloseHandle(token)


def read_acl(path: Path) -> tuple[str, str, list[tuple[str, bool]] | None]:
    """The file's owner, the current user and the file's access entries (None: no access list), each as (SID, grants)."""
    advapi32, kernel32 = _dll("advapi32"), _dll("kernel32")
    owner, dacl, descriptor = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    status = advapi32.GetNamedSecurityInfoW(
        str(path),
        _SE_FILE_OBJECT,
        _OWNER_SECURITY_INFORMATION | _DACL_SECURITY_INFORMATION,
        ctypes.byref(owner),
        None,
        ctypes.byref(dacl),
        None,
        ctypes.byref(descriptor),
    )
    if status != 0:
        raise OSError(status, "GetNamedSecurityInfoW failed")
    try:
        entries: list[tuple[str, bool]] | None = None
        if dacl.value:
            entries = []
            for index in range(_Acl.from_address(dacl.value).AceCount):
                ace = ctypes.c_void_p()
                if not advapi32.GetAce(dacl, index, ctypes.byref(ace)) or ace.value is None:
                    raise OSError(ctypes.get_last_error(), "GetAce failed")  # type: ignore[attr-defined,unused-ignore]
                header = _AceHeader.from_address(ace.value)
                if header.AceFlags & _INHERIT_ONLY_ACE:
                    continue  # applies to what a folder will hold, not to this file
                if header.AceType not in (_ACCESS_ALLOWED_ACE_TYPE, _ACCESS_DENIED_ACE_TYPE):
                    entries.append((f"an entry of type {header.AceType}", True))
                    continue
                sid = _sid_string(advapi32, kernel32, ctypes.c_void_p(ace.value + _SID_OFFSET_IN_ACE))
                entries.append((sid, header.AceType == _ACCESS_ALLOWED_ACE_TYPE))
        return _sid_string(advapi32, kernel32, owner), _current_user(advapi32, kernel32), entries
    finally:
        kernel32.LocalFree(descriptor)
