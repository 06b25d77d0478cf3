"""The per-user seal of cursors and changes tokens (mail/sealing.py): one MAC under the user's key, and
a refusal that tells nothing of which part of a forged seal was right."""

from __future__ import annotations

import base64

import pytest

from mail_imap_mcp.imap.changes_token import ChangesToken, ChangesTokenError, ForeignChangesToken
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.cursors import PACKED_TAG, ForeignCursor, unseal_packed

BOB, ALICE = "bob@corp.example", "alice@corp.example"
BODY = bytes([PACKED_TAG]) + b"\x01\x02\x03"
TOKEN = ChangesToken("default", "INBOX", 7, 50, 0, 0, (3, 9, 40), None)


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def forgeries(sealed: bytes, size: int) -> list[bytes]:
    """``sealed`` (a seal of ``size`` MAC bytes, then the rest) with its MAC right in its first
    0, 1, ..., size - 1 bytes only, the others flipped."""
    return [
        sealed[:right] + bytes(b ^ 0x5A for b in sealed[right:size]) + sealed[size:] for right in range(size)
    ]


def test_a_forged_cursor_is_refused_alike_whichever_part_of_its_seal_is_right() -> None:
    """Regression: the seal was two halves, the server's and the user's, and a cursor whose first half
    held was refused as another user's (not_found), any other as garbled (invalid_input): a forger
    learnt each 3-byte half on its own (2 x 2^24 tries instead of 2^48)."""
    real = _seal_packed(BOB)
    assert unseal_packed(b64(real), BOB) == BODY
    for forged in forgeries(real, 6):
        assert unseal_packed(b64(forged), BOB) is None  # garbled, not foreign


def test_a_forged_changes_token_is_refused_alike_whichever_part_of_its_seal_is_right() -> None:
    prefix, _, encoded = TOKEN.encode(BOB).partition(".")
    real = unb64(encoded)
    for forged in forgeries(real, 8):
        with pytest.raises(ChangesTokenError) as refused:
            ChangesToken.decode(f"{prefix}.{b64(forged)}", BOB)
        assert not isinstance(refused.value, ForeignChangesToken)


def test_another_users_seal_is_foreign_however_it_was_made() -> None:
    alices = b64(_seal_packed(ALICE))
    with pytest.raises(ForeignCursor):
        unseal_packed(alices, BOB)
    with pytest.raises(ForeignChangesToken):
        ChangesToken.decode(TOKEN.encode(ALICE), BOB)
    # A one-person server's seals stay as long as they were: six bytes before the body.
    assert len(_seal_packed("")) == 6 + len(BODY)


def _seal_packed(user: str) -> bytes:
    return sealing.mac(BODY, 6, user) + BODY
