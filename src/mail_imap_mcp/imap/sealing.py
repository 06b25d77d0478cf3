"""The key that seals search cursors and changes tokens, so that an edited or forged one is refused.

Every cursor and token this server hands out ends in an HMAC-SHA256 of its content under one secret
key. The key lives in the state directory (``[server] state_dir``, file :data:`KEY_FILE`, mode 0600),
made on first use, so cursors and tokens survive a restart and every process started with the same
configuration follows the others' cursors. Where the directory cannot be written, the process seals
with a key of its own (a warning says so): its cursors and tokens then end with it, and a later process
refuses them as ``invalid_input``, with the advice to start over (docs/security.md, L2). With ``[state]
redis_url`` the key is the one every instance shares (:func:`use_key`), kept in Redis.

Each user's cursors and tokens are sealed under a key of their own too (derived from the key and the
user's name, :data:`~mail_imap_mcp.state.current_user`): a team user's seal is the first half of the
server's seal followed by the first half of the user's. So a cursor or token another user was given is
told from a forged one (:func:`sealed_for_another`: the server's half holds, the user's does not) and
said as something that does not exist, while a garbled one stays ``invalid_input``. A one-person
server's seals are the server's alone, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import sys
from pathlib import Path

from mail_imap_mcp.state import current_user

log = logging.getLogger("mail_imap_mcp.imap")

KEY_FILE = "seal.key"
_KEY_BYTES = 32
_key = secrets.token_bytes(_KEY_BYTES)


def default_state_dir() -> Path:
    """Where state is kept unless configured: ``%LOCALAPPDATA%\\mail-imap-mcp`` on Windows, else
    ``$XDG_STATE_HOME/mail-imap-mcp`` (``~/.local/state/mail-imap-mcp``)."""
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "mail-imap-mcp"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mail-imap-mcp"


def load_key(state_dir: Path) -> bool:
    """Seal with the key kept in ``state_dir`` (made there when missing); True when it is in use, False
    when the directory cannot hold it (this process then keeps a key of its own)."""
    global _key
    state_dir = state_dir.expanduser()
    path = state_dir / KEY_FILE
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            _create(path)
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError) as exc:
        log.warning(
            "cursors and changes tokens are sealed with a key of this process only (%s: %s): they will "
            "not be accepted after a restart; set [server] state_dir to a writable directory",
            path,
            getattr(exc, "strerror", None) or exc,
        )
        return False
    if len(key) != _KEY_BYTES:
        log.warning("%s does not hold a key of %d bytes; using a key of this process only", path, _KEY_BYTES)
        return False
    _key = key
    return True


def use_key(key: bytes) -> None:
    """Seal with ``key`` (the secret every instance sharing ``[state]`` uses) instead of the file's."""
    global _key
    if len(key) != _KEY_BYTES:
        raise ValueError(f"a sealing key has {_KEY_BYTES} bytes")
    _key = key


def _create(path: Path) -> None:
    """Write a new key to ``path``, unless another process just did (then its key is the one)."""
    temporary = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(_KEY_BYTES) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)  # fails when another process linked its key first: theirs wins
    finally:
        temporary.unlink(missing_ok=True)


def _user_key() -> bytes:
    user = current_user.get()
    if not user:  # a one-person server: the key itself, so existing cursors stay valid
        return _key
    return hmac.new(_key, b"mail-imap-mcp user\0" + user.encode(), hashlib.sha256).digest()


def user_digest(data: bytes, size: int) -> bytes:
    """The first ``size`` bytes of the HMAC-SHA256 of ``data`` under the current user's key alone."""
    return hmac.new(_user_key(), data, hashlib.sha256).digest()[:size]


def _server_digest(data: bytes, size: int) -> bytes:
    return hmac.new(_key, data, hashlib.sha256).digest()[:size]


def mac(data: bytes, size: int) -> bytes:
    """The seal of ``data`` for the current user, ``size`` bytes: the HMAC-SHA256 under the server's key
    (nobody in particular), else half of it followed by half of the one under the user's key."""
    if not current_user.get():
        return _server_digest(data, size)
    half = size // 2
    return _server_digest(data, half) + user_digest(data, size - half)


def matches(data: bytes, check: bytes) -> bool:
    """Whether ``check`` is the seal of ``data`` (compared in constant time)."""
    return len(check) > 0 and hmac.compare_digest(check, mac(data, len(check)))


def sealed_for_another(data: bytes, check: bytes) -> bool:
    """Whether ``check``, not the current team user's seal of ``data``, is this server's seal of it for
    another user (the server's half holds); False on a one-person server."""
    half = len(check) // 2
    return (
        bool(current_user.get())
        and half > 0
        and hmac.compare_digest(check[:half], _server_digest(data, half))
        and not matches(data, check)
    )
