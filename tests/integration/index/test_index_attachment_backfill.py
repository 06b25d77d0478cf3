"""Turning ``index_attachments`` on for an index already built reads the attachments of the messages it
already holds (issue 35): the next sync indexes those messages again with their attachments' text, in
bounded steps that a stop (or a kill) leaves to the next run, never twice."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.cli.index import run_index
from mail_imap_mcp.config import Config, IndexSettings, load_config
from mail_imap_mcp.content import sandbox
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.index.attachments import AttachmentReading
from mail_imap_mcp.index.build import BuildHooks, build
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.engines.sqlite.location import open_index
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.sync import Indexer
from tests.support.accounts import account_settings, config_toml
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import index_file, wait_ready
from tests.support.patience import patient
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import IndexEngineParam, index_table
from tests.support.shared.index_attachments import FETCH_BYTES, MESSAGES, found

pytestmark = pytest.mark.anyio

#: The messages of MESSAGES with attachments (the last has none).
WITH_ATTACHMENTS = 4


def built_without_attachments(
    dovecot: MatrixServer, tmp_path: Path, index: dict[str, str] | None = None
) -> str:
    """A user with MESSAGES, indexed as ``mail-imap-mcp index`` indexes, with ``index_attachments`` off
    (``index``: the ``[index]`` table of an index in PostgreSQL; None: SQLite). The command's own run, in
    this process: a process of its own proved nothing more here and took 0.5-0.8 CPU-seconds a test (the
    command as a user runs it is test_index_build.py's and test_index_cli_engines.py's)."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", MESSAGES)
    path = tmp_path / "config.toml"
    extra = f'\n[server]\nindex = true\nindex_dir = "{tmp_path / "ix"}"\n'
    if index is not None:
        extra += "[index]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in index.items())
    path.write_text(config_toml({"default": account_settings(dovecot, user)}) + extra)
    assert run_index(load_config(path), None, drop=False, words=str) == 0
    return user


def attachments_read(tmp_path: Path, index: dict[str, str] | None = None) -> int:
    if index is not None:
        with psycopg.connect(index["index_url"], password=os.environ[index["index_password_env"]]) as conn:
            row = conn.execute(
                "SELECT count(*) FROM mimx_default.messages WHERE has_attachment AND attachments_read"
            ).fetchone()
        return int(row[0]) if row else 0
    db = sqlite3.connect(index_file(tmp_path / "ix"))
    try:
        return int(
            db.execute("SELECT count(*) FROM messages WHERE has_attachment AND attachments_read").fetchone()[
                0
            ]
        )
    finally:
        db.close()


def with_attachments_on(
    dovecot: MatrixServer, user: str, tmp_path: Path, index: dict[str, str] | None = None
) -> Config:
    config = make_config(
        {"default": account_settings(dovecot, user)},
        index=True,
        index_dir=str(tmp_path / "ix"),
        index_attachments=True,
        index_attachment_bytes=FETCH_BYTES,
    )
    if index is None:
        return config
    return config.model_copy(update={"index": IndexSettings.model_validate(index)})


