"""Search cursors made by hand: a real cursor with some of its fields changed, sealed again as the server
seals them (the test process holds the same key as the server it starts: the default state directory's,
or the one its configuration names). Used to jump deep into a mailbox and to forge hostile cursors."""

from __future__ import annotations

import base64
import json
from typing import Any

from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.cursors import StreamCursor


def seal_json(payload: Any, user: str = "") -> str:
    """A cursor as earlier versions wrote them: compact JSON behind the 6-byte seal (``user``'s: nobody's
    unless given), URL-safe base64."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(sealing.mac(body, 6, user) + body).decode().rstrip("=")


def forge_cursor(cursor: str, changes: dict[str, Any]) -> str:
    """A one-mailbox cursor sealed again after changing its fields, in the JSON with field names that
    earlier versions wrote (which still decodes): the fields of any value an attacker may choose."""
    decoded = StreamCursor.decode(cursor, "")
    stream = decoded.stream
    fields = {
        "account_id": decoded.account_id,
        "mailbox": stream.mailbox,
        "uidvalidity": stream.uidvalidity,
        "filter_digest": decoded.filter_digest,
        "upper_uid": stream.upper,
        "anchor_uid": stream.after[-1],
        "total": decoded.total,
        "returned": decoded.returned,
        "v": 1,
    }
    return seal_json({**fields, **changes})
