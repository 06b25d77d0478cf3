"""``mail-imap-mcp index`` on real servers: it builds the local index, never sets a flag, continues after
being killed at any point to the same index a run without a kill builds, follows the server's changes
(new mail, flags, expunges, a recreated and a deleted folder). ``--status`` and ``--drop``, which ask no
server, are test_index_cli_engines.py's, on each engine."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mail_imap_mcp.config import load_config
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.sync import CHUNK
from tests.support.accounts import account_settings, config_toml
from tests.support.clients.in_process import make_config
from tests.support.clients.index_clients import identity_file, index_file
from tests.support.index_integrity import index_problems
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually, patient
from tests.support.run.readme import INDEX, readme_block
from tests.support.servers.matrix import MATRIX, MatrixServer
from tests.support.servers.postgres import (
    IndexEngineParam,
    case_fixtures,
    case_index_engine,
    index_table,
)
from tests.support.shared.index_build import index

case, server = case_fixtures((*MATRIX, "dovecot_rev1"), ("dovecot",))
index_engine = case_index_engine


def messages(count: int, start: int = 0) -> list[bytes]:
    return [
        plain_message(
            f"index {i} {'invoice' if i % 3 == 0 else 'hello'}",
            f"words of message {i}\r\n\r\nOn Monday someone wrote:\r\n> the quoted part {i}\r\n",
            message_id=f"<i{i}@index.test>",
        )
        for i in range(start, start + count)
    ]


def write_config(
    tmp_path: Path, server: MatrixServer, user: str, engine: IndexEngineParam = ("sqlite", None)
) -> Path:
    path = tmp_path / "config.toml"
    extra = f'\n[server]\nindex = true\nindex_dir = "{tmp_path / "index"}"\n'
    if engine[1] is not None:  # its indexes in a database of its own of the session's PostgreSQL
        table = index_table(engine[1])
        extra += "[index]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())
    path.write_text(config_toml({"default": account_settings(server, user)}) + extra)
    return path


def stored(config: Path) -> tuple[list[Any], list[Any]]:
    """What the index of ``config`` holds, without its row ids: folders and messages, whichever engine."""
    loaded = load_config(config)
    if loaded.index.index_engine != "postgresql":
        return rows(index_file(Path(loaded.server.index_dir or "")))[:2]
    with psycopg.connect(loaded.index.index_url or "", password=index_password(loaded.index)) as conn:
        folders = conn.execute(
            "SELECT name, uidvalidity, uidnext, messages, complete FROM mimx_default.folders ORDER BY name"
        ).fetchall()
        kept = conn.execute(
            "SELECT f.name, m.uid, m.sent, m.flag_bits, m.keywords, m.doc FROM mimx_default.messages m "
            "JOIN mimx_default.folders f ON f.id = m.folder ORDER BY f.name, m.uid"
        ).fetchall()
    return folders, kept


def rows(db_path: Path) -> tuple[list[Any], list[Any], int]:
    """What the index holds, without its row ids: folders, messages, and FTS5 hits of a few words."""
    db = sqlite3.connect(db_path)
    try:
        assert index_problems(db) == []
        folders = db.execute(
            "SELECT name, uidvalidity, uidnext, messages, complete FROM folders ORDER BY name"
        ).fetchall()
        kept = db.execute(
            "SELECT f.name, m.uid, m.sent, m.flag_bits, m.keywords, m.doc FROM messages m "
            "JOIN folders f ON f.id = m.folder ORDER BY f.name, m.uid"
        ).fetchall()
        found = sum(
            db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (word,)).fetchone()[0]
            for word in ("invoice", "hello", "quoted", "words")
        )
        return folders, kept, found
    finally:
        db.close()


def flags_of(server: MatrixServer, user: str, mailbox: str) -> dict[int, frozenset[bytes]]:
    imap = server.connect(user, tls=False, starttls=False)
    try:
        imap.select_folder(mailbox, readonly=True)
        uids = imap.search("ALL")
        return {uid: frozenset(d[b"FLAGS"]) - {b"\\Recent"} for uid, d in imap.fetch(uids, ["FLAGS"]).items()}
    finally:
        imap.logout()


def test_the_index_follows_the_server_and_sets_no_flag(
    server: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    user = server.new_user()
    archive = server.mailbox_name("Archive")
    old = server.mailbox_name("Old")
    server.seed(user, "INBOX", messages(30), flags=lambda i: "\\Seen" if i % 2 else "")
    server.seed(user, archive, messages(10, 100))
    server.seed(user, old, messages(5, 200))
    config = write_config(tmp_path, server, user, index_engine)
    before = flags_of(server, user, "INBOX")
    done = index(config)
    assert done.returncode == 0, done.stderr
    assert "45 new message(s) indexed in" in done.stdout
    assert "45 message(s) to index" in done.stderr  # plain lines: stderr is no terminal here
    assert flags_of(server, user, "INBOX") == before
    folders, kept = stored(config)
    # Cyrus makes empty Trash, Sent... for a new user: every listed folder is indexed.
    assert {(name, count) for name, _, _, count, _ in folders if count} == {
        ("INBOX", 30),
        (archive, 10),
        (old, 5),
    }

    imap = server.connect(user, tls=False, starttls=False)
    try:
        imap.select_folder("INBOX")
        uids = imap.search("ALL")
        imap.add_flags(uids[:3], [b"\\Flagged"])
        imap.add_flags(uids[3:5], [b"\\Deleted"])
        imap.expunge()
        imap.delete_folder(old)
    finally:
        imap.logout()
    server.seed(user, "INBOX", messages(4, 300))
    server.recreate_mailbox(user, archive)
    server.seed(user, archive, messages(2, 400))
    again = index(config)
    assert again.returncode == 0, again.stderr
    folders, kept = stored(config)
    assert {(name, count) for name, _, _, count, _ in folders if count} == {("INBOX", 32), (archive, 2)}
    assert old not in {name for name, *_ in folders}
    inbox = {uid: bits for name, uid, _, bits, _, _ in kept if name == "INBOX"}
    server_flags = flags_of(server, user, "INBOX")
    assert set(inbox) == set(server_flags)
    assert {uid for uid, bits in inbox.items() if bits & 4} == {
        u for u, f in server_flags.items() if b"\\Flagged" in f
    }
    assert {uid for uid, bits in inbox.items() if bits & 1} == {
        u for u, f in server_flags.items() if b"\\Seen" in f
    }


def test_the_readme_index_commands_build_the_index(dovecot: MatrixServer, tmp_path: Path) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", messages(5))
    config = tmp_path / "config.toml"
    settings = config_toml({"default": account_settings(dovecot, user)})
    config.write_text(f'{settings}\n{readme_block("index-config", INDEX)}index_dir = "{tmp_path / "ix"}"\n')
    command = readme_block("index", INDEX).split("#")[0].split()
    assert command == ["mail-imap-mcp", "index"]
    done = index(config, *command[2:])
    assert done.returncode == 0, done.stderr
    assert "5 new message(s) indexed in" in done.stdout
    assert (index_file(tmp_path / "ix")).exists()


#: The mail the killed build indexes: three times the chunks the kills wait for (one, two, three of the
#: build's :data:`~mail_imap_mcp.index.sync.CHUNK`), so that each kill lands within the first folder
#: with at least as much of it left as was stored, and the second folder is left whole for the resumed
#: run. Twice this (4,500 messages, kills at two, four and six chunks) proved the same at twice the CPU.
KILLED_INBOX, KILLED_ARCHIVE = 6 * CHUNK, 3 * CHUNK


@pytest.mark.slow
def test_a_build_killed_at_any_point_continues_to_the_same_index(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", messages(KILLED_INBOX), flags=lambda i: "\\Seen" if i % 2 else "")
    dovecot.seed(user, "Archive", messages(KILLED_ARCHIVE, 5000))
    total = KILLED_INBOX + KILLED_ARCHIVE
    killed_dir, whole_dir = tmp_path / "killed", tmp_path / "whole"
    killed_dir.mkdir()
    whole_dir.mkdir()
    killed_config = write_config(killed_dir, dovecot, user)
    db_path = identity_file(killed_dir / "index", make_config({"default": account_settings(dovecot, user)}))
    kills = 0
    for _ in range(3):  # killed three times, each time later in the build
        running = index(killed_config, wait=False)
        target = CHUNK * (kills + 1)

        def reached_or_ended(running: subprocess.Popen[str] = running, target: int = target) -> str | None:
            if running.poll() is not None:
                return "ended"
            try:
                db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
                count = db.execute("SELECT count(*) FROM messages").fetchone()[0]
                db.close()
            except sqlite3.Error:
                count = 0
            return "reached" if count >= target else None

        if eventually(reached_or_ended, within=120, interval=0.02) == "reached":
            os.kill(running.pid, signal.SIGKILL)
            kills += 1
        running.wait(timeout=patient(60))
        running.stdout.close()  # type: ignore[union-attr]
        running.stderr.close()  # type: ignore[union-attr]
    assert kills == 3
    partial = rows(db_path)[1]
    assert 3 * CHUNK <= len(partial) < total
    resumed = index(killed_config)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{total - len(partial)} message(s) to index" in resumed.stderr
    whole = index(write_config(whole_dir, dovecot, user))
    assert whole.returncode == 0, whole.stderr
    assert rows(db_path) == rows(index_file(whole_dir / "index"))
