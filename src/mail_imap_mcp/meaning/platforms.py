"""Where the ``meaning`` extra installs from wheels alone: ``wordllama`` 0.4 publishes them for Linux
x86_64 (manylinux), Windows x86_64, macOS 13 and later on Intel and 14 and later on Apple silicon, each
for CPython 3.9 to 3.13 (its other packages have wheels wherever it has). The MCP Bundle adds the extra
under :data:`WHEELS_MARKER`, so that elsewhere it installs without it and never compiles
(``scripts/mcpb.py``); :func:`wheels_here` is the same rule for this interpreter, which says why search
by meaning is missing."""

from __future__ import annotations

import platform
import sys

#: The platforms with wheels, as a dependency's environment marker (PEP 508). macOS's
#: ``platform_release`` is its Darwin version: 22 is macOS 13, 23 is macOS 14.
WHEELS_MARKER = (
    "python_version < '3.14' and ("
    "(sys_platform == 'linux' and platform_machine == 'x86_64')"
    " or (sys_platform == 'win32' and platform_machine == 'AMD64')"
    " or (sys_platform == 'darwin' and platform_machine == 'x86_64' and platform_release >= '22')"
    " or (sys_platform == 'darwin' and platform_machine == 'arm64' and platform_release >= '23'))"
)
#: The same in words, for the reason search by meaning is unavailable.
WHEELS_WORDS = (
    "Linux and Windows on x86-64, macOS 13 or later on Intel and 14 or later on Apple silicon, with "
    "Python 3.11 to 3.13"
)
#: Each platform's first Darwin major version with wheels, by machine.
_DARWIN_FROM = {"x86_64": 22, "arm64": 23}


def wheels_here(
    system: str = sys.platform,
    machine: str | None = None,
    release: str | None = None,
    python: tuple[int, int] = sys.version_info[:2],
) -> bool:
    """Whether :data:`WHEELS_MARKER` holds for this interpreter (or the one described)."""
    machine = platform.machine() if machine is None else machine
    release = platform.release() if release is None else release
    if python >= (3, 14):
        return False
    if system == "linux":
        return machine == "x86_64"
    if system == "win32":
        return machine == "AMD64"
    if system == "darwin" and machine in _DARWIN_FROM:
        major = release.split(".")[0]
        return major.isdigit() and int(major) >= _DARWIN_FROM[machine]
    return False
