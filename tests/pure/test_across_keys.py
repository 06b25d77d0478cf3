"""The merge keys of a search across mailboxes: INTERNALDATE read by imap/across.py's own line reader
must give what imapclient's parser gives, and leave every other line to that parser."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from imapclient.response_parser import parse_fetch_response

from mail_imap_mcp.imap.search.execute import epoch, internal_keys
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.cursors import StreamCursor, StreamState
from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput


def session() -> ImapSession:
    """What internal_keys uses of a session: the client's FETCH parser (imapclient's, normalised times)."""
    client = SimpleNamespace(parse_fetch=lambda data: parse_fetch_response(data, True, True))
    return cast(ImapSession, SimpleNamespace(client=client))


def imapclient_keys(lines: list[Any]) -> dict[int, int | None]:
    parsed = parse_fetch_response(lines, True, True)
    return {uid: epoch(data[b"INTERNALDATE"]) for uid, data in parsed.items() if b"INTERNALDATE" in data}


@pytest.mark.parametrize(
    "date_time",
    [
        b"01-Jan-2025 10:00:00 +0000",
        b" 1-Feb-2024 23:59:59 -0530",
        b"31-Dec-1999 00:00:01 +1400",
        b"29-feb-2024 12:00:00 +0100",
        b"15-Aug-2023 06:30:00 -1200",
    ],
)
def test_the_keys_of_usual_lines_are_imapclient_s(date_time: bytes) -> None:
    lines = [b'3 (UID 7 INTERNALDATE "%s")' % date_time, b'4 (INTERNALDATE "%s" UID 8)' % date_time]
    assert internal_keys(session(), lines) == imapclient_keys(lines)
    assert len(internal_keys(session(), lines)) == 2


def test_other_lines_go_through_imapclient_and_a_flags_update_gives_no_key() -> None:
    lines = [
        b'3 (UID 7 INTERNALDATE "01-Jan-2025 10:00:00 +0000")',
        b"5 (FLAGS (\\Seen) UID 9)",  # an unsolicited update that came with the answer
        b'6 (UID  10 INTERNALDATE "02-Jan-2025 10:00:00 +0000")',  # another spacing
        b'8 (UID 11 INTERNALDATE "99-Foo-2025 10:00:00 +0000")',  # not a date here: imapclient decides
    ]
    # imapclient keeps an unreadable date as None: the message has no key, as before (merged as oldest).
    assert internal_keys(session(), lines) == {7: 1735725600, 10: 1735812000, 11: None}
    assert internal_keys(session(), lines) == imapclient_keys(lines)


def test_the_cursor_of_a_mailbox_with_the_longest_name_is_accepted() -> None:
    """A page of one mailbox keeps its name in its cursor: one of the longest a mailbox argument takes
    (1,000 characters of four bytes in UTF-8) still fits the cursor argument."""
    stream = StreamState("\U0001f4e8" * 1000, 1795440829, 30, [20], None, 0, 0)
    cursor = StreamCursor("default", "b05faab905b1", "arrival", 3000, 20, stream).encode("")
    assert len(cursor) > 4096
    arguments = SearchMessagesInput.model_validate({"mailbox": stream.mailbox, "cursor": cursor})
    assert StreamCursor.decode(arguments.cursor or "", "").stream == stream
