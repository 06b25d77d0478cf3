"""A page's secret address kept off the browser's command line where the owner of a loopback connection is
not known (:func:`.local_peer.checks_peers` false: macOS, Windows): the browser is given a file only this
user can read, which forwards to the address (as Jupyter's ``use_redirect_file`` does).

The file is made in a directory of this user's alone (mode 0700, checked; on Windows, its access list,
as :mod:`mail_imap_mcp.config.secret_storage` checks a secret file's), under the per-user temporary
directory (macOS's ``$TMPDIR``, Windows' ``%TEMP%``), mode 0600. It is deleted :data:`KEEP_S` after it was
written, and files left by a process that crashed are deleted when the next one is written.
"""

from __future__ import annotations

import html
import os
import stat
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["KEEP_S", "UnsafeDirectory", "write_redirect_file"]

#: How long a redirect file is kept: a browser starting cold reads it within that.
KEEP_S = 120.0
_PREFIX = "open-"


class UnsafeDirectory(OSError):
    """The redirect file's directory is not this user's alone: the address is not written there."""


def default_directory() -> Path:
    return Path(tempfile.gettempdir()) / f"mail-imap-mcp-{_user_tag()}"


def _user_tag() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


def _private_directory(directory: Path) -> None:
    directory.mkdir(mode=0o700, exist_ok=True)
    if hasattr(os, "getuid"):
        status = directory.lstat()
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o077:
            raise UnsafeDirectory(f"{directory} is not a directory of this user's alone (mode 0700)")
        return
    from mail_imap_mcp.config.secret_storage import windows_acl_problem
    from mail_imap_mcp.config.windows_acl import read_acl

    problem = windows_acl_problem(*read_acl(directory))
    if problem is not None:
        raise UnsafeDirectory(f"{directory} is not this user's alone: {problem}")


def _sweep(directory: Path, now: float) -> None:
    for old in directory.glob(f"{_PREFIX}*.html"):
        try:
            if now - old.stat().st_mtime > KEEP_S:
                old.unlink()
        except OSError:
            pass


def write_redirect_file(url: str, directory: Path | None = None, keep_s: float = KEEP_S) -> Path:
    """A new file, readable by this user alone, whose page forwards the browser to ``url``; deleted after
    ``keep_s`` seconds. :class:`UnsafeDirectory` (an OSError) when its directory is not private."""
    where = directory or default_directory()
    _private_directory(where)
    _sweep(where, time.time())
    descriptor, name = tempfile.mkstemp(prefix=_PREFIX, suffix=".html", dir=where)  # mode 0600
    target = html.escape(url, quote=True)
    page = (
        '<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
        f'<meta http-equiv="refresh" content="0;url={target}"><title>mail-imap-mcp</title>'
        f'<p>Opening mail-imap-mcp\'s page: <a href="{target}">continue</a>.'
    )
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(page)
    path = Path(name)
    timer = threading.Timer(keep_s, path.unlink, kwargs={"missing_ok": True})
    timer.daemon = True
    timer.start()
    return path
