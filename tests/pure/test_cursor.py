"""The search cursor of a page of one mailbox: packed binary behind a keyed seal, short as it is in every
page; the one-mailbox cursors earlier versions handed out still decode into it, their cursors of a row
per mailbox are refused."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict, replace

import pytest

from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.cursors import (
    DIGEST_CHARS,
    INDEX_TAG,
    PACKED_TAG,
    RESUME_BYTES,
    CursorError,
    CursorState,
    ForeignCursor,
    IndexCursor,
    StreamCursor,
    StreamState,
    seal_packed,
    unseal,
    unseal_packed,
)
from tests.support.mail.cursors import seal_json

ONE = StreamCursor(
    account_id="default",
    filter_digest="d448e2735666",
    sort="arrival",
    total=100_000,
    returned=20,
    stream=StreamState("Archiv/2025 – Büro", 1795384193, 100_000, [99_981]),
)
DATED = StreamCursor(
    account_id="default",
    filter_digest="d448e2735666",
    sort="date",
    total=240,
    returned=20,
    stream=StreamState("Old", 9, 500, [12, 11], -86_400, 1, 400),  # a Date header before 1970
)
#: The one-mailbox cursor of earlier versions, for the position ONE stands for (its digest had 16 hex
#: digits, of which a cursor keeps 12 now).
LEGACY = CursorState(
    account_id="default",
    mailbox="Archiv/2025 – Büro",
    uidvalidity=1795384193,
    filter_digest="d448e2735666387f",
    upper_uid=100_000,
    anchor_uid=99_981,
    total=100_000,
    returned=20,
)


def varints(values: list[int]) -> bytes:
    out = bytearray()
    for value in values:
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


def legacy_packed(state: CursorState) -> str:
    """The packed one-mailbox cursor as earlier versions wrote it: tag 1, account and mailbox (length,
    UTF-8), the digest's 8 bytes, then UIDVALIDITY, upper UID, anchor, total and returned as varints."""
    texts = b"".join(varints([len(t)]) + t for t in (state.account_id.encode(), state.mailbox.encode()))
    numbers = varints([state.uidvalidity, state.upper_uid, state.anchor_uid, state.total, state.returned])
    return seal_packed(bytes([PACKED_TAG]) + texts + bytes.fromhex(state.filter_digest) + numbers, "")


@pytest.mark.parametrize("cursor", [ONE, DATED], ids=["arrival", "date"])
def test_every_search_s_cursor_round_trips_in_one_packed_format(cursor: StreamCursor) -> None:
    token = cursor.encode("")
    assert StreamCursor.decode(token, "") == cursor
    assert (unseal_packed(token, "") or b"")[:1] == b"\x02"


def test_a_one_mailbox_cursor_stays_short() -> None:
    inbox = StreamCursor(
        "default",
        "d448e2735666",
        "arrival",
        100_000,
        20,
        StreamState("INBOX", 1795384193, 100_000, [99_981]),
    )
    assert len(inbox.encode("")) <= 64
    keyed = json.dumps(asdict(LEGACY), separators=(",", ":"), ensure_ascii=False).encode()
    assert len(ONE.encode("")) < len(base64.urlsafe_b64encode(keyed)) * 0.45


def test_the_one_mailbox_cursors_of_earlier_versions_still_decode() -> None:
    for token in (legacy_packed(LEGACY), seal_json(list(asdict(LEGACY).values())), seal_json(asdict(LEGACY))):
        assert CursorState.decode(token, "") == LEGACY
        assert StreamCursor.decode(token, "") == ONE


def rows_packed(rows: list[tuple[str, int, int, list[int]]]) -> str:
    """A packed stream cursor of several mailboxes in arrival order (a row each: name, UIDVALIDITY,
    snapshot, anchors), as versions before the one position of every search of several wrote it."""
    body = bytearray([2]) + varints([7]) + b"default" + bytes.fromhex("d448e2735666")
    body += varints([len(rows) * 2, 3000, 20])
    for name, uidvalidity, upper, after in rows:
        body += varints([len(name.encode())]) + name.encode()
        body += varints([uidvalidity, upper, len(after) << 3, *after])
    return seal_packed(bytes(body), "")


def test_regression_a_cursor_of_a_row_per_mailbox_is_refused_as_from_an_earlier_version() -> None:
    """Such cursors continued page after page through a merge of every mailbox's stream, kept only for
    them; no release handed them out, and a search of several mailboxes reads by one position now."""
    rows = [("INBOX", 1795384193, 100, [81]), ("Archive", 7, 40, [12])]
    with pytest.raises(CursorError, match="earlier version of this server"):
        StreamCursor.decode(rows_packed(rows), "")
    json_rows = [2, "default", "d448e2735666387f", "arrival", 240, 20, [list(row) for row in rows]]
    for payload in (json_rows, dict(zip(("v", "a", "d", "s", "t", "r", "m"), json_rows, strict=True))):
        with pytest.raises(CursorError):
            StreamCursor.decode(seal_json(payload), "")
    # The same packing with one row is this version's cursor of one mailbox.
    assert StreamCursor.decode(rows_packed(rows[:1]), "").stream == StreamState(
        "INBOX", 1795384193, 100, [81]
    )


