"""Search cursors made by hand: a real cursor with some of its fields changed, re-sealed as the server
seals them (the checksum detects accidents; it is not a secret). Used to jump deep into a mailbox and
to forge hostile cursors."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from typing import Any

from mail_imap_mcp.imap.search import CursorState


def forge_cursor(cursor: str, changes: dict[str, Any]) -> str:
    """Re-sign a cursor after changing its fields (the checksum is not a secret)."""
    # Cursors are packed binary; a JSON cursor with names decodes too, so forge one of those.
    fields = {**dataclasses.asdict(CursorState.decode(cursor)), **changes}
    body = json.dumps(fields).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()[:6] + body).decode().rstrip("=")
