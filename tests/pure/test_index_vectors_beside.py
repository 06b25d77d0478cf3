"""The pass of ``mail-imap-mcp index`` that gives the messages vectors runs beside the build of the words,
on a store of its own (issue 80): what the build has stored gains vectors while the build goes on, every
message has them when it ends, and a build that fails stops the pass and is said as it was."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, FolderState, IndexedMessage
from mail_imap_mcp.index.sync_vectors import build_beside
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from tests.support.patience import eventually

STORES = {"sqlite": SqliteStore, "sqlite+tantivy": TantivyStore}


def message(uid: int, subject: str) -> IndexedMessage:
    texts = tuple(subject if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_700_000_000 + uid * 60, 20231114, 1000, (), False, texts)


@pytest.mark.parametrize("engine", sorted(STORES))
def test_what_the_build_has_stored_gains_vectors_while_it_goes_on(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    words = STORES[engine](path)
    model = shipped_model(ENGLISH)

    def build() -> str:
        inbox = words.start_folder("INBOX", 1)
        words.put(
            FolderState("INBOX", 1, 4, 0, 3), [message(uid, f"heating bill {uid}") for uid in (1, 2, 3)]
        )
        # The build goes on only once the pass has given its first messages vectors: beside it, not after.
        eventually(lambda: words.vector_counts(model.name).with_vectors == 3, within=60, what="vectors")
        words.put(FolderState(inbox.name, 1, 6, 0, 5), [message(uid, f"parcel {uid}") for uid in (4, 5)])
        return "built"

    try:
        answer, said = build_beside(lambda: STORES[engine](path), lambda: model, build)
        assert answer == "built"
        assert said == "5 message(s) given vectors; 5 of 5 have them"
        assert not words.vector_counts(model.name).partial
    finally:
        words.close()


def test_a_build_that_fails_stops_the_pass_and_is_said_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"

    def build() -> str:
        raise RuntimeError("the mail server went away")

    with pytest.raises(RuntimeError, match="went away"):
        build_beside(lambda: SqliteStore(path), lambda: shipped_model(ENGLISH), build)
    assert not [thread for thread in threading.enumerate() if thread.name == "vectors-beside"]
