"""read_message when the server's BODYSTRUCTURE is unusable: a size-capped fetch, parsed locally.

Real servers rarely produce an unusable BODYSTRUCTURE, so this path is exercised with a stub
session that answers FETCH like a server would (pure logic; the normal path is tested live).
"""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.imap.fetch import ReadOptions, read_message
from mail_imap_mcp.imap.ids import MessageRef

RAW = (
    b"From: Ann <ann@example.org>\r\nSubject: Fallback\r\nDate: Mon, 03 Feb 2025 10:00:00 +0000\r\n"
    b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
    b"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello from the fallback path.\r\n"
    b'--b\r\nContent-Type: application/pdf; name="a.pdf"\r\nContent-Disposition: attachment; filename="a.pdf"\r\n'
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n--b--\r\n"
)


class StubSession:
    def __init__(self) -> None:
        self.requests: list[list[str]] = []

    def fetch(self, uids: list[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        self.requests.append(items)
        if "BODYSTRUCTURE" in items:
            header = RAW.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
            return {
                uids[0]: {
                    b"FLAGS": (b"\\Seen",),
                    b"RFC822.SIZE": len(RAW),
                    b"BODYSTRUCTURE": (b"garbage", 7, None),
                    b"BODY[HEADER]<0>": header,
                }
            }
        return {uids[0]: {b"BODY[]<0>": RAW}}


def test_unusable_bodystructure_falls_back_to_a_capped_full_fetch_and_says_so() -> None:
    session = StubSession()
    options = ReadOptions(
        body_max_chars=1000,
        body_format="text",
        include_headers=True,
        include_all_headers=False,
        max_text_part_bytes=50_000,
    )
    detail, warnings = read_message(session, MessageRef("default", "INBOX", 1, 7), options)  # type: ignore[arg-type]
    assert detail.body_text is not None
    assert detail.body_text.startswith("Hello from the fallback path.")
    assert [a.filename for a in detail.attachments] == ["a.pdf"]
    assert detail.attachments[0].part_id == "2"
    assert any("BODYSTRUCTURE was unusable" in w for w in warnings)
    assert session.requests[1] == ["BODY.PEEK[]<0.50000>"]
