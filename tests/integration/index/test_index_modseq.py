"""A folder the index first stored without MODSEQs (seen ``NOMODSEQ``, or its HIGHESTMODSEQ 0) tracks
them once the server keeps them (issue 35): its next sync compares every flag, then stores the server's
HIGHESTMODSEQ, so later flag changes show in STATUS and are asked for with CHANGEDSINCE."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.store import flag_bits
from mail_imap_mcp.index.sync import Indexer, sync_folder_now
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.clients.index_clients import index_file
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import ServerCase, case_fixtures, engine_of, on_engine
from tests.support.shared.index_search import message, other_client

case, server = case_fixtures(("dovecot", "cyrus"), ("dovecot",))  # with CONDSTORE


def forget_modseqs(config: Config) -> None:
    """Store HIGHESTMODSEQ 0 for every folder, as an index made while the mailbox kept none did."""
    if config.index.index_engine != "postgresql":
        db = sqlite3.connect(index_file(Path(config.server.index_dir or "")))
        db.execute("UPDATE folders SET highestmodseq = 0")
        db.commit()
        db.close()
        return
    with psycopg.connect(config.index.index_url or "", password=index_password(config.index)) as conn:
        conn.execute("UPDATE mimx_default.folders SET highestmodseq = 0")


def test_a_folder_stored_without_modseqs_tracks_them_once_the_server_keeps_them(
    request: pytest.FixtureRequest, server: MatrixServer, case: ServerCase, tmp_path: Path
) -> None:
    user = server.new_user()
    server.seed(user, "INBOX", [message(i, "kiwiword") for i in range(3)])
    config = make_config({"default": account_settings(server, user)}, index_dir=str(tmp_path / "ix"))
    config = on_engine(config, *engine_of(request, case[1]))
    connection = AccountConnection(
        "default",
        config.accounts["default"],
        credentials=credentials_for("default", config.accounts["default"]),
        enable_qresync=True,
    )
    engine = open_engine(config)
    store = engine.location("default", config.accounts["default"]).open().store
    indexer = Indexer(store, "default", 1000)

    def sync(session: ImapSession) -> int:
        return sync_folder_now(session, indexer, "INBOX", limit=1000).left

    try:
        connection.run(sync)
        assert store.folders()["INBOX"].highestmodseq > 0
        forget_modseqs(config)
        with other_client(server, user) as other:
            other.select_folder("INBOX")
            other.add_flags([1], ["\\Flagged"])
            assert connection.run(sync) == 0
            first = store.folders()["INBOX"].highestmodseq
            assert first > 0  # tracked again, after a full flag comparison
            assert store.flags_of("INBOX")[1] == flag_bits(("\\Flagged",))
            other.add_flags([2], ["\\Seen"])
            assert connection.run(sync) == 0
            assert store.folders()["INBOX"].highestmodseq > first
            assert store.flags_of("INBOX")[2] == flag_bits(("\\Seen",))
    finally:
        connection.close()
        store.close()
        engine.close()
