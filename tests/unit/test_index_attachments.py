"""Which attachments the index reads (``index_attachments``) and in how many bytes, from BODYSTRUCTURE
alone: documents only, in order, within the per-message bound; a cut text is still read, a cut PDF is
not; round trips are bounded in bytes; the text kept per message is bounded; an attachment not read is counted
by reason."""

from __future__ import annotations

from collections import Counter

from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.content.documents import extract_limits
from mail_imap_mcp.content.sandbox_worker import SandboxWorker
from mail_imap_mcp.index.attachments import (
    ROUND_BYTES,
    AttachmentReading,
    PartRead,
    attachment_plan,
    attachment_text,
    rounds,
)
from mail_imap_mcp.mime import Part


def attached(section: str, content_type: str, size: int, filename: str) -> Part:
    return Part(section, content_type, {}, "base64", size, "attachment", filename, None, None)


def test_documents_are_read_in_order_within_the_bound_and_only_text_is_cut() -> None:
    parts = [
        Part("1", "text/plain", {}, "7bit", 100, None, None, None, "utf-8"),  # the body: not an attachment
        attached("2", "image/png", 500, "photo.png"),
        attached("3", "application/pdf", 3000, "a.pdf"),
        attached("4", "application/pdf", 2000, "too-big.pdf"),
        attached("5", "text/plain", 9000, "log.txt"),
        attached("6", "application/octet-stream", 10, "notes.docx"),
    ]
    plan = attachment_plan(parts, 4000)
    assert [(read.part.section, read.size) for read in plan] == [("3", 3000), ("5", 1000)]
    assert plan[1].item == "BODY.PEEK[5]<0.1000>"
    assert attachment_plan(parts, 0) == []


def test_a_round_trip_asks_for_a_bounded_number_of_bytes() -> None:
    big = [PartRead(attached("2", "application/pdf", ROUND_BYTES // 2, "a.pdf"), ROUND_BYTES // 2)]
    batches = list(rounds(dict.fromkeys(range(1, 6), big)))
    assert [[uids for uids, _ in batch] for batch in batches] == [[[1], [2]], [[3], [4]], [[5]]]


def test_the_text_kept_per_message_is_bounded_and_an_unreadable_part_is_skipped() -> None:
    reading = AttachmentReading(extract_limits(ServerSettings()), 1 << 20, text_chars=50)
    plan = [
        PartRead(attached("2", "application/pdf", 40, "broken.pdf"), 40),
        PartRead(Part("3", "text/plain", {}, "7bit", 300, "attachment", "a.txt", None, "utf-8"), 300),
        PartRead(Part("4", "text/plain", {}, "7bit", 10, "attachment", "b.txt", None, "utf-8"), 10),
    ]
    response = {
        b"BODY[2]<0>": b"JVBERi0xLjcKbm8gcGRmIGF0IGFsbA==",  # "%PDF-1.7\nno pdf at all"
        b"BODY[3]<0>": b"alpha " * 50,
        b"BODY[4]<0>": b"omega",
    }
    skipped: Counter[str] = Counter()
    with SandboxWorker() as worker:
        text = attachment_text(response, plan, reading, worker, skipped)
    assert text.startswith("alpha alpha") and len(text) == 50
    assert "omega" not in text
    assert skipped == {"extract_failed": 1}
    # Without a worker, each document is read in a child of its own: the same text.
    assert attachment_text(response, plan, reading) == text
