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
from .switches import DOWNLOAD_DIR

ATTACHMENT_DIRS_ENV = "MAIL_IMAP_ATTACHMENT_DIRS"
DOWNLOAD_DIR_ENV = DOWNLOAD_DIR.env
#: The variables that set them, beside no account.
LOCAL_FILES_ENV = (ATTACHMENT_DIRS_ENV, DOWNLOAD_DIR_ENV)


#: Folders of well-known secrets (keys, tokens, keychains): a folder holding one at its top is never one
#: whose files a draft may attach.
SECRET_FOLDERS = (".ssh", ".gnupg", ".aws", ".config", ".local/share/keyrings", "Library/Keychains")


def _absolute(folder: Path) -> Path:
    expanded = folder.expanduser()
    if not expanded.is_absolute():
        raise ValueError(f"{str(folder)!r} must be an absolute folder (or start with ~)")
    return expanded


def _too_wide(folder: Path) -> str | None:
    """Why ``folder`` (absolute) may not be shared: the filesystem root, the user's home, or a folder
    holding it (their keys and passwords are in it); symlinks followed."""
    resolved = folder.resolve()
    if resolved.parent == resolved:
        return "is the root of the filesystem"
    home = Path.home().resolve()
    if resolved == home:
        return "is the user's home folder itself"
    if resolved in home.parents:
        return "holds the user's home folder"
    return None


def _refused(folder: Path, why: str | None) -> ValueError:
    return ValueError(
        f"{str(folder)!r} {why}, where the user's keys and passwords are: name the folders of the files "
        "meant for it (~/Documents, ~/Downloads) instead (docs/security.md, Local files)"
    )


def _shareable(folder: Path) -> Path:
    """``folder`` made absolute, refused where it is too wide (:func:`_too_wide`) or holds a folder of
    well-known secrets at its top (:data:`SECRET_FOLDERS`)."""
    absolute = _absolute(folder)
    why = _too_wide(absolute) or next(
        (f"holds {name}" for name in SECRET_FOLDERS if (absolute / name).exists()), None
    )
    if why is not None:
        raise _refused(folder, why)
    return absolute


def _shareable_each(folders: tuple[Path, ...]) -> tuple[Path, ...]:
    return tuple(_shareable(folder) for folder in folders)


def _download_folder(folder: Path | None) -> Path | None:
    """``folder`` made absolute, refused where it is too wide (:func:`_too_wide`)."""
    if folder is None:
        return None
    absolute = _absolute(folder)
    why = _too_wide(absolute)
    if why is not None:
        raise _refused(folder, why)
    return absolute


AttachmentDirs = Annotated[
    tuple[Path, ...],
    AfterValidator(_shareable_each),
    Field(
        description="Folders of this computer whose files a draft may attach, named by path (absolute, or "
        "relative to the one folder holding it); no other file is ever read (docs/security.md, Local "
        "files). Empty (the default): off. Never the root, the home folder, a folder holding it, or one "
        f"holding .ssh, .gnupg, .aws or .config. Refused over the HTTP transport. {ATTACHMENT_DIRS_ENV} sets "
        "it (folders separated by ':', ';' on Windows).",
    ),
]
DownloadDir = Annotated[
    Path | None,
    AfterValidator(_download_folder),
    Field(
        description="The folder imap_get_attachment saves attachments to when asked: a new file each, "
        "under a safe name from the attachment's own, never overwriting, mode 0600; made (0700) when "
        "missing and the folder holding it exists. Unset (the default): "
        "off, and the tool offers no save. Never the root, the home folder or a folder holding it. "
        f"Refused over the HTTP transport. {DOWNLOAD_DIR_ENV} sets it.",
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
