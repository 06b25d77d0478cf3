"""How to install into the running installation what it lacks, the locked way: with this virtualenv's
own pip (never a bare ``pip``, which may be another Python's) and a lockfile of the source, hash-checked."""

from __future__ import annotations

import sys
from pathlib import Path


def pip_command() -> str:
    """This installation's pip: the virtualenv's ``pip`` beside the interpreter, else ``python -m pip``."""
    found = Path(sys.executable).parent / ("pip.exe" if sys.platform == "win32" else "pip")
    return str(found) if found.is_file() else f"{sys.executable} -m pip"


def locked_install(lockfile: str) -> str:
    """The command installing ``lockfile`` (a file at the root of the source) into this installation."""
    return f"{pip_command()} install --require-hashes -r mail-imap-mcp/{lockfile} (the file is in the source)"
