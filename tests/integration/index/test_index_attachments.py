"""The text of attachments in the local index (``index_attachments = true``), through a real MCP client
against Dovecot.

A word that occurs only inside a PDF or DOCX attachment finds its message through the index with
``index_attachments`` on, and not without. The text read is bounded: a text attachment larger than
``index_attachment_bytes`` is read up to it (a word past the cut is not found, the message is indexed), a
PDF larger than what is left is not read. An attachment the sandbox cannot read does not stop indexing:
its message is indexed with the rest of its text, and the messages after it too; ``mail-imap-mcp index``
counts it by reason.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mail_imap_mcp.app import AppContext
from tests.support.accounts import account_settings, config_toml
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import index_file, wait_ready
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import IndexEngineParam, on_engine
from tests.support.shared.index_attachments import FETCH_BYTES, MESSAGES, SEARCH, found
from tests.support.shared.index_build import index

pytestmark = pytest.mark.anyio


async def searched(
    dovecot: MatrixServer,
    tmp_path: Path,
    engine: IndexEngineParam = ("sqlite", None),
    **settings: object,
) -> dict[str, list[str]]:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", MESSAGES)
    config = make_config(
        {"default": account_settings(dovecot, user)},
        index=True,
        index_dir=str(tmp_path / "ix"),
        index_attachment_bytes=FETCH_BYTES,
        **settings,
    )
    config = on_engine(config, *engine)
    app = AppContext.from_config(config)
    words = ("quokkaword", "wombatword", "numbatword", "dingoword", "echidnaword", "bilbyword")
    results: dict[str, list[str]] = {}
    async for mcp in open_client(config, app):
        assert await wait_ready(mcp, within=120) == "ready"
        for word in (*words, "platypusword", "dugongword"):
            results[word] = await found(mcp, word)
        envelope = await mcp.call(SEARCH, {"query": "quokkaword", "mailbox": "INBOX"})
        assert not envelope["meta"].get("warnings"), envelope["meta"]  # the index answered
    return results


# The other engines keep and find attachment text as SQLite does (test_index_store_contract), and find it
# end to end after a backfill (test_index_attachment_backfill runs on each engine).
@pytest.mark.parametrize("index_engine", ["sqlite"], indirect=True)
async def test_a_word_only_inside_an_attachment_is_found_with_index_attachments(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    results = await searched(dovecot, tmp_path, index_engine, index_attachments=True)
    assert results["quokkaword"] == ["quarterly report"]
    assert results["wombatword"] == ["meeting notes"]
    # The broken PDF is skipped; the good attachment beside it and the messages after it are indexed.
    assert results["numbatword"] == ["damaged files"]
    assert results["dugongword"] == ["after them"]
    # The huge text attachment is cut at index_attachment_bytes: its start is found, its end is not, and
    # the PDF that no longer fits is not read; the message itself is indexed.
    assert results["dingoword"] == ["huge log"]
    assert results["echidnaword"] == []
    assert results["bilbyword"] == []
    assert results["platypusword"] == ["huge log"]


async def test_without_index_attachments_attachment_text_is_not_found(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    results = await searched(dovecot, tmp_path)
    for word in ("quokkaword", "wombatword", "numbatword", "dingoword"):
        assert results[word] == [], word
    assert results["platypusword"] == ["huge log"]
    assert results["dugongword"] == ["after them"]


def test_mail_imap_mcp_index_counts_the_attachments_it_could_not_read_by_reason(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", MESSAGES)
    config = tmp_path / "config.toml"
    config.write_text(
        config_toml({"default": account_settings(dovecot, user)})
        + f'\n[server]\nindex = true\nindex_dir = "{tmp_path / "ix"}"\nindex_attachments = true\n'
        + f"index_attachment_bytes = {FETCH_BYTES}\n"
    )
    done = index(config)
    assert done.returncode == 0, done.stderr
    assert "5 new message(s) indexed in 1 folder(s); attachments not read: 1 extract_failed;" in done.stdout
    db = sqlite3.connect(index_file(tmp_path / "ix"))
    try:
        found = {
            word: db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (word,)).fetchone()[0]
            for word in ("quokkaword", "wombatword", "numbatword", "dugongword")
        }
    finally:
        db.close()
    assert found == dict.fromkeys(found, 1)
