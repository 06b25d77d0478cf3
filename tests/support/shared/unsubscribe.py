"""What tests/integration/writes/test_unsubscribe.py shares with other test modules."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mail_imap_mcp.app import AppContext
from tests.support.clients.background import decided
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.servers.one_click_server import LIST_HOST, OneClickServer

TOOL = "imap_apply_to_messages"


AUTHSERV = "mx.tests.example"


def list_message(
    subject: str,
    unsubscribe: str,
    *,
    post: bool = True,
    covered: bool = True,
    passed: bool = True,
    name: str = "Weekly News",
    sender: str = "news",
) -> bytes:
    signed = "From:Subject:List-Unsubscribe" + (":List-Unsubscribe-Post" if covered else "")
    headers = {
        "List-Id": f'"{name}" <{sender}.lists.example.com>',
        "List-Unsubscribe": unsubscribe,
        "DKIM-Signature": f"v=1; a=rsa-sha256; d={LIST_HOST}; s=s1; h={signed}; bh=x; b=QmFzZTY0",
        "Authentication-Results": f"{AUTHSERV}; dkim={'pass' if passed else 'fail'} header.d={LIST_HOST} header.s=s1",
    }
    if post:
        headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    return mailgen.plain_message(
        subject,
        "news",
        from_=f"{name} <{sender}@{LIST_HOST}>",
        headers=headers,
        message_id=f"<{subject.replace(' ', '-')}@t>",
    )


@contextlib.asynccontextmanager
async def client(
    settings: dict[str, Any], lists: OneClickServer, answer: Any
) -> AsyncIterator[EnvelopeClient]:
    config = make_config({"default": settings}, unsubscribe_enabled=True, write_enabled=True)
    app = AppContext.from_config(config)
    app.one_click = lists.client()
    async for opened in open_client(config, app, elicitation_callback=answer):
        yield opened


async def _decided(mcp: EnvelopeClient, answer: dict[str, Any]) -> tuple[Any, Any]:
    """The call's data and error once the user decided on the page: the answer's own, or those of the
    background operation it handed back, polled with imap_get_operation until it ended."""
    ended = await decided(mcp, answer)
    return ended.get("data"), ended.get("error")