async def test_turned_on_for_a_built_index_the_attachments_of_indexed_mail_are_read(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    index = index_table(index_engine[1]) if index_engine[1] is not None else None
    user = built_without_attachments(dovecot, tmp_path, index)
    assert attachments_read(tmp_path, index) == 0
    config = with_attachments_on(dovecot, user, tmp_path, index)
    async for mcp in open_client(config, AppContext.from_config(config)):
        assert await wait_ready(mcp, within=120) == "ready"
        # The index was ready before: the backfill runs in the background, and searches do not wait
        # for it (it holds the index's lock a chunk's write at a time).
        with anyio.fail_after(patient(120)):
            while attachments_read(tmp_path, index) < WITH_ATTACHMENTS:
                await anyio.sleep(0.05)
        assert await found(mcp, "quokkaword") == ["quarterly report"]  # inside the PDF
        assert await found(mcp, "wombatword") == ["meeting notes"]  # inside the DOCX
        assert await found(mcp, "dugongword") == ["after them"]
    assert attachments_read(tmp_path, index) == WITH_ATTACHMENTS


def test_the_backfill_goes_in_steps_and_a_stopped_one_continues(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    index = index_table(index_engine[1]) if index_engine[1] is not None else None
    user = built_without_attachments(dovecot, tmp_path, index)
    config = with_attachments_on(dovecot, user, tmp_path, index)

    def run(stop_after: int | None) -> int:
        read: list[int] = []
        hooks = BuildHooks(
            on_progress=lambda folder, messages, size: read.append(messages),
            stop=lambda: stop_after is not None and len(read) >= stop_after,
        )
        connection = AccountConnection(
            "default",
            config.accounts["default"],
            credentials=credentials_for("default", config.accounts["default"]),
            enable_qresync=True,
        )
        engine = open_engine(config)
        store = engine.location("default", config.accounts["default"]).open().store
        reading = AttachmentReading.of(config.server)
        try:
            build(
                connection,
                Indexer(store, "default", config.server.index_text_bytes, attachments=reading),
                hooks,
                step=1,
            )
        finally:
            connection.close()
            store.close()
            engine.close()
        return sum(read)

    assert run(stop_after=1) == 1  # one step of one message, then stopped (as a kill would)
    assert attachments_read(tmp_path, index) == 1
    assert run(stop_after=None) == WITH_ATTACHMENTS - 1  # the rest, not the one already read
    assert attachments_read(tmp_path, index) == WITH_ATTACHMENTS
    assert run(stop_after=None) == 0  # nothing read twice


class LockProbe:
    """The indexer's attachment reader, asking at each document whether another thread could take the
    indexer's lock now (a search of the same process would wait for it otherwise)."""

    def __init__(self, worker: Any, lock: Any) -> None:
        self._worker = worker
        self._lock = lock
        self.free: list[bool] = []

    def run(self, *args: Any, **kwargs: Any) -> Any:
        taken: list[bool] = []

        def take() -> None:
            got = self._lock.acquire(timeout=0)
            taken.append(got)
            if got:
                self._lock.release()

        other = threading.Thread(target=take)
        other.start()
        other.join()
        self.free.append(taken[0])
        return self._worker.run(*args, **kwargs)

    def close(self) -> None:
        self._worker.close()


def backfill_parts(
    dovecot: MatrixServer, tmp_path: Path, stop: Callable[[], bool] | None = None
) -> tuple[AccountConnection, SqliteStore, Indexer]:
    """An account built without attachments, then turned on: its connection, its index's store and an
    indexer that reads attachments (``stop``: its stop flag)."""
    user = built_without_attachments(dovecot, tmp_path)
    config = with_attachments_on(dovecot, user, tmp_path)
    connection = AccountConnection(
        "default",
        config.accounts["default"],
        credentials=credentials_for("default", config.accounts["default"]),
        enable_qresync=True,
    )
    store = open_index(index_file(tmp_path / "ix")).store
    reading = AttachmentReading.of(config.server)
    indexer = Indexer(store, "default", config.server.index_text_bytes, attachments=reading, stop=stop)
    return connection, store, indexer


def test_the_backfill_reads_attachments_without_holding_the_index_lock(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    connection, store, indexer = backfill_parts(dovecot, tmp_path)
    probe = LockProbe(indexer.worker, indexer.lock)
    indexer.worker = probe  # type: ignore[assignment]
    try:
        build(connection, indexer, step=500)
    finally:
        connection.close()
        store.close()
    assert attachments_read(tmp_path) == WITH_ATTACHMENTS
    assert probe.free and all(probe.free), probe.free


def test_a_stop_ends_the_backfill_inside_its_step(dovecot: MatrixServer, tmp_path: Path) -> None:
    """Closing an index (its stop flag) ends a step of the sync at the next chunk or round of
    attachments, not after the whole step (500 messages with attachments: over a minute)."""
    stop = threading.Event()
    connection, store, indexer = backfill_parts(dovecot, tmp_path, stop.is_set)
    read: list[str] = []

    class StopAtFirst:
        def __init__(self, worker: Any) -> None:
            self._worker = worker

        def run(self, *args: Any, **kwargs: Any) -> Any:
            read.append(args[0])
            stop.set()  # as AccountIndex.close() does
            return self._worker.run(*args, **kwargs)

        def close(self) -> None:
            self._worker.close()

    indexer.worker = StopAtFirst(indexer.worker)  # type: ignore[assignment]
    try:
        build(connection, indexer, step=500)
    finally:
        connection.close()
        store.close()
    assert len(read) == 1  # the step of every message stopped after the first document
    assert attachments_read(tmp_path) == 0  # the chunk not stored: the next run reads it


def test_regression_the_build_holds_no_sandbox_slot_between_chunks_of_documents(
    dovecot: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reader's child was kept from the first document to the build's end (hours on a large mailbox),
    # holding one of the few sandbox slots: the user's own attachment reads waited for one and failed.
    connection, store, indexer = backfill_parts(dovecot, tmp_path)
    free_between: list[int] = []
    real_put = store.put

    def put(*args: Any, **kwargs: Any) -> None:  # a chunk stored: its documents read
        free_between.append(sandbox._SLOTS._value)  # type: ignore[attr-defined]
        real_put(*args, **kwargs)

    monkeypatch.setattr(store, "put", put)
    try:
        build(connection, indexer, step=500)
    finally:
        connection.close()
        store.close()
    assert attachments_read(tmp_path) > 0
    assert free_between and set(free_between) == {sandbox.MAX_CONCURRENT_CHILDREN}
