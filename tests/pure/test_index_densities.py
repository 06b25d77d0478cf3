"""Each message's density found by the pass behind the words and kept beside its vectors (issue 90,
``index/densities.py``), on a real SQLite store: written with the vectors, found again after the reference is
drawn again, resumed where a pass stopped, an index without densities (or without their tables) still
ranked and given them by the pass, and one ranking never mixing two references."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import mail_imap_mcp.index.densities as densities_module
import mail_imap_mcp.meaning.hubness as hubness
from mail_imap_mcp.index.densities import DensityKeeper, Drawn, Places, read_reference, redraw_due
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, Hit, IndexedMessage
from mail_imap_mcp.index.sync_vectors import fill_vectors
from mail_imap_mcp.index.vectors import Densities
from mail_imap_mcp.meaning.hubness import WHOLE, densities, whole_densities, whole_rows
from mail_imap_mcp.services.search_meaning_hubs import dehubbed, forget
from tests.support.densities import DensitiesInMemory

Place = tuple[str, int]


class HashModel:
    """A text as a unit vector drawn from its hash: the same text, the same vector."""

    name = "hash-8"
    dimensions = 8

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for n, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            row = np.random.default_rng(seed).normal(size=self.dimensions)
            rows[n] = row / np.linalg.norm(row)
        return rows

    def rest(self) -> None:
        """Nothing is kept between calls."""


def message(uid: int) -> IndexedMessage:
    values = {"subject": f"message {uid}", "body": f"the text of message {uid}, topic {uid % 5}"}
    texts = tuple(values.get(column, "") for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_700_000_000 + uid * 60, 20260101, 1000, (), False, texts, arrival=uid)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SqliteStore]:
    """A SQLite store of 40 messages without vectors, the reference at most 16 of them."""
    monkeypatch.setattr(densities_module, "STORED_REFERENCE", 16)
    opened = SqliteStore(tmp_path / "index.sqlite3")
    opened.put(opened.start_folder("INBOX", 1), [message(uid) for uid in range(1, 41)])
    try:
        yield opened
    finally:
        opened.close()


def every(store: SqliteStore) -> list[Place]:
    return [("INBOX", uid) for uid in store.uids("INBOX")]


def expected(store: SqliteStore) -> dict[Place, float]:
    """Every message's density against the reference recorded, found afresh."""
    reference = read_reference(store)
    assert reference is not None
    return dict(reference.densities(store.vectors_of(every(store))).values)


def test_the_pass_writes_each_batchs_densities_with_its_vectors_and_every_one_of_the_last_reference(
    store: SqliteStore,
) -> None:
    written: list[Densities | None] = []
    put = store.put_vectors
    store.put_vectors = lambda model, vectors, found=None: (written.append(found), put(model, vectors, found))  # type: ignore[method-assign,func-returns-value]
    assert fill_vectors(store, HashModel(), lambda: False, batch=8) == 40
    # The first batch has no reference to be reckoned against; each later one is written with its densities.
    assert written[0] is None and all(found is not None and len(found.values) == 8 for found in written[1:])
    recorded = store.density_reference()
    assert recorded is not None and len(recorded.members) == 16
    stored = store.densities_of(every(store))
    assert stored is not None and stored.generation == recorded.generation
    assert stored.values == pytest.approx(expected(store), abs=1e-6) and len(stored.values) == 40
    assert store.densities_todo(recorded.generation, 100) == []


def test_a_reference_drawn_again_has_every_density_found_again(store: SqliteStore) -> None:
    fill_vectors(store, HashModel(), lambda: False, batch=8)
    first = store.density_reference()
    assert first is not None
    store.put(store.folders()["INBOX"], [message(uid) for uid in range(41, 121)])  # the mail has tripled
    assert redraw_due(Drawn.of(first), 120) and not redraw_due(Drawn.of(first), first.counted)
    fill_vectors(store, HashModel(), lambda: False, batch=8)
    again = store.density_reference()
    assert again is not None and again.generation > first.generation and again.counted == 120
    stored = store.densities_of(every(store))
    assert stored is not None and stored.generation == again.generation and len(stored.values) == 120
    assert stored.values == pytest.approx(expected(store), abs=1e-6)


