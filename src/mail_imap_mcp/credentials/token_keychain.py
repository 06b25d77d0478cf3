"""Where a signed-in account's refresh token is kept: the OS keychain (:mod:`.keychain`, under the
secret-storage rule of :mod:`mail_imap_mcp.config.secret_storage`), in entries small enough for every platform's keychain.

The Windows Credential Manager holds at most 2,560 bytes in one credential (``CRED_MAX_CREDENTIAL_BLOB_SIZE``),
which keyring writes as UTF-16: 1,280 characters, and Microsoft's refresh tokens come close to that. So
a token longer than :data:`ENTRY_CHARS` is split over several entries (its *parts*), on every platform
alike, the same code everywhere.

A token is kept in one of two *slots*, each a header entry (the sequence number, when it was stored, the
SHA-256 of the whole token, and the token itself or the number of its parts) written after its parts. A
new token (at sign-in, or rotated by the provider) goes to the slot not holding the current one, and the
old slot is deleted only once the new header is written: a crash at any point leaves a complete slot,
and :meth:`KeychainRefreshTokens.load` takes the complete slot of the highest sequence, so a rotated
token, once stored, is never lost to a crash and the spent one is never presented again.

The entries are named by the sign-in's identity (:func:`sign_in_key`: the provider, client ID, tenant or
issuer and username), not by the account id, so two configurations whose accounts share an id (Claude
Desktop's bundle and a ``setup``-made ``default``) keep two sign-ins. An entry a release before kept under
the account id is taken over once, by the first identity of that account id that finds none of its own
(and whose ``legacy_ours`` agrees), and deleted there.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .keychain import delete_secret, find_secret, store_password

#: The keychain service of the slots' headers (the entry's user is the sign-in's key, or ``<key>/b``).
KEYCHAIN_SERVICE = "mail-imap-mcp oauth2"
#: The keychain service of the parts of a long token (user ``<key>/<slot>/<n>``).
PARTS_SERVICE = "mail-imap-mcp oauth2 part"
#: The most characters one entry holds: 2,000 bytes in UTF-16, under Windows' 2,560 with room to spare.
ENTRY_CHARS = 1000
_SLOTS = ("a", "b")


def sign_in_key(provider: str, client_id: str, where: str, username: str) -> str:
    """The name of a sign-in's entries, lock and record: ``<provider>.`` and a digest of who signs in
    where (``where``: the tenant, or a custom provider's issuer or endpoints; the username folded, as
    providers compare it)."""
    who = "\0".join((provider, client_id, where, username.casefold()))
    return f"{provider}.{hashlib.sha256(who.encode()).hexdigest()[:24]}"


@dataclass(frozen=True)
class _Slot:
    sequence: int
    stored_at: float
    refresh_token: str = field(repr=False)


class KeychainRefreshTokens:
    """One sign-in's refresh token in the OS keychain, with when it was last stored (for ``status``):
    the entries named ``key`` (:func:`sign_in_key`); ``legacy``: the account id whose entry of a release
    before is taken over when ``key`` has none and ``legacy_ours()`` says it is this sign-in's."""

    def __init__(
        self,
        key: str,
        legacy: str | None = None,
        legacy_ours: Callable[[], bool] = lambda: True,
        account_id: str | None = None,
    ) -> None:
        self.key = key
        self.legacy = legacy
        self._legacy_ours = legacy_ours
        self._setting = f"the sign-in of account {account_id or legacy or key!r}"

    @property
    def state_name(self) -> str:
        """The name of the sign-in's lock file and record (:mod:`.sign_in_state`)."""
        return self.key

    def _user(self, slot: str) -> str:
        # Slot "a" is the key itself: the entry a sign-in stored before there were slots.
        return self.key if slot == "a" else f"{self.key}/{slot}"

    def _read(self, slot: str) -> _Slot | None:
        """The slot's token when the slot is complete (its parts all there and matching its digest)."""
        stored = find_secret(KEYCHAIN_SERVICE, self._user(slot), self._setting)
        if stored is None:
            return None
        try:
            header = json.loads(stored)
        except ValueError:
            return None
        if not isinstance(header, dict):
            return None
        token = header.get("refresh_token")
        parts = header.get("parts")
        if not isinstance(token, str) and isinstance(parts, int) and 0 < parts <= 64:
            pieces = [
                find_secret(PARTS_SERVICE, f"{self._user(slot)}/{n}", self._setting) for n in range(parts)
            ]
            token = None if None in pieces else "".join(str(piece) for piece in pieces)
        if not isinstance(token, str) or not token:
            return None
        digest = header.get("sha256")
        if digest is not None and digest != hashlib.sha256(token.encode()).hexdigest():
            return None  # parts of another token: a store that did not finish
        sequence, stored_at = header.get("sequence", 0), header.get("stored_at")
        return _Slot(
            sequence if isinstance(sequence, int) else 0,
            float(stored_at) if isinstance(stored_at, (int, float)) else 0.0,
            token,
        )

    def _own(self) -> tuple[str, _Slot] | None:
        found = [(slot, read) for slot in _SLOTS if (read := self._read(slot)) is not None]
        return max(found, key=lambda pair: pair[1].sequence) if found else None

    def _current(self) -> tuple[str, _Slot] | None:
        return self._own() or self._take_over()

    def _take_over(self) -> tuple[str, _Slot] | None:
        """The legacy entry's token, moved under this key (once: the legacy entry is then deleted)."""
        if self.legacy is None or self.legacy == self.key:
            return None
        old = KeychainRefreshTokens(self.legacy)
        found = old._current()
        if found is None or not self._legacy_ours():
            return None
        self._store(found[1].refresh_token, found[1].stored_at)
        old.forget()
        return self._own()

    def load(self) -> str | None:
        current = self._current()
        return current[1].refresh_token if current else None

    def save(self, refresh_token: str) -> None:
        """Keep ``refresh_token`` in place of the one before, which stays until the new one is stored."""
        self._store(refresh_token, time.time())

    def _store(self, refresh_token: str, stored_at: float) -> None:
        current = self._own()
        slot = "b" if current is not None and current[0] == "a" else "a"
        user = self._user(slot)
        header: dict[str, object] = {
            "sequence": (current[1].sequence + 1) if current else 1,
            "stored_at": stored_at,
            "sha256": hashlib.sha256(refresh_token.encode()).hexdigest(),
        }
        if len(refresh_token) + 200 <= ENTRY_CHARS:
            header["refresh_token"] = refresh_token
        else:
            pieces = [refresh_token[i : i + ENTRY_CHARS] for i in range(0, len(refresh_token), ENTRY_CHARS)]
            for number, piece in enumerate(pieces):
                store_password(PARTS_SERVICE, f"{user}/{number}", piece, self._setting)
            header["parts"] = len(pieces)
        store_password(KEYCHAIN_SERVICE, user, json.dumps(header), self._setting)
        for other in _SLOTS:
            if other != slot:
                self._forget_slot(other)

    def _forget_slot(self, slot: str) -> None:
        user = self._user(slot)
        stored = find_secret(KEYCHAIN_SERVICE, user, self._setting)
        delete_secret(KEYCHAIN_SERVICE, user, self._setting)  # the header first: the slot is then gone
        try:
            parts = json.loads(stored).get("parts") if stored else None
        except (ValueError, AttributeError):
            parts = None
        for number in range(parts if isinstance(parts, int) and 0 < parts <= 64 else 0):
            delete_secret(PARTS_SERVICE, f"{user}/{number}", self._setting)

    def forget(self) -> None:
        for slot in _SLOTS:
            self._forget_slot(slot)

    def stored_at(self) -> float | None:
        """When the refresh token was last stored (at sign-in or on a rotation), as a Unix time."""
        current = self._current()
        return current[1].stored_at if current and current[1].stored_at else None

    def where(self) -> str:
        return "in the OS keychain"
