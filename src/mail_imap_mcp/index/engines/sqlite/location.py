"""Where an account's SQLite index lives, and opening it safely (the SQLite engine's places,
:mod:`.engine`).

One file per account and identity, ``<index_dir>/<account>.<tag>.sqlite3`` (:func:`identity_index_path`:
``tag`` a digest of the server, port and user name, so two configurations whose accounts share an id keep
two files; ``[server] index_dir``; by default the platform's
user data directory from platformdirs: ``~/.local/share/mail-imap-mcp/index`` on Linux,
``~/Library/Application Support/mail-imap-mcp/index`` on macOS, ``%LOCALAPPDATA%\\mail-imap-mcp\\index`` on
Windows). The directory is made 0700 and the file 0600 before SQLite opens it (SQLite gives its WAL
and shared-memory files the same mode); a file or directory others can read is refused, as the index
holds the text of mail. A file SQLite cannot read, or one that is not this index, is moved aside
(``<name>.unusable-<time>``) and a new one built, with a warning; the copies moved aside are deleted
once a build of the same identity completes (:func:`discard_aside`).

A file a release before kept as ``<account>.sqlite3`` (one per account id) is taken over by the identity
it records (:func:`take_over`): renamed, once, to that identity's name.

Each file records the account it indexes (:func:`account_identity`: the server, port and user name, and
a team user's tag in the file's name): a file of another account of the same id is moved aside in the
same way, never rebuilt in place; a file that records none (made before the record) records the first
account that opens it. A full disk or an I/O error never moves a file aside (:class:`IndexWriteFailed`).

A team user's index of an account served to them (``index_per_user = true``) is
``<account>~<tag>.sqlite3`` in the same directory: ``tag`` a keyed digest of the user (under the key that
seals their cursors, :mod:`mail_imap_mcp.mail.sealing`), so the file names nobody and cannot be
guessed from a name.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import sys
import time
from pathlib import Path

import platformdirs

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engine import Opened
from mail_imap_mcp.index.engines.sqlite.schema import recorded_identity
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import IndexPermissions, IndexUnusable
from mail_imap_mcp.mail import sealing

log = logging.getLogger("mail_imap_mcp.index")

SUFFIX = ".sqlite3"
#: Between an account's id and a team user's tag in the name of the user's index file.
USER_SEPARATOR = "~"
#: Bytes of the keyed digest naming a team user's index file (hex in the name).
USER_TAG_BYTES = 12
#: Hex digits of the digest of an account's identity in the name of its index file.
IDENTITY_TAG_CHARS = 12
_COMPANIONS = ("-wal", "-shm")


def default_index_dir() -> Path:
    """The platform's user data directory for the index."""
    return Path(platformdirs.user_data_dir("mail-imap-mcp", appauthor=False)) / "index"


def index_path(index_dir: Path | None, account_id: str) -> Path:
    """The file of ``account_id``'s index."""
    return (index_dir or default_index_dir()).expanduser() / f"{account_id}{SUFFIX}"


def identity_index_path(index_dir: Path | None, account_id: str, account: AccountConfig) -> Path:
    """The file of ``account_id``'s index of the account ``account`` names (its server, port and user
    name), ``<account>.<tag>.sqlite3``: two configurations whose accounts share an id keep two files."""
    who = "\0".join((account.host.lower(), str(account.effective_port), account.username))
    tag = hashlib.sha256(who.encode()).hexdigest()[:IDENTITY_TAG_CHARS]
    return index_path(index_dir, f"{account_id}.{tag}")


def take_over(legacy: Path, path: Path, identity: str, companions: tuple[str, ...] = ()) -> bool:
    """Rename the file a release before kept at ``legacy`` (and ``companions``: suffixes of what lives
    beside it) to ``path``, when it records ``identity``, ``path`` has no file yet, and no other process
    has it open (its WAL then stays: taken over by a later start); whether it was."""
    if path.exists() or not legacy.exists() or recorded_identity(legacy) != identity:
        return False
    if any(Path(f"{legacy}{companion}").exists() for companion in _COMPANIONS):
        return False
    try:
        legacy.replace(path)
    except FileNotFoundError:  # taken over meanwhile by another process of the same identity
        return False
    for companion in companions:
        source = Path(f"{legacy}{companion}")
        if source.exists():
            source.replace(Path(f"{path}{companion}"))
    log.info("index file %s taken over as %s", legacy, path)
    return True