def test_the_pass_counts_the_messages_with_vectors_once_and_draws_as_redraw_due_says(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted at the pass's start and end, what it gives vectors added between (PostgreSQL counts a
    million rows during a first fill), the reference drawn where :func:`redraw_due` says, as counted each
    batch: none at the first batch (no vectors), at 8 (none yet), 16 (grown by half), 32 (full at 16:
    doubled), and at the end of a pass that gave a quarter or more."""
    counted: list[int] = []
    drawn: list[int] = []
    count, draw = store.vector_counts, store.draw_density_reference
    monkeypatch.setattr(
        store, "vector_counts", lambda model, folders=None: (counted.append(1), count(model))[1]
    )
    monkeypatch.setattr(
        store, "draw_density_reference", lambda limit, at: (drawn.append(at), draw(limit, at))[1]
    )
    assert fill_vectors(store, HashModel(), lambda: False, batch=8) == 40
    assert len(counted) == 2 and drawn == [8, 16, 32, 40]
    expect: list[int] = []
    recorded: Drawn | None = None
    for with_vectors in (0, 8, 16, 24, 32):  # as counted before each batch
        if redraw_due(recorded, with_vectors):
            expect.append(with_vectors)
            recorded = Drawn(len(expect), with_vectors, min(with_vectors, 16))
    assert [*expect, 40] == drawn and redraw_due(recorded, 40, filled=40)


def test_a_pass_stopped_midway_goes_on_where_it_stopped(store: SqliteStore) -> None:
    store.put_vectors(HashModel.name, {place: HashModel().embed([f"{place}"]) for place in every(store)})
    keeper = DensityKeeper(store, HashModel.name)
    batches = iter(range(100))
    assert keeper.fill(lambda: next(batches) == 2, lambda: None, batch=10) == 20  # two batches, then stopped
    recorded = store.density_reference()
    assert recorded is not None and len(store.densities_todo(recorded.generation, 100)) == 20
    again = DensityKeeper(store, HashModel.name)  # another pass, after a restart
    assert again.fill(lambda: False, lambda: None, batch=10) == 20 and again.found == 20  # none found twice
    assert store.density_reference() == recorded  # not drawn again
    stored = store.densities_of(every(store))
    assert stored is not None and stored.values == pytest.approx(expected(store), abs=1e-6)


def test_an_index_without_densities_ranks_and_the_pass_gives_them(tmp_path: Path, store: SqliteStore) -> None:
    vectors = {place: HashModel().embed([f"{place}"]) for place in every(store)}
    store.put_vectors(HashModel.name, vectors)  # as a release before densities did
    store.close()
    with sqlite3.connect(tmp_path / "index.sqlite3") as db:  # a file of that release: no density tables
        for name in ("densities", "density_members", "density_reference"):
            db.execute(f"DROP TABLE {name}")
        db.execute("DROP TRIGGER densities_with_message")
    store.__init__(tmp_path / "index.sqlite3")  # type: ignore[misc]
    near = [Hit("INBOX", 1, uid, 1.0 - 0.5 + uid / 1000, 0, ()) for uid in range(1, 11)]
    assert store.densities_of(every(store)) is None
    assert dehubbed(store, near, store.densities_of(every(store))) == sorted(near, key=lambda hit: hit.rank)
    assert fill_vectors(store, HashModel(), lambda: False) == 0  # nothing to embed: the densities alone
    stored = store.densities_of(every(store))
    assert stored is not None and len(stored.values) == 40


def test_one_ranking_never_mixes_two_references(store: SqliteStore) -> None:
    fill_vectors(store, HashModel(), lambda: False, batch=8)
    old = store.densities_of(every(store))
    assert old is not None
    recorded = store.density_reference()
    assert recorded is not None
    # Drawn again (by another process, say): no message has a density of the new reference yet.
    store.put(store.folders()["INBOX"], [message(41)])  # the sample now another
    store.put_vectors(HashModel.name, {("INBOX", 41): HashModel().embed(["41"])})
    made = store.draw_density_reference(16, 41)
    assert made is not None and made > recorded.generation
    near = [Hit("INBOX", 1, uid, 0.5 + uid / 100, 0, ()) for uid in range(1, 30)]
    places = [(hit.folder, hit.uid) for hit in near]
    fresh = expected(store)
    assert fresh != pytest.approx({place: old.values.get(place, 0.0) for place in fresh})
    by_new = dehubbed(store, near, Densities(made, {}))
    assert by_new == dehubbed(store, near, Densities(made, {place: fresh[place] for place in places}))
    # Densities read before the new draw, some missing: every one is found against the new reference.
    forget(store)
    stale = Densities(old.generation, dict.fromkeys(places[:10], 100.0))
    assert dehubbed(store, near, stale) == by_new


def test_a_reference_is_drawn_again_only_where_it_pays() -> None:
    partial = Drawn(1, 1000, 1000)
    full = Drawn(1, 20_000, densities_module.STORED_REFERENCE)
    assert redraw_due(None, 1) and not redraw_due(None, 0)
    assert not redraw_due(partial, 1499) and redraw_due(partial, 1500)
    assert not redraw_due(full, 39_999) and redraw_due(full, 40_000) and redraw_due(full, 10_000)
    # At the end of a first fill, newest first: drawn again where the oldest mail came after it.
    assert redraw_due(full, 30_000, filled=7500) and not redraw_due(full, 30_000, filled=7499)
    assert not redraw_due(full, 20_000, filled=20_000)


def test_whole_densities_are_the_same_whatever_rows_they_are_found_beside() -> None:
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(300, 512)).astype(np.float32)
    messages = [rows[n : n + 1] for n in range(300)]
    reference = whole_rows(messages[:250], 512)
    mine = whole_rows(messages, 512)
    itself = [n if n < 250 else -1 for n in range(300)]
    together = whole_densities(mine, reference, itself)
    for start, end in ((0, 7), (100, 300), (249, 251)):
        assert np.array_equal(
            whole_densities(mine[start:end], reference, itself[start:end]), together[start:end]
        )
    exact = densities(
        whole_rows(messages, 512).astype(np.float32) / 127, reference.astype(np.float32) / 127, itself=itself
    )
    assert together == pytest.approx(exact, abs=1e-3)


@pytest.mark.parametrize("chunk", [1, 7, 64, 250, 2048])
def test_whole_densities_are_the_same_whatever_the_chunk_of_the_reference(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bit for bit the densities of every product at once, each row's ten best summed (whole numbers)."""
    rng = np.random.default_rng(7)
    messages = [row[None] for row in rng.normal(size=(120, 64)).astype(np.float32)]
    reference, mine = whole_rows(messages[:100], 64), whole_rows(messages[50:], 64)
    itself = [n + 50 if n < 50 else -1 for n in range(70)]
    products = mine.astype(np.float64) @ reference.astype(np.float64).T
    products[np.arange(50), np.arange(50, 100)] = -np.inf
    best = np.sort(products, axis=1)[:, -10:]
    monkeypatch.setattr(hubness, "REFERENCE_CHUNK", chunk)
    found = whole_densities(mine, reference, itself)
    assert np.array_equal(found, (best.sum(axis=1) / (10 * WHOLE * WHOLE)).astype(np.float32))
    few = whole_densities(mine, reference[:4], [-1] * 70)  # fewer than ten: all of them
    assert np.array_equal(
        few, (np.sort(products[:, :4], axis=1).sum(axis=1) / (4 * WHOLE * WHOLE)).astype(np.float32)
    )


