"""Large drafts sent (issue 78), through the SDK's MCP client against the real submission chain (Dovecot
submission -> Exim -> LMTP, tests/support/servers/submission.py):

- item 4: a draft with a large attachment is sent (read, approved, transmitted, filed in Sent) from a file
  of its own a piece at a time: the server's Python allocations at their peak stay well under the
  attachment, and what arrives and what is filed is the draft the user approved, byte for byte;
- item 5: one size limit for saving and sending, the submission server's SIZE where it states one (a draft
  over 25 MiB is sent where SIZE allows it), else the setting ``max_send_bytes``, which then holds for
  imap_save_draft and imap_send_draft alike, each refusal naming the limit and the size."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tracemalloc

import pytest

from tests.support.clients.elicitation import answering
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.documents import MiB
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.draft_attachments import SAVE, _invoice_parts, _seeded
from tests.support.shared.send import (
    TOOL,
    TRACE,
    _append,
    _client,
    _delivered,
    _draft,
    _draft_id,
    _files,
    _received,
    _settings,
    _setup,
)

pytestmark = pytest.mark.anyio

#: The default of ``max_send_bytes``: the fixed limit sending had before.
DEFAULT_MAX_SEND_BYTES = 25 * MiB


def _large_draft(chain: SubmissionDovecot, sender: str, to: str, size: int) -> bytes:
    """A draft of at least ``size`` bytes: a base64 attachment of random bytes."""
    encoded = base64.b64encode(os.urandom(size * 3 // 4))
    body = b"\r\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    mixed = (
        "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nThe file.\r\n"
        '--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="big.bin"'
        "\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    )
    raw = _draft(chain.address(sender), [to], body="")
    raw = raw.replace(b"Content-Type: text/plain; charset=utf-8\r\n", b"")
    return raw[:-2] + mixed.encode() + body + b"\r\n--b--\r\n"


async def test_regression_a_large_draft_is_sent_as_approved_without_being_held_whole(
    chain: SubmissionDovecot,
) -> None:
    """Sending an 18 MiB attachment held 200-247 MiB: the draft read whole, parsed whole by the approval's
    walk (5.5 x its base64), copied to be transmitted and again to be filed in Sent. Now no step holds it
    whole: the peak of what the server allocates (the MCP client's too) stays under the draft's size."""
    sender, bob, _ = _setup(chain)
    raw = _large_draft(chain, sender, chain.address(bob), 8 * MiB)  # within the chain's SIZE, 10 MB
    _append(chain, sender, "Drafts", raw)
    accepting = answering("accept")
    async for mcp in _client(
        _settings(chain, sender, chain.submission_port, "starttls"), "legacy", accepting
    ):
        draft_id = await _draft_id(mcp)
        tracemalloc.start()
        try:
            data = await mcp.ok(TOOL, {"message_id": draft_id})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert (data["outcome"], data["sent_copy"]) == ("sent", "appended")
    assert peak < len(raw), f"sending a {len(raw):,}-byte draft allocated {peak:,} bytes at its peak"
    (question,) = accepting.asked  # the approval is of these very bytes
    assert f"(fingerprint {hashlib.sha256(raw).hexdigest()[:16]})" in question
    assert f"big.bin (application/octet-stream, {8 * MiB // 4 * 3:,} bytes)" in question
    (got,) = await _delivered(chain, bob, 1)
    (filed,) = _files(chain, sender, "Sent")
    for copy in (got, filed.read_bytes()):
        body = TRACE.sub(b"", copy.replace(b"\r\n", b"\n")).replace(b"\n", b"\r\n")
        date = re.search(rb"^Date: ([^\r]*)\r\n", body, re.M)
        assert date is not None and body.replace(date.group(0), b"") == re.sub(rb"Date: [^\r]*\r\n", b"", raw)


async def test_a_draft_over_25_mib_is_sent_where_the_servers_size_allows_it() -> None:
    with SubmissionDovecot(max_mail_size=40 * MiB) as roomy:
        sender, bob, _ = _setup(roomy)
        raw = _large_draft(roomy, sender, roomy.address(bob), DEFAULT_MAX_SEND_BYTES + MiB)
        assert len(raw) > DEFAULT_MAX_SEND_BYTES
        _append(roomy, sender, "Drafts", raw)
        accepting = answering("accept")
        async for mcp in _client(
            _settings(roomy, sender, roomy.submission_port, "starttls"), "legacy", accepting
        ):
            data = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
        assert (data["outcome"], data["sent_copy"]) == ("sent", "appended")
        assert "big.bin (application/octet-stream" in accepting.asked[0]
        (got,) = await _delivered(roomy, bob, 1)
        assert len(got) > DEFAULT_MAX_SEND_BYTES


async def test_without_size_max_send_bytes_bounds_saving_and_sending_naming_limit_and_size() -> None:
    with SubmissionDovecot(max_mail_size=0) as unbounded:  # Dovecot then says SIZE without a number
        sender, bob, _ = _seeded(unbounded)
        settings = _settings(unbounded, sender, unbounded.submission_port, "starttls", write_enabled=True)
        too_big = _draft(unbounded.address(sender), [unbounded.address(bob)], body="x" * 70_000)
        _append(unbounded, sender, "Drafts", too_big)
        config = make_config({"default": settings}, max_send_bytes=65_536)
        async for mcp in open_client(config, elicitation_callback=answering("accept")):
            _, parts = await _invoice_parts(mcp)
            saving = await mcp.fail(
                SAVE, {"to": [unbounded.address(bob)], "attachments": parts}, "limit_exceeded"
            )
            sending = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "limit_exceeded")
        assert saving["error"]["details"]["limit"] == 65_536
        assert "max_send_bytes" in saving["error"]["message"] and "65,536" in saving["error"]["message"]
        size = f"{len(too_big):,}"
        for said in ("max_send_bytes", "65,536", size):
            assert said in sending["error"]["message"], sending
        assert len(_files(unbounded, sender, "Drafts")) == 1 and _received(unbounded) == 0
