"""What a signed-in account keeps beside the configuration, none of it secret: the lock file that lets
one process at a time spend the refresh token, and the record ``status`` reads (who signed in, when, and
when a refresh last succeeded).

Both live in :func:`sign_in_dir` (``sign-in/`` in the default configuration's directory), named after
where the refresh token is kept (:func:`state_name`): by the sign-in's key as the keychain entry is
(:func:`~.token_keychain.sign_in_key`: provider, client ID, tenant or issuer, username), since every
process of the user that signs in as that identity (Claude Desktop's server and Claude Code's, whatever
``--config`` or account id each was given) meets the same keychain entry, so they must meet the same
lock, and two configurations whose accounts share an id but not an identity hold two sign-ins; by the
account id and the file for an ``oauth2_token_file``, since two configurations whose accounts share an
id but not a file hold two sign-ins (perhaps of two users), which must not read each other's record.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mail_imap_mcp.config.accounts import DEFAULT_CONFIG_PATH, AccountConfig
from mail_imap_mcp.config.sign_in import SignInProvider

from .token_file import SETTING, FileRefreshTokens
from .token_keychain import KeychainRefreshTokens, sign_in_key

if TYPE_CHECKING:
    from .refresh import RefreshTokenStore

#: How often a process waiting for another's refresh tries the lock again.
_LOCK_POLL_S = 0.05


def sign_in_dir() -> Path:
    """The directory of the lock files and records (made, mode 0700, on first use)."""
    return DEFAULT_CONFIG_PATH.expanduser().parent / "sign-in"


def state_name(account_id: str, store: RefreshTokenStore | None = None) -> str:
    """The name of the lock file and record of the sign-in kept in ``store`` (None: the keychain entry of
    a release before, named by the account id)."""
    if isinstance(store, KeychainRefreshTokens):
        return store.state_name
    if not isinstance(store, FileRefreshTokens):
        return account_id
    digest = hashlib.sha256(os.fsencode(store.path.resolve())).hexdigest()[:16]
    return f"{account_id}.file-{digest}"


class LockTimeout(Exception):
    """Another process held the account's sign-in lock for the whole time given."""


@contextmanager
def refresh_lock(account_id: str, timeout_s: float, store: RefreshTokenStore | None = None) -> Iterator[None]:
    """Hold the cross-process lock of the account's sign-in kept in ``store`` (an OS lock on
    ``<state_name>.lock``: released by the OS when the holder ends, even by a crash);
    :class:`LockTimeout` after ``timeout_s`` seconds of waiting."""
    directory = sign_in_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(directory / f"{state_name(account_id, store)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while not _try_lock(descriptor):
            if time.monotonic() >= deadline:
                raise LockTimeout(f"another process was refreshing the sign-in of {account_id!r}")
            time.sleep(_LOCK_POLL_S)
        try:
            yield
        finally:
            _unlock(descriptor)
    finally:
        os.close(descriptor)


def _try_lock(descriptor: int) -> bool:
    try:
        return _try_os_lock(descriptor)
    except ImportError as exc:  # neither fcntl nor msvcrt (only a simulated platform lacks both)
        raise OSError(f"no file lock on this platform: {exc}") from None


def _try_os_lock(descriptor: int) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(descriptor: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        os.lseek(descriptor, 0, os.SEEK_SET)
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(descriptor, fcntl.LOCK_UN)


@dataclass(frozen=True)
class SignInRecord:
    """What ``status`` says of a sign-in (Unix times; ``signed_in_as`` from the ID token, when the
    provider gave one)."""

    signed_in_as: str | None = None
    signed_in_at: float | None = None
    refreshed_at: float | None = None


def _record_path(account_id: str, store: RefreshTokenStore | None) -> Path:
    return sign_in_dir() / f"{state_name(account_id, store)}.json"


def read_record(account_id: str, store: RefreshTokenStore | None = None) -> SignInRecord:
    """The record of the account's sign-in kept in ``store`` (empty when there is none or it cannot be
    read)."""
    try:
        raw = json.loads(_record_path(account_id, store).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return SignInRecord()
    if not isinstance(raw, dict):
        return SignInRecord()
    who = raw.get("signed_in_as")
    times = {key: raw.get(key) for key in ("signed_in_at", "refreshed_at")}
    return SignInRecord(
        who if isinstance(who, str) else None,
        **{key: float(value) if isinstance(value, (int, float)) else None for key, value in times.items()},
    )


def write_record(account_id: str, record: SignInRecord, store: RefreshTokenStore | None = None) -> None:
    """Replace the record of the account's sign-in kept in ``store`` (written to a new file, then
    renamed over the old one)."""
    directory = sign_in_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = _record_path(account_id, store)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(asdict(record)), encoding="utf-8")
    os.replace(temporary, path)


def refresh_token_store(account_id: str, account: AccountConfig) -> KeychainRefreshTokens | FileRefreshTokens:
    """Where the account's refresh token is kept: its ``oauth2_token_file``, else the OS keychain under
    the sign-in's identity (an entry kept under the account id by a release before is taken over once,
    unless its record names someone else)."""
    if account.oauth2_token_file is not None:
        return FileRefreshTokens(account.oauth2_token_file, account.setting(SETTING))
    assert account.oauth2_provider is not None and account.oauth2_client_id is not None
    where = {
        SignInProvider.MICROSOFT: account.oauth2_tenant,
        SignInProvider.GOOGLE: "",
    }.get(account.oauth2_provider) or "\0".join(
        filter(None, (account.oauth2_issuer, account.oauth2_authorization_url, account.oauth2_token_url))
    )
    key = sign_in_key(account.oauth2_provider.value, account.oauth2_client_id, where, account.username)
    return KeychainRefreshTokens(
        key, account_id, lambda: _take_over_record(account_id, key, account.username), account_id
    )


def _take_over_record(account_id: str, key: str, username: str) -> bool:
    """Whether the sign-in a release before kept under ``account_id`` may be this one's (its record names
    nobody, or ``username``); if so, its record becomes the record of ``key``."""
    who = read_record(account_id).signed_in_as
    if who is not None and who.casefold() != username.casefold():
        return False
    with suppress(OSError):
        sign_in_dir().joinpath(f"{account_id}.json").replace(sign_in_dir() / f"{key}.json")
    return True


def keep_sign_in(
    account_id: str, refresh_token: str, signed_in_as: str | None, store: RefreshTokenStore | None = None
) -> None:
    """Keep a new sign-in's refresh token in ``store`` (default: the keychain) under the account's lock,
    so a running server never spends the token it replaces, and record who signed in, and when."""
    with refresh_lock(account_id, 30.0, store):
        (store or KeychainRefreshTokens(account_id)).save(refresh_token)
    write_record(account_id, SignInRecord(signed_in_as, time.time()), store)


def forget_record(account_id: str, store: RefreshTokenStore | None = None) -> None:
    _record_path(account_id, store).unlink(missing_ok=True)


def note_refresh(account_id: str, store: RefreshTokenStore | None = None) -> None:
    """Record that a refresh of the account's sign-in kept in ``store`` succeeded now (a record that
    cannot be written is left as it was: ``status`` then says less, the sign-in works on)."""
    record = read_record(account_id, store)
    with suppress(OSError):
        write_record(account_id, SignInRecord(record.signed_in_as, record.signed_in_at, time.time()), store)
