"""``[server]``'s folders of the user's own computer: ``attachment_dirs``, the only folders a draft's
files are read from, and ``download_dir``, the only folder attachments are saved to. Both off by
default, both refused over the HTTP transport (the server's files are not the caller's). The rules that
keep each file inside are ``local_files/``'s; docs/security.md, "Local files"."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from .errors import ConfigError

ATTACHMENT_DIRS_ENV = "MAIL_IMAP_ATTACHMENT_DIRS"
DOWNLOAD_DIR_ENV = "MAIL_IMAP_DOWNLOAD_DIR"
#: The variables that set them, beside no account.
LOCAL_FILES_ENV = (ATTACHMENT_DIRS_ENV, DOWNLOAD_DIR_ENV)


def _absolute(folder: Path) -> Path:
    expanded = folder.expanduser()
    if not expanded.is_absolute():
        raise ValueError(f"{str(folder)!r} must be an absolute folder (or start with ~)")
    return expanded


def _absolute_each(folders: tuple[Path, ...]) -> tuple[Path, ...]:
    return tuple(_absolute(folder) for folder in folders)


def _absolute_or_none(folder: Path | None) -> Path | None:
    return None if folder is None else _absolute(folder)


AttachmentDirs = Annotated[
    tuple[Path, ...],
    AfterValidator(_absolute_each),
    Field(
        description="Folders of this computer whose files a draft may attach, named by path (absolute, or "
        "relative to the one folder holding it); no other file is ever read (docs/security.md, Local "
        f"files). Empty (the default): off. Refused over the HTTP transport. {ATTACHMENT_DIRS_ENV} sets "
        "it (folders separated by ':', ';' on Windows).",
    ),
]
DownloadDir = Annotated[
    Path | None,
    AfterValidator(_absolute_or_none),
    Field(
        description="The folder imap_get_attachment saves attachments to when asked: a new file each, "
        "under a safe name from the attachment's own, never overwriting, mode 0600. Unset (the default): "
        f"off, and the tool offers no save. Refused over the HTTP transport. {DOWNLOAD_DIR_ENV} sets it.",
    ),
]


def from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The ``[server]`` keys the environment sets (its variables already without the empty ones)."""
    found: dict[str, Any] = {}
    if ATTACHMENT_DIRS_ENV in env:
        found["attachment_dirs"] = [
            part for part in env[ATTACHMENT_DIRS_ENV].split(os.pathsep) if part.strip()
        ]
    if DOWNLOAD_DIR_ENV in env:
        found["download_dir"] = env[DOWNLOAD_DIR_ENV]
    return found


def refuse_over_http(attachment_dirs: tuple[Path, ...], download_dir: Path | None, transport: str) -> None:
    """:class:`ConfigError` naming each of the settings that is set: over ``transport`` the files of the
    server's computer are not the caller's to attach or to receive."""
    named = [
        name
        for name, value in (("attachment_dirs", attachment_dirs), ("download_dir", download_dir))
        if value
    ]
    if named:
        raise ConfigError(
            f"{' and '.join(named)} in [server] (or {ATTACHMENT_DIRS_ENV} / {DOWNLOAD_DIR_ENV}) cannot be used "
            f"over {transport}: the files of the server's computer are not its callers'. Remove "
            f"{'them' if len(named) > 1 else 'it'}, or serve over stdio."
        )
