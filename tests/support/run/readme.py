"""The documentation's runnable snippets: the fenced block after each ``<!-- readme-test: NAME -->`` marker,
in the README or the page of docs/ its command moved to (``INSTALL``, ``HTTP``, ``USAGE``, ``INDEX``)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"
DOCS = README.parent / "docs"
#: The install without the bundle, each client's entry, ``check`` and the configuration file.
INSTALL = DOCS / "install.md"
#: Serving over HTTP, and a team.
HTTP = DOCS / "http.md"
#: The tools in use: the tool surface, polling for changes.
USAGE = DOCS / "usage.md"
#: The local index: turning it on, building it ahead.
INDEX = DOCS / "index.md"


def readme_block(name: str, document: Path = README) -> str:
    """The code of the block marked ``readme-test: NAME`` in the README (or ``document``, another page of
    the documentation); the test fails if there is none."""
    match = re.search(rf"<!-- readme-test: {name} -->\n```\w+\n(.*?)```", document.read_text(), re.DOTALL)
    assert match, f"{document.name} has no block marked readme-test: {name}"
    return match.group(1)
