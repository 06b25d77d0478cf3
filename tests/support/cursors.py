"""Search cursors made by hand: a real cursor with some of its fields changed, sealed again as the server
seals them (the test process holds the same key as the server it starts: the default state directory's,
or the one its configuration names). Used to jump deep into a mailbox and to forge hostile cursors."""

from __future__ import annotations

import dataclasses
from typing import Any

from mail_imap_mcp.imap.search import CursorState, seal


def forge_cursor(cursor: str, changes: dict[str, Any]) -> str:
    """Seal a cursor again after changing its fields (a JSON cursor with names decodes too)."""
    return seal({**dataclasses.asdict(CursorState.decode(cursor)), **changes})
