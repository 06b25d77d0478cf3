"""No test reads or writes the home of the user running the tests.

Each test process (xdist worker) runs with ``HOME`` a temporary directory of its own and without the
``XDG_*`` base directories (so they follow that home), set before any fixture runs, and each test with
``HOME`` a directory of the test's own (``tests/conftest.py``): the sign-in's lock files and records
(``~/.config/mail-imap-mcp/sign-in``), the sealing key (``~/.local/state/mail-imap-mcp``), the index,
keyring files and the MCP clients' configs go below it, in the test process and in every child that
inherits its environment.

A child given an environment of its own escapes that: without ``HOME`` it falls back to the user's
home from the password database. The audit hook :func:`home_of_the_process` installs refuses (and
records, for the test to fail on) a command of this project started with an environment that has no
``HOME`` or the real one, and any opening, in the test process, of a file below the real home's
directories of this project, its keyrings and the MCP clients' configs.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The base directories that would otherwise point elsewhere than below ``HOME``.
XDG_BASES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")

#: Below the real home: what this project, its keyrings and the MCP clients it configures keep there.
_KEPT_THERE = (
    ".config/mail-imap-mcp",
    ".local/state/mail-imap-mcp",
    ".local/share/mail-imap-mcp",
    ".cache/mail-imap-mcp",
    ".local/share/python_keyring",
    ".local/share/keyrings",
    ".config/Claude",
    ".claude.json",
)

#: Where the run's first process leaves ``HOME`` as the run began, for its xdist workers.
_REAL_HOME_ENV = "MIM_TEST_REAL_HOME"
_STARTING_HOME = os.environ.setdefault(_REAL_HOME_ENV, os.environ.get("HOME", ""))

#: The homes of the user running the tests (``HOME`` as the run began, and the password database's).
REAL_HOMES = tuple(
    {os.path.realpath(home) for home in (_STARTING_HOME, pwd.getpwuid(os.getuid()).pw_dir) if home}
)
_GUARDED = tuple(os.path.join(home, kept) for home in REAL_HOMES for kept in _KEPT_THERE)

_installed: list[bool] = []

#: What the guard refused since the process began, one line each.
violations: list[str] = []


def _is_below(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def _refuse(what: str) -> None:
    violations.append(what)
    raise PermissionError(f"the tests never touch the real home ({what}): tests/support/run/own_home.py")


def _child_home(env: Mapping[Any, Any]) -> str | None:
    home = env.get("HOME", env.get(b"HOME"))
    return os.fsdecode(home) if home is not None else None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open":
        path = args[0]
        if isinstance(path, (str, os.PathLike)) and not isinstance(path, bytes):
            opened = os.path.abspath(os.fspath(path))
            if isinstance(opened, str) and _is_below(opened, _GUARDED):
                _refuse(f"opened {opened}")
    elif event == "subprocess.Popen":
        argv, env = args[1], args[3]
        if env is None or not _is_ours(argv):
            return
        home = _child_home(env)
        if home is None or _is_below(os.path.realpath(home), REAL_HOMES):
            command = " ".join(_words(argv)[:3])
            _refuse(f"started {command} with HOME={home!r}: give it the test's HOME (os.environ['HOME'])")


def _words(argv: Any) -> list[str]:
    return [os.fsdecode(word) for word in (argv if isinstance(argv, (list, tuple)) else [argv])]


def _is_ours(argv: Any) -> bool:
    """A command of this project that reads the user's home: its console script, Python running its
    package (``-m mail_imap_mcp``) or its command line (a server's harness, a compiler, ``ldconfig`` may
    be given an environment of their own without a home; so is the sandboxed document parser, on
    purpose: it reads nothing but its pipe)."""
    words = _words(argv)
    return any(
        os.path.basename(word).startswith("mail-imap-mcp")
        or (before == "-m" and word.split(".")[0] == "mail_imap_mcp")
        or "mail_imap_mcp.cli" in word
        for before, word in zip(["", *words], words, strict=False)
    )


def home_of_the_process() -> Path:
    """Give this process a temporary ``HOME`` (no ``XDG_*`` bases) and install the guard; returns it."""
    home = Path(tempfile.mkdtemp(prefix="mim-test-home-"))
    os.environ["HOME"] = str(home)
    for name in XDG_BASES:
        os.environ.pop(name, None)
    if not _installed:
        sys.addaudithook(_audit)  # for good: an audit hook cannot be removed
        _installed.append(True)
    return home


def remove_home(home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)
