"""The key that seals search cursors and changes tokens, so that an edited or forged one is refused.

Every cursor and token this server hands out ends in an HMAC-SHA256 of its content under one secret
key. The key lives in the state directory (``[server] state_dir``, file :data:`KEY_FILE`, mode 0600),
made on first use, so cursors and tokens survive a restart and every process started with the same
configuration follows the others' cursors. Where the directory cannot be written, the process seals
with a key of its own (a warning says so): its cursors and tokens then end with it, and a later process
refuses them as ``invalid_input``, with the advice to start over (docs/security.md, L2). With ``[state]
redis_url`` the key is the one every instance shares (:func:`use_key`), kept in Redis.

Each team user's cursors and tokens are sealed under a key of their own (derived from the key and the
user's name, the call's :class:`~mail_imap_mcp.state.Caller`, handed to each function here as ``user``): one MAC over the user's mark and the content,
followed by the mark, :data:`USER_MARK_BYTES` naming the user (an HMAC of the name under the server's
key: it shows nobody's name). A cursor or token whose mark is another user's is said as something that
does not exist (:func:`sealed_for_another`), one with the user's own mark whose MAC fails is garbled
(``invalid_input``): which refusal comes depends only on the mark, never on any part of the MAC, so a
forger learns nothing of the MAC from it (regression: the seal was two halves, the server's and the
user's, and whether the first held was told apart, so each half could be found on its own). A
one-person server's seals are the server's alone, as before.
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


def _user_key(user: str) -> bytes:
    if not user:  # a one-person server: the key itself, so existing cursors stay valid
        return _key
    return hmac.new(_key, b"mail-imap-mcp user\0" + user.encode(), hashlib.sha256).digest()


#: Bytes of a team user's mark, after the MAC of their seals (another user's mark is told from one's
#: own; two users share one with a chance of one in 2**24, and then another's token is merely garbled).
USER_MARK_BYTES = 3


def user_digest(data: bytes, size: int, user: str) -> bytes:
    """The first ``size`` bytes of the HMAC-SHA256 of ``data`` under the key of ``user`` alone."""
    return hmac.new(_user_key(user), data, hashlib.sha256).digest()[:size]


def _user_mark(user: str) -> bytes:
    return hmac.new(_key, b"mail-imap-mcp user mark\0" + user.encode(), hashlib.sha256).digest()[
        :USER_MARK_BYTES
    ]


def seal_size(size: int, user: str) -> int:
    """How long ``user``'s seal of a ``size``-byte MAC is (:func:`mac`)."""
    return size + USER_MARK_BYTES if user else size


def mac(data: bytes, size: int, user: str) -> bytes:
    """The seal of ``data`` for ``user``, :func:`seal_size` bytes: the HMAC-SHA256 under the server's key
    (nobody in particular: ``""``), else one under the user's key over their mark and ``data``, ``size``
    bytes, followed by the mark."""
    if not user:
        return hmac.new(_key, data, hashlib.sha256).digest()[:size]
    mark = _user_mark(user)
    return user_digest(mark + data, size, user) + mark


def matches(data: bytes, check: bytes, user: str) -> bool:
    """Whether ``check`` is ``user``'s seal of ``data`` (the whole MAC, compared in constant time)."""
    size = len(check) - (USER_MARK_BYTES if user else 0)
    return size > 0 and hmac.compare_digest(check, mac(data, size, user))


def sealed_for_another(check: bytes, user: str) -> bool:
    """Whether the seal ``check`` is marked for another user than team ``user`` (decided on the mark
    alone, never on the MAC); False for nobody in particular (a one-person server)."""
    if not user or len(check) <= USER_MARK_BYTES:
        return False
    return not hmac.compare_digest(check[-USER_MARK_BYTES:], _user_mark(user))
