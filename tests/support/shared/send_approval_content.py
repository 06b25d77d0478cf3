"""What tests/integration/asking/test_send_approval_content.py shares with other test modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from tests.support.clients.elicitation import answering
from tests.support.clients.in_process import make_config, open_client
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.send import (
    TOOL,
    _draft_id,
    _everywhere,
    _settings,
)


def _page_app(
    chain: SubmissionDovecot, sender: str, opener: Callable[[str], bool] | None, **server: Any
) -> AppContext:
    config = make_config({"default": _settings(chain, sender, chain.submission_port, "starttls")}, **server)
    app = AppContext.from_config(config)
    app.approval_page = approval_page(opener, timeout_s=60) if opener is not None else None
    return app


async def refused_without_a_page(chain: SubmissionDovecot, sender: str, bob: str) -> str:
    """Send the one draft of ``sender`` (to ``bob``) with a client that can ask the user and no approval
    page (an HTTP server's): refused, nobody asked, nothing sent; the reason it gives."""
    accepting = answering("accept")
    app = _page_app(chain, sender, None)
    before = _everywhere(chain, sender, [bob])
    async for mcp in open_client(app.config, app, elicitation_callback=accepting):
        refused = await mcp.fail(TOOL, {"message_id": await _draft_id(mcp)}, "permission_denied")
    assert accepting.asked == []
    assert refused["error"]["details"]["approval"] == "unavailable"
    assert "no approval page could be shown" in refused["error"]["message"]
    assert _everywhere(chain, sender, [bob]) == before
    return str(refused["error"]["details"]["reason"])


async def asked_and_sent(chain: SubmissionDovecot, sender: str) -> str:
    """Send the one draft of ``sender`` with a client that can ask the user (who accepts) and no approval
    page: asked in the question and sent; the question."""
    accepting = answering("accept")
    app = _page_app(chain, sender, None)
    async for mcp in open_client(app.config, app, elicitation_callback=accepting):
        sent = await mcp.ok(TOOL, {"message_id": await _draft_id(mcp)})
    assert sent["outcome"] == "sent"
    (question,) = accepting.asked
    return question
