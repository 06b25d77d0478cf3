"""What ``services/invitations.py`` fetches of a later message that may cancel the invitation: its
calendar part by BODYSTRUCTURE and who it is from, within the bounds every header read keeps."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from mail_imap_mcp.content.invitations import EventKey
from mail_imap_mcp.imap.fetch import MAX_HEADER_BYTES
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.services import invitations


class _Session:
    """A mailbox in which the search for the event's UID finds one other message; what was fetched kept."""

    def __init__(self) -> None:
        self.fetched: list[str] = []

    def examine(self, mailbox: str) -> Any:
        return SimpleNamespace(uidvalidity=7)

    def uid_search(self, criteria: list[Any], charset: str | None = None) -> list[int]:
        return [5, 9]

    def fetch(self, uids: list[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        self.fetched += items
        return {}  # gone meanwhile: nothing more is read


def test_who_a_later_message_is_from_is_read_within_the_header_bound() -> None:
    """A stranger's message holding the event's UID, with a From or Sender of many megabytes, was fetched
    whole (up to ten of them): the header fields are read as every header is, at most MAX_HEADER_BYTES."""
    session: Any = _Session()
    ref = MessageRef("default", "INBOX", 7, 5)
    assert invitations._later(session, ref, (EventKey("uid-1", 0, None),), "ann@example.org") is None
    headers = [item for item in session.fetched if "HEADER" in item]
    assert headers, session.fetched
    for item in headers:
        bound = re.search(r"\]<0\.(\d+)>$", item)
        assert bound is not None and int(bound[1]) <= MAX_HEADER_BYTES, item
