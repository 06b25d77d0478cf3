"""The ``sqlite+tantivy`` engine commits its Tantivy index only for a change of its text (issue 80): a
sync that changes flags alone, or a folder's state, writes SQLite and leaves Tantivy as it is. A commit for
nothing took 0.3 s on a loaded machine, twice for each folder a sync looked at, under the index's lock,
and every search waited for the sync (a ranked page through MCP at 100,000 messages: 424-1,008 ms where
Tantivy ranked it in 3 ms)."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from mail_imap_mcp.index.engines.tantivy.text import TextIndex
from tests.support.clients.index_clients import indexed_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio


async def test_regression_a_flag_change_is_taken_in_without_a_tantivy_commit(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [plain_message(f"note {n}", f"quincewords {n}\r\n") for n in range(5)])
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path, ("sqlite+tantivy", None)):
        with mock.patch.object(TextIndex, "_commit", autospec=True, side_effect=TextIndex._commit) as commits:
            with dovecot.connect(user, tls=False, starttls=False) as other:
                other.select_folder("INBOX")
                other.add_flags([2], [b"\\Flagged"])
            found = await mcp.ok(
                "imap_search_messages",
                {"query": "quincewords is:flagged", "sort": "relevance", "mailbox": "INBOX"},
            )
            assert [message["subject"] for message in found["messages"]] == ["note 1"]  # the flag taken in
            ranked = await mcp.ok(
                "imap_search_messages", {"query": "quincewords", "sort": "relevance", "mailbox": "INBOX"}
            )
            assert len(ranked["messages"]) == 5
            assert commits.call_count == 0
