"""The installed package's version, without importing the server (``mail-imap-mcp --version``)."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version


@functools.cache  # importlib.metadata reads every installed distribution's metadata: once per process
def package_version() -> str:
    try:
        return version("mail-imap-mcp")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
