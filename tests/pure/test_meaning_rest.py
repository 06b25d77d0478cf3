"""The models let go of their caches when the vectors pass has nothing left to do (issue 90 item
2: memory for a million messages): the words' tokens, the tokens' projections and table rows kept serve a
pass over many texts, not a question now and then. Let go, it keeps none of them and embeds the same."""

from __future__ import annotations

import platform
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mail_imap_mcp.index import sync_vectors
from mail_imap_mcp.index.engines.sqlite.engine import SqliteLocation
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.index.sync_vectors import VectorKeeper
from mail_imap_mcp.meaning import multilingual
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from mail_imap_mcp.meaning.token_table import FileRows
from tests.support.patience import eventually, patient

TEXTS = [
    "Die Heizung in der Wohnung ist seit Montag kalt, der Vermieter schickt einen Techniker.",
    "The invoice for the homepage overhaul is attached, due within thirty days.",
    "Réunion d'équipe déplacée à jeudi, merci de confirmer votre présence.",
]


def test_let_go_the_model_keeps_no_word_token_or_row_and_embeds_the_same() -> None:
    model = multilingual.load_files(*multilingual.package_files(), threads=1)
    first = model.embed(TEXTS)
    assert model._kept_words and model._kept.count > 0
    # Made afresh or taken from what was kept, a token's projections are the same half floats.
    np.testing.assert_array_equal(model.embed(TEXTS), first)
    rows = model._table
    if isinstance(rows, FileRows):  # where the cache directory can be written (it can in the suite)
        assert rows._kept.count > 0
    model.rest()
    assert not model._kept_words and model._kept.count == 0 and (model._kept.slot < 0).all()
    if isinstance(rows, FileRows):
        assert rows._kept.count == 0 and (rows._kept.slot < 0).all()
    np.testing.assert_array_equal(model.embed(TEXTS), first)
    assert model._kept.count > 0  # kept again as met


def test_let_go_the_english_model_keeps_no_word_and_embeds_the_same() -> None:
    pytest.importorskip("wordllama", reason="WordLlama has no wheel for this platform")
    model = shipped_model(ENGLISH)
    words = model._words  # type: ignore[attr-defined]
    first = model.embed(TEXTS)
    assert words._kept
    model.rest()
    assert not words._kept
    np.testing.assert_array_equal(model.embed(TEXTS), first)


def test_the_pass_lets_its_model_go_of_its_caches_once_it_has_nothing_left(tmp_path: Path) -> None:
    (tmp_path / "ix").mkdir(mode=0o700)
    location = SqliteLocation(tmp_path / "ix" / "a.sqlite3")
    store = location.open().store
    texts = tuple("the radiator" if column == "body" else "" for column in TEXT_COLUMNS)
    store.put(
        store.start_folder("INBOX", 1),
        [IndexedMessage(uid, uid, 20260101, 1, (), False, texts) for uid in (1, 2)],
    )
    store.close()
    calls: list[str] = []

    class Resting:
        name, dimensions = "resting", 4

        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            calls.append("embed")
            return np.full((len(texts), 4), 0.5, dtype=np.float32)

        def rest(self) -> None:
            calls.append("rest")

    model = Resting()
    keeper = VectorKeeper("a", location, threading.Event(), lambda: model)
    keeper.due()
    eventually(lambda: keeper.status.words() == "ready" and "rest" in calls, within=10, what="the pass idle")
    keeper.join(patient(10))  # wakes the thread: a pass more, with nothing to do, may rest again
    assert calls[:2] == ["embed", "rest"] and set(calls[2:]) <= {"rest"}


def test_the_pass_hands_the_heap_back_after_each_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """glibc keeps the free pages a batch's arrays leave behind: 8 MiB and more over a pass on mail of
    many words (docs/search.md), given back by ``malloc_trim`` after each batch."""
    trims: list[int] = []
    monkeypatch.setattr(sync_vectors, "give_back_heap", lambda: trims.append(1) or True)
    store = SqliteStore(tmp_path / "index.sqlite3")
    try:
        texts = tuple(f"note {column}" for column in TEXT_COLUMNS)
        store.put(
            store.start_folder("INBOX", 1),
            [IndexedMessage(uid, uid, 20260101, 1, (), False, texts) for uid in range(1, 26)],
        )
        batches: list[int] = []
        assert (
            sync_vectors.fill_vectors(
                store, Flat(), lambda: False, batch=10, pause=lambda: batches.append(len(trims))
            )
            == 25
        )
    finally:
        store.close()
    assert batches == [1, 2, 3, 4]  # trimmed before each rest: three batches of vectors, one of densities


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_heap_is_handed_back_where_the_c_library_is_glibc() -> None:
    assert sync_vectors.give_back_heap()


class Flat:
    name, dimensions = "flat", 4

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.full((len(texts), 4), 0.5, dtype=np.float32)

    def rest(self) -> None:
        """Nothing is kept between calls."""