def discard_aside(path: Path, identity: str | None, legacy: Path | None = None) -> list[Path]:
    """Delete the copies of the index at ``path`` moved aside (``<name>.unusable-<time>``), and those of
    ``legacy`` that record ``identity``: a build of this identity completed. The paths deleted."""
    found = [
        aside for aside in path.parent.glob(f"{path.name}.unusable-*") if not aside.name.endswith(_COMPANIONS)
    ]
    if legacy is not None and identity is not None:
        found += [
            aside
            for aside in path.parent.glob(f"{legacy.name}.unusable-*")
            if not aside.name.endswith(_COMPANIONS) and recorded_identity(aside) == identity
        ]
    removed = []
    for aside in found:
        for companion in ("", *_COMPANIONS):
            target = Path(f"{aside}{companion}")
            if target.is_file():
                target.unlink(missing_ok=True)
                removed.append(target)
    return removed


def user_tag(account_id: str, user: str) -> str:
    """The tag that names team ``user``'s index of ``account_id`` in every engine (a file's name, a
    schema's): a keyed digest, in hex, that names nobody (``user`` folded as a
    :class:`~mail_imap_mcp.state.Caller`'s is: :func:`~mail_imap_mcp.state.fold_user`)."""
    return sealing.user_digest(b"mail-imap-mcp index\0" + account_id.encode(), USER_TAG_BYTES, user).hex()


def user_index_path(index_dir: Path | None, account_id: str, user: str) -> Path:
    """The file of team ``user``'s index of ``account_id`` (:func:`user_tag`)."""
    return index_path(index_dir, f"{account_id}{USER_SEPARATOR}{user_tag(account_id, user)}")


def user_index_paths(index_dir: Path | None, account_id: str) -> list[Path]:
    """The index files of every team user of ``account_id`` found in the directory."""
    folder = (index_dir or default_index_dir()).expanduser()
    return sorted(folder.glob(f"{account_id}{USER_SEPARATOR}*{SUFFIX}"))


def account_identity(account: AccountConfig, path: Path) -> str:
    """What the index file at ``path`` records of the account it indexes: a digest of the server, port
    and user name, and of the file's name (a team user's tag), so that two accounts of one id never
    share rows."""
    who = "\0".join((account.host.lower(), str(account.effective_port), account.username, path.name))
    return hashlib.sha256(who.encode()).hexdigest()


def _check_private(path: Path) -> None:
    if sys.platform == "win32":  # the user's profile directory is private by ACL
        return
    mode = path.stat().st_mode
    if mode & (stat.S_IROTH | stat.S_IWOTH | stat.S_IRGRP | stat.S_IWGRP):
        raise IndexPermissions(path, mode)


def _prepare(path: Path) -> None:
    """Make the directory (0700) and the file (0600) where missing; refuse either when others can read it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(path.parent)
    if not path.exists():
        descriptor = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(descriptor)
    _check_private(path)


def open_index(path: Path, identity: str | None = None, kind: type[SqliteStore] = SqliteStore) -> Opened:
    """The index at ``path`` of the account ``identity`` names (:func:`account_identity`; None: not
    checked), a store of ``kind``: made where missing, moved aside and made again where unusable or
    another account's. A write refused (:class:`IndexWriteFailed`: a full disk) leaves the file where it
    is."""
    _prepare(path)
    try:
        return Opened(kind(path, identity=identity))
    except IndexUnusable as exc:
        warning = f"the index file was unusable ({exc}); it was moved to {move_aside(path)} and is being built again"
        log.warning("%s", warning)
        _prepare(path)
        return Opened(kind(path, identity=identity), warning)


def move_aside(path: Path) -> Path:
    """Move the index file (and its WAL companions) to ``<name>.unusable-<time>``; where it went."""
    aside = path.with_name(f"{path.name}.unusable-{time.strftime('%Y%m%dT%H%M%S')}")
    for companion in ("", *_COMPANIONS):
        source = Path(f"{path}{companion}")
        if source.exists():
            source.replace(Path(f"{aside}{companion}"))
    return aside


def drop_index(path: Path) -> list[Path]:
    """Delete the index file and its WAL companions; the paths removed."""
    removed = []
    for companion in ("", *_COMPANIONS):
        target = Path(f"{path}{companion}")
        if target.exists():
            target.unlink()
            removed.append(target)
    return removed