def test_the_keeper_holds_the_references_members_once_as_arrays(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference's places as two arrays beside its rows, its members' list not kept (issue 90: 2 MB
    of tuples at 10,000), and the C heap given back once it is read (the pass gives it back after each
    batch)."""
    trims: list[int] = []
    monkeypatch.setattr(densities_module, "give_back_heap", lambda: trims.append(1) or True)
    store.put_vectors(HashModel.name, {place: HashModel().embed([f"{place}"]) for place in every(store)})
    keeper = DensityKeeper(store, HashModel.name)
    reference = keeper.refresh()
    recorded = store.density_reference()
    assert reference is not None and recorded is not None and trims == [1]
    assert isinstance(reference.places, Places) and len(reference.places) == len(recorded.members) == 16
    members = list(recorded.members)
    assert reference.places.rows_of([*members, ("INBOX", 999), ("Elsewhere", members[0][1])]) == [
        *range(16),
        -1,
        -1,
    ]
    held = [value for value in vars(keeper).values() if isinstance(value, tuple | list | dict)]
    assert held == [] and keeper._drawn == Drawn(recorded.generation, recorded.counted, 16)
    assert keeper.refresh() is reference and trims == [1]  # not read again: the same generation
    found = keeper.of({("INBOX", 1): HashModel().embed(["new"])})
    assert found is not None and found.generation == recorded.generation and trims == [1]


class OtherModel(HashModel):
    """Another model, of other dimensions."""

    name = "hash-16"
    dimensions = 16


def test_another_models_vectors_drop_the_densities_and_the_pass_finds_them_again(store: SqliteStore) -> None:
    fill_vectors(store, HashModel(), lambda: False, batch=8)
    first = store.density_reference()
    assert first is not None
    assert fill_vectors(store, OtherModel(), lambda: False, batch=8) == 40
    again = store.density_reference()
    assert again is not None and again.generation > first.generation
    stored = store.densities_of(every(store))
    assert stored is not None and stored.values == pytest.approx(expected(store), abs=1e-6)
    assert len(stored.values) == 40


class _InMemory(DensitiesInMemory):
    """The tests' in-memory vector store (tests/support/densities.py), its vectors a dict."""

    def __init__(self) -> None:
        super().__init__()
        self.vectors = {}

    def put_vectors(self, model: str, vectors: dict[Place, npt.NDArray[np.float32]]) -> None:
        self.vectors.update(vectors)

    def vector_sample(self, limit: int) -> dict[Place, npt.NDArray[np.float32]]:
        return dict(list(self.vectors.items())[:limit])


@pytest.fixture(params=["sqlite", "memory"])
def density_store(request: pytest.FixtureRequest, store: SqliteStore) -> SqliteStore | _InMemory:
    """A store of 40 messages with vectors and no reference: the SQLite engine's, or the tests' fake."""
    held: SqliteStore | _InMemory = store if request.param == "sqlite" else _InMemory()
    places = [("INBOX", uid) for uid in range(1, 41)]
    rows = HashModel().embed([str(place) for place in places])
    held.put_vectors(HashModel.name, {place: rows[n : n + 1] for n, place in enumerate(places)})
    return held


def test_the_density_methods_keep_the_same_contract_on_sqlite_and_the_in_memory_fake(
    density_store: SqliteStore | _InMemory,
) -> None:
    held = density_store
    one, other = ("INBOX", 40), ("INBOX", 1)
    assert held.density_reference() is None and held.densities_of([one]) is None
    first = held.draw_density_reference(16, 40)
    assert first is not None
    recorded = held.density_reference()
    assert recorded is not None and recorded.generation == first and recorded.counted == 40
    assert 0 < len(recorded.members) <= 16 and set(recorded.members) <= {
        ("INBOX", uid) for uid in range(1, 41)
    }
    assert len(held.densities_todo(first, 100)) == 40 and len(held.densities_todo(first, 5)) == 5
    assert held.put_densities(Densities(first, {one: 0.5}))
    assert held.densities_of([one, other]) == Densities(first, {one: 0.5})
    assert one not in held.densities_todo(first, 100) and len(held.densities_todo(first, 100)) == 39
    assert not held.put_densities(Densities(first + 7, {other: 0.25}))  # not the reference's: nothing kept
    assert held.densities_of([other]) == Densities(first, {})
    again = held.draw_density_reference(16, 40)
    assert again is not None and again > first
    assert held.densities_of([one]) == Densities(again, {})  # found against the reference before
    assert one in held.densities_todo(again, 100)
