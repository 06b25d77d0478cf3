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
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from tests.integration.index.test_index_build import index
from tests.support.accounts import account_settings, config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import index_file, wait_ready
from tests.support.mail.documents import _w_par, docx_bytes, text_pdf
from tests.support.mail.mailgen import crlf
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import IndexEngineParam, on_engine

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
#: The per-message fetch bound of the test (the smallest allowed value times 16).
FETCH_BYTES = 65_536


def with_attachments(subject: str, body: str, *attachments: tuple[bytes, str, str]) -> bytes:
    """A message with ``body`` and each (data, media type, file name) attached."""
    msg = EmailMessage()
    msg["From"] = "Reports <reports@example.com>"
    msg["To"] = "user@example.org"
    msg["Subject"] = subject
    msg["Date"] = "Mon, 03 Feb 2025 10:00:00 +0100"
    msg["Message-ID"] = f"<{subject.replace(' ', '.')}@attachments.test>"
    msg.set_content(body)
    for data, media_type, filename in attachments:
        maintype, subtype = media_type.split("/", 1)
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return crlf(msg)


MESSAGES = [
    with_attachments(
        "quarterly report",
        "See the attached figures.\n",
        (text_pdf([["revenue quokkaword up"]]), "application/pdf", "q.pdf"),
    ),
    with_attachments(
        "meeting notes", "Notes attached.\n", (docx_bytes(_w_par("agreed on wombatword")), DOCX, "notes.docx")
    ),
    with_attachments(
        "damaged files",
        "Two files, one broken.\n",
        (b"%PDF-1.7\nthis is no pdf at all", "application/pdf", "broken.pdf"),
        (b"the good one says numbatword\n", "text/plain", "good.txt"),
    ),
    with_attachments(
        "huge log",
        "The platypusword log is attached.\n",
        # The first word is read; the last lies past index_attachment_bytes (base64 makes it larger yet).
        (
            b"dingoword\n" + (b"x" * 99 + b"\n") * (2 * FETCH_BYTES // 100) + b"echidnaword\n",
            "text/plain",
            "log.txt",
        ),
        (text_pdf([["bilbyword"] * 2]) + b"%" + b"p" * FETCH_BYTES, "application/pdf", "too-big.pdf"),
    ),
    with_attachments("after them", "The last message says dugongword.\n"),
]


async def found(mcp: EnvelopeClient, word: str) -> list[str]:
    data: dict[str, Any] = await mcp.ok(SEARCH, {"query": word, "mailbox": "INBOX", "fields": "full"})
    return [m["subject"] for m in data["messages"]]


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