def test_regression_l2_a_cursor_with_a_checksum_anyone_can_compute_is_refused() -> None:
    # Issue 33 L2: the cursor's check was a plain SHA-256 of its content, so anyone could forge one.
    for body in (json.dumps(asdict(LEGACY)).encode(), unseal_packed(ONE.encode(""), "") or b""):
        token = base64.urlsafe_b64encode(hashlib.sha256(body).digest()[:6] + body).decode().rstrip("=")
        with pytest.raises(CursorError):
            StreamCursor.decode(token, "")


@pytest.mark.parametrize("cut", [1, 3, 8])
@pytest.mark.parametrize("cursor", [ONE, DATED], ids=["arrival", "date"])
def test_a_truncated_or_altered_cursor_is_a_cursor_error(cursor: StreamCursor, cut: int) -> None:
    token = cursor.encode("")
    for bad in (token[:-cut], token[: -cut - 1] + ("A" if token[-cut - 1] != "A" else "B") + token[-cut:]):
        with pytest.raises(CursorError):
            StreamCursor.decode(bad, "")


@pytest.mark.parametrize("extra", [b"\x00", b"\x05INBOX"])
def test_a_packed_cursor_with_trailing_bytes_is_a_cursor_error(extra: bytes) -> None:
    for token in (ONE.encode(""), legacy_packed(LEGACY)):
        body = unseal_packed(token, "")
        assert body is not None
        with pytest.raises(CursorError):
            StreamCursor.decode(seal_packed(body + extra, ""), "")


def test_a_packed_cursor_whose_numbers_overflow_a_uid_is_a_cursor_error() -> None:
    body = bytearray([2]) + varints([7]) + b"default" + bytes.fromhex("d448e2735666")
    body += varints([2, 1, 0]) + varints([5]) + b"INBOX" + varints([2**33, 1, 0])
    with pytest.raises(CursorError):
        StreamCursor.decode(seal_packed(bytes(body), ""), "")


@pytest.mark.parametrize(
    "values",
    [
        [1, 2],
        ["a"] * 9,
        [*list(asdict(LEGACY).values())[:-1], 2],
        {"x": 1},
        [2, "default"],
        [3, "a", "d", "date", 1, 1, [["INBOX", 1, 1]]],
        [2, "a", "d", "date", 1, 1, []],
        ["a"] * 7,
    ],
)
def test_json_of_any_other_shape_is_a_cursor_error(values: object) -> None:
    with pytest.raises(CursorError):
        StreamCursor.decode(seal_json(values), "")


@pytest.mark.parametrize("cursor", [ONE, DATED], ids=["arrival", "date"])
def test_regression_a_cursor_sealed_with_another_key_says_so(cursor: StreamCursor) -> None:
    body = unseal_packed(cursor.encode(""), "") or b""
    token = base64.urlsafe_b64encode(sealing.mac(body + b"x", 6, "") + body).decode().rstrip("=")
    with pytest.raises(CursorError, match="another key"):
        StreamCursor.decode(token, "")


def test_another_users_cursor_is_foreign_and_a_garbled_one_of_ones_own_is_a_cursor_error() -> None:
    body = b'{"a":1}'

    alices = seal_json({"a": 1}, "alice@corp.example")
    assert unseal(alices, "alice@corp.example") == body
    with pytest.raises(ForeignCursor):
        unseal(alices, "bob@corp.example")
    bobs = seal_json({"a": 1}, "bob@corp.example")
    garbled = bobs[:2] + ("A" if bobs[2] != "A" else "B") + bobs[3:]
    with pytest.raises(CursorError) as refused:
        unseal(garbled, "bob@corp.example")
    assert not isinstance(refused.value, ForeignCursor)
    # A packed cursor too; on a one-person server nobody else's cursor exists.
    packed = seal_packed(bytes([PACKED_TAG]) + b"\x01", "alice@corp.example")
    with pytest.raises(ForeignCursor):
        unseal_packed(packed, "bob@corp.example")
    assert unseal_packed(packed, "") is None


def test_an_index_cursor_round_trips_with_the_key_of_its_first_pages_places() -> None:
    cursor = IndexCursor("work", "ab" * (DIGEST_CHARS // 2), total=14, returned=4, mark=77, places=123_456)
    assert IndexCursor.decode(cursor.encode(""), "") == cursor
    none_kept = replace(cursor, places=0)
    assert IndexCursor.decode(none_kept.encode(""), "") == none_kept


def test_an_index_cursor_carries_an_engines_own_place_sealed_and_bounded() -> None:
    cursor = IndexCursor(
        "work", "ab" * (DIGEST_CHARS // 2), total=14, returned=4, mark=77, resume=b"\x01" * 37
    )
    token = cursor.encode("alice@corp.example")
    assert IndexCursor.decode(token, "alice@corp.example") == cursor
    assert len(token) < 120
    # Sealed: a place changed by hand is no cursor of this server's.
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[-1] ^= 1
    forged = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    assert IndexCursor.decode(forged, "alice@corp.example") is None
    with pytest.raises(ValueError, match="64 bytes at most"):
        replace(cursor, resume=b"x" * (RESUME_BYTES + 1)).encode("")
    # A body naming a longer place than any engine makes is garbled, even sealed.
    body = bytes([INDEX_TAG, 4]) + b"work" + bytes.fromhex("ab" * 6) + bytes([14, 4, 77, 0, 65]) + b"x" * 65
    with pytest.raises(CursorError, match="garbled"):
        IndexCursor.decode(seal_packed(body, ""), "")
