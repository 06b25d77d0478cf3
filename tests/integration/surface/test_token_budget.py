"""The compact shape stays within issue 12's byte budget on realistic mail, through the MCP client.

``scripts/token-report`` documents the figures on 1,000 messages; this test keeps a change that
fattens the shape (a new field, a longer key, a null spelled out) from landing unnoticed, on every
server of the matrix (the ids carry each server's UIDVALIDITY, as wide as ten digits).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.clients.envelope_client import EnvelopeClient, check_envelope
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.realmail import OWNER, realistic_corpus, realistic_flags
from tests.support.servers.matrix import INBOX_ONLY, MatrixServer
from tests.support.token_figures import GOAL_ENVELOPE, GOAL_SUMMARY_NON_SNIPPET, ShapeFigures

pytestmark = pytest.mark.anyio

MESSAGES = 200
PAGE = 20


async def _page(mcp: EnvelopeClient, arguments: dict[str, Any], figures: ShapeFigures) -> dict[str, Any]:
    """One search page: checked as an envelope, measured on the text block a model reads."""
    result = await mcp.client.call_tool("imap_search_messages", arguments)
    envelope = check_envelope(result, (await mcp.schemas())["imap_search_messages"])
    assert envelope["success"], envelope
    (block,) = result.content
    figures.add_page(getattr(block, "text", ""), envelope)
    data: dict[str, Any] = envelope["data"]
    return data


@INBOX_ONLY
async def test_compact_pages_of_realistic_mail_stay_within_the_byte_budget(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    corpus = list(realistic_corpus(MESSAGES, seed=7))
    imap_server.seed(user, "INBOX", [m.raw for m in corpus], flags=realistic_flags)
    config = make_config({"default": account(user, addresses=[OWNER[1]])})
    compact = ShapeFigures()
    async for mcp in open_client(config):
        data = await _page(mcp, {"limit": PAGE}, compact)
        while "next_cursor" in data:
            data = await _page(mcp, {"limit": PAGE, "cursor": data["next_cursor"]}, compact)
    assert len(compact.summary_bytes) == MESSAGES
    assert compact.per_summary_non_snippet <= GOAL_SUMMARY_NON_SNIPPET, dict(compact.field_bytes)
    assert compact.max_envelope <= GOAL_ENVELOPE
    # The keys a compact summary may carry, and none that is null or empty.
    assert set(compact.field_count) <= {
        "message_id", "date", "from", "to", "subject", "unread", "flags", "size", "has_attachments", "snippet"
    }  # fmt: skip
    # Mail to the owner alone says nothing about its recipients; the rest says 'me' and the others.
    assert 0 < compact.field_count["to"] < MESSAGES
