"""The name rules of local files, pure (no filesystem call): which Windows paths are refused before the
disk is asked, how names compare where the platform folds case or Unicode, whether a path lies inside a
folder, and the safe name a saved file gets from the name it was wanted under."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import PurePath, PurePosixPath, PureWindowsPath

#: The longest file name most filesystems take, in UTF-8 bytes (ext4, APFS; NTFS counts 255 UTF-16 units).
MAX_NAME_BYTES = 255
#: An extension longer than this is kept as part of the name, not as an extension.
_MAX_EXTENSION_BYTES = 16
#: A saved file's name when nothing of the wanted one is left.
FALLBACK_NAME = "attachment"
#: How many numbered names ("report (2).pdf") are tried before a save is refused.
MAX_NUMBER = 9999

_DEVICE_STEMS = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{port}{digit}" for port in ("COM", "LPT") for digit in "0123456789\u00b9\u00b2\u00b3"}
)
#: Characters Windows refuses in a name, and the separators of both platforms.
_REPLACED = frozenset('/\\:<>"|?*')
#: An 8.3 short name ("PROGRA~1", "REPORT~12.PDF"), which names another file than it spells.
_SHORT_NAME = re.compile(r"^[^~.]{1,8}~[0-9]+(\.[^.]{0,3})?$")


def _device(component: str) -> bool:
    """Whether Windows takes ``component`` for a device ("NUL", "com1.txt", "CON .log")."""
    return component.split(".", 1)[0].rstrip(" ").upper() in _DEVICE_STEMS


def windows_refusal(path: str) -> str | None:
    """Why Windows would take ``path`` out of a folder or to something other than a file; None when it
    would not. Judged on the text alone: a UNC share (looking one up can send the user's NTLM hash), a
    ``\\\\.\\`` or ``\\\\?\\`` device path or named pipe, a path rooted on the current drive or relative
    to another drive's current folder, an alternate data stream, a device name, a trailing dot or space
    (Windows drops them, so the name read is not the name checked), an 8.3 short name."""
    windows = PureWindowsPath(path)
    if path.startswith(("\\\\", "//", "\\/", "/\\", "\\??\\")):
        return "a network share or device path"
    if windows.drive and not windows.root:
        return "a path relative to another drive's current folder"
    if windows.root and not windows.drive:
        return "a path rooted on the current drive"
    for component in windows.parts[1:] if windows.drive else windows.parts:
        if component in {".", ".."}:
            continue
        if ":" in component:
            return "an alternate data stream"
        if component != component.rstrip(". "):
            return "a name ending in a dot or space"
        if _device(component):
            return "a device name"
        if _SHORT_NAME.match(component):
            return "an 8.3 short name"
    return None


def path_refusal(path: str, *, platform: str = sys.platform) -> str | None:
    """Why ``path`` is refused before any filesystem call on ``platform``; None when it is not."""
    if "\x00" in path:
        return "a NUL character"
    return windows_refusal(path) if platform == "win32" else None


def comparison_key(text: str, *, platform: str = sys.platform) -> str:
    """``text`` as ``platform``'s filesystem compares names: Windows folds case (NTFS keeps Unicode forms
    apart), macOS folds case and Unicode normalisation (APFS and HFS+ as formatted by default), Linux
    compares bytes."""
    if platform == "win32":
        return text.casefold()
    if platform == "darwin":
        return name_fold(text)
    return text


def name_fold(name: str) -> str:
    """``name`` with case and Unicode normalisation folded: two names equal here are one file somewhere."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def _pure(path: str, platform: str) -> PurePath:
    return PureWindowsPath(path) if platform == "win32" else PurePosixPath(path)


def lies_inside(path: str, folder: str, *, platform: str = sys.platform) -> bool:
    """Whether the resolved ``path`` is ``folder`` or below it (both absolute, symlinks resolved), names
    compared as ``platform`` compares them."""
    inner = [comparison_key(part, platform=platform) for part in _pure(path, platform).parts]
    outer = [comparison_key(part, platform=platform) for part in _pure(folder, platform).parts]
    return len(inner) > len(outer) and inner[: len(outer)] == outer


def _cleaned(wanted: str) -> str:
    kept: list[str] = []
    for char in unicodedata.normalize("NFC", wanted):
        category = unicodedata.category(char)
        if category == "Cf":  # bidirectional controls, zero-width characters: dropped, never shown
            continue
        replaced = category in {"Cc", "Cs", "Co", "Cn", "Zl", "Zp"} or char in _REPLACED
        kept.append("_" if replaced else char)
    return "".join(kept).strip(" .")


def _split_extension(name: str) -> tuple[str, str]:
    stem, dot, extension = name.rpartition(".")
    short = 0 < len(extension.encode()) <= _MAX_EXTENSION_BYTES and " " not in extension
    return (stem, f".{extension}") if dot and stem and short else (name, "")


def _cut(text: str, budget: int) -> str:
    """``text`` cut to ``budget`` UTF-8 bytes at a character boundary."""
    return text.encode()[: max(budget, 0)].decode(errors="ignore")


def _fitted(stem: str, tail: str) -> str:
    cut = _cut(stem, MAX_NAME_BYTES - len(tail.encode()))
    stem = (cut if cut == stem else cut.rstrip(" .")) or FALLBACK_NAME
    return f"_{stem}{tail}" if _device(stem + tail) else stem + tail


def safe_file_name(wanted: str) -> str:
    """A name to create a file under, from the name it was wanted under: no separator, no leading dot,
    no control, bidirectional or ``:`` character, no Windows device name (with any extension), at most
    :data:`MAX_NAME_BYTES` UTF-8 bytes cut at a character boundary, its extension kept."""
    stem, extension = _split_extension(_cleaned(wanted))
    return _fitted(stem, extension)


def numbered_names(wanted: str) -> Iterator[str]:
    """The safe name of ``wanted``, then "name (2).ext", "name (3).ext"... up to :data:`MAX_NUMBER`."""
    first = safe_file_name(wanted)
    yield first
    stem, extension = _split_extension(first)
    for number in range(2, MAX_NUMBER + 1):
        yield _fitted(stem, f" ({number}){extension}")
