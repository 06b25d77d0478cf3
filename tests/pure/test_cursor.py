"""The search cursor: packed binary (short, it is in every page) behind a keyed seal; JSON cursors still read."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict

import pytest

from mail_imap_mcp.imap.search import CursorError, CursorState, seal, seal_packed, unseal_packed
from mail_imap_mcp.imap.search.cursors import StreamCursor, StreamState

STATE = CursorState(
    account_id="default",
    mailbox="Archiv/2025 – Büro",
    uidvalidity=1795384193,
    filter_digest="d448e2735666387f",
    upper_uid=100_000,
    anchor_uid=99_981,
    total=100_000,
    returned=20,
)


def test_round_trip_and_size() -> None:
    token = STATE.encode()
    assert CursorState.decode(token) == STATE
    keyed = json.dumps(asdict(STATE), separators=(",", ":"), ensure_ascii=False).encode()
    assert len(token) < len(base64.urlsafe_b64encode(keyed)) * 0.4
    assert len(CursorState(**{**asdict(STATE), "mailbox": "INBOX"}).encode()) <= 60


def test_a_json_cursor_with_or_without_field_names_still_decodes() -> None:
    assert CursorState.decode(seal(list(asdict(STATE).values()))) == STATE
    assert CursorState.decode(seal(asdict(STATE))) == STATE


def test_regression_l2_a_cursor_with_a_checksum_anyone_can_compute_is_refused() -> None:
    # Issue 33 L2: the cursor's check was a plain SHA-256 of its content, so anyone could forge one.
    for body in (json.dumps(asdict(STATE)).encode(), unseal_packed(STATE.encode()) or b""):
        token = base64.urlsafe_b64encode(hashlib.sha256(body).digest()[:6] + body).decode().rstrip("=")
        with pytest.raises(CursorError):
            CursorState.decode(token)


@pytest.mark.parametrize("cut", [1, 3, 8])
def test_a_truncated_or_altered_packed_cursor_is_a_cursor_error(cut: int) -> None:
    token = STATE.encode()
    for bad in (token[:-cut], token[: -cut - 1] + ("A" if token[-cut - 1] != "A" else "B") + token[-cut:]):
        with pytest.raises(CursorError):
            CursorState.decode(bad)


def test_a_packed_cursor_with_trailing_bytes_is_a_cursor_error() -> None:
    body = unseal_packed(STATE.encode())
    assert body is not None
    with pytest.raises(CursorError):
        CursorState.decode(seal_packed(body + b"\x00"))


@pytest.mark.parametrize("values", [[1, 2], ["a"] * 9, [*list(asdict(STATE).values())[:-1], 2], {"x": 1}])
def test_wrong_shapes_are_cursor_errors(values: object) -> None:
    token = seal(values)
    with pytest.raises(CursorError):
        CursorState.decode(token)


STREAMS = StreamCursor(
    account_id="default",
    filter_digest="d448e2735666387f",
    sort="date",
    total=240,
    returned=20,
    streams=[StreamState("INBOX", 1795384193, 100, [81, 80], 1795000000), StreamState("Archive", 7, 0)],
)


def test_a_stream_cursor_lists_its_values_without_names_and_round_trips() -> None:
    token = STREAMS.encode()
    assert StreamCursor.decode(token) == STREAMS
    keyed = {"v": 2, "a": "default", "d": "d448e2735666387f", "s": "date", "t": 240, "r": 20}
    keyed["m"] = [stream.row() for stream in STREAMS.streams]
    assert len(token) < len(seal(keyed)) - 20
    assert StreamCursor.decode(seal(keyed)) == STREAMS


@pytest.mark.parametrize(
    "payload", [[2, "default"], [3, "a", "d", "date", 1, 1, [["INBOX", 1, 1]]], ["a"] * 7]
)
def test_a_stream_cursor_of_another_shape_is_a_cursor_error(payload: object) -> None:
    with pytest.raises(CursorError):
        StreamCursor.decode(seal(payload))


def test_a_one_mailbox_cursor_is_not_a_stream_cursor_and_back() -> None:
    with pytest.raises(CursorError):
        StreamCursor.decode(STATE.encode())
    with pytest.raises(CursorError):
        CursorState.decode(STREAMS.encode())
