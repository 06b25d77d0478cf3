"""The vectors of the index in PostgreSQL (search by meaning, issue 80), store to store, on both of the
tests' PostgreSQLs: Debian's, which has no pgvector (the vectors in a table, ranked in each instance from
its quantised copy), and PostgreSQL 18 with pgvector 0.8.2 (``halfvec`` under an HNSW index). On each:
the nearest messages by their nearest passage, against the exact ranking of the same vectors; every
filter of the query tree and the folders; vectors removed with their messages (expunged, stored again,
a folder dropped); what still has none, newest first, and the counts; another model's vectors replacing
them; an index of the release before gaining them; and the team case: two instances sharing one index,
each finding what the other stored and not what it removed."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest

from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.engines.postgresql import binary_copy, vector_copy
from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine
from mail_imap_mcp.index.engines.postgresql.query import PgQuery
from mail_imap_mcp.index.engines.postgresql.store import PostgresStore, Scoped
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage, IndexUnusable
from mail_imap_mcp.index.vectors import VectorCounts
from mail_imap_mcp.meaning import packed
from mail_imap_mcp.meaning import vectors as meaning_vectors
from mail_imap_mcp.meaning.vectors import Passing
from mail_imap_mcp.query.tree import AllOf, Contains, HasFlag, Not, Query
from tests.support.patience import patient
from tests.support.servers.postgres import (
    CONNECT_TIMEOUT_S,
    SUPERUSER,
    PostgresServer,
    index_table,
    new_database,
    schema_before,
)

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
MODEL, OTHER_MODEL = "wordllama-l2_supercat-256", "another-model-64"
DIMENSIONS = 256
#: The two PostgreSQLs: the session fixture of each, and whether it carries pgvector.
POSTGRESQLS = {"debian": ("postgres", False), "pgvector": ("postgres_vector", True)}
#: How far a rank may be from the exact ``1 - cosine`` (half floats, and the table's int8 copy).
RANK_TOLERANCE = 0.02
_schemas = itertools.count()

Vectors = dict[tuple[str, int], npt.NDArray[np.float32]]


@pytest.fixture(scope="module", params=sorted(POSTGRESQLS))
def flavour(request: pytest.FixtureRequest) -> tuple[PostgresServer, bool]:
    fixture, has_pgvector = POSTGRESQLS[request.param]
    server: PostgresServer = request.getfixturevalue(fixture)
    return server, has_pgvector


def engine_on(server: PostgresServer, url: str | None = None) -> PostgresEngine:
    """An instance's engine of the index in ``server`` (``url``: that database, shared; else a new one)."""
    table = index_table(server)
    if url is not None:
        table["index_url"] = url
    index = IndexSettings.model_validate(table)
    return PostgresEngine(index, index_password(index))


@pytest.fixture
def engine(flavour: tuple[PostgresServer, bool]) -> Iterator[PostgresEngine]:
    opened = engine_on(flavour[0])
    yield opened
    opened.close()


def open_store(engine: PostgresEngine, account: str | None = None) -> PostgresStore:
    store = engine.location(account or f"v{next(_schemas)}", ACCOUNT).open().store
    assert isinstance(store, PostgresStore)
    return store


def message(uid: int, subject: str = "", flags: tuple[str, ...] = ()) -> IndexedMessage:
    texts = tuple(subject if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1000 + uid, 20260101, 10, flags, False, texts)


def units(rng: np.random.Generator, rows: int, dimensions: int = DIMENSIONS) -> npt.NDArray[np.float32]:
    raw = rng.standard_normal((rows, dimensions)).astype(np.float32)
    made: npt.NDArray[np.float32] = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return made


def stored(
    store: PostgresStore,
    folder: str,
    messages: list[IndexedMessage],
    uidvalidity: int = 1,
    *,
    complete: bool = True,
) -> None:
    """``messages`` stored in ``folder`` (``complete``: its first build done)."""
    state = store.folders().get(folder) or store.start_folder(folder, uidvalidity)
    store.put(replace(state, uidnext=max(m.uid for m in messages) + 1, complete=complete), messages)


def embedded(
    store: PostgresStore, rng: np.random.Generator, places: list[tuple[str, int]], model: str = MODEL
) -> Vectors:
    """Vectors of one to three passages for each of ``places``, stored."""
    vectors = {place: units(rng, int(rng.integers(1, 4))) for place in places}
    store.put_vectors(model, vectors)
    return vectors


def filled(store: PostgresStore, rng: np.random.Generator, counts: dict[str, int]) -> Vectors:
    """Messages 1 to n in each folder of ``counts``, each with its vectors."""
    for folder, count in counts.items():
        stored(store, folder, [message(uid) for uid in range(1, count + 1)])
    places = [(folder, uid) for folder, count in counts.items() for uid in range(1, count + 1)]
    return embedded(store, rng, places)


def exact(vectors: Vectors, target: npt.NDArray[np.float32]) -> list[tuple[tuple[str, int], float]]:
    """Every message by the distance of its nearest passage, nearest first."""
    return sorted(
        ((place, 1.0 - float(np.max(rows @ target))) for place, rows in vectors.items()), key=lambda x: x[1]
    )


def assert_nearest(
    store: PostgresStore,
    vectors: Vectors,
    target: npt.NDArray[np.float32],
    query: Query | None,
    folders: list[str],
    limit: int,
) -> list[tuple[str, int]]:
    """``nearest`` lists as many as exist, nearest first, each at its exact distance, none farther than
    the exact ranking's last of as many (half floats and int8 move a distance by a little)."""
    hits = store.nearest(target, query, folders, limit)
    truth = dict(exact(vectors, target))
    expected = [place for place, _ in exact(vectors, target)][:limit]
    assert len(hits) == len(expected)
    ranks = [hit.rank for hit in hits]
    assert ranks == sorted(ranks)
    found = [(hit.folder, hit.uid) for hit in hits]
    assert len(set(found)) == len(found)
    for hit, place in zip(hits, found, strict=True):
        assert place in truth
        assert abs(hit.rank - truth[place]) <= RANK_TOLERANCE
        assert truth[place] <= truth[expected[-1]] + RANK_TOLERANCE
    return found


def one(store: PostgresStore, statement: str, params: tuple[object, ...] = ()) -> object:
    """The one value ``statement`` answers in the store's database."""
    with store.pool.connection() as conn:
        row = conn.execute(statement, params).fetchone()
    assert row is not None
    return row[0]


def test_the_layout_follows_the_database_and_the_state_listing_says_which(
    engine: PostgresEngine, flavour: tuple[PostgresServer, bool]
) -> None:
    store = open_store(engine)
    stored(store, "INBOX", [message(1)])
    before = store.vector_layout()
    embedded(store, np.random.default_rng(1), [("INBOX", 1)])
    column = one(
        store,
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
        "AND attname = 'embedding'",
        (f'"{store.schema}".vectors',),
    )
    if flavour[1]:
        assert column == f"halfvec({DIMENSIONS})"
        assert (
            one(
                store,
                "SELECT count(*) FROM pg_indexes WHERE schemaname = %s AND indexdef LIKE %s",
                (store.schema, "%USING hnsw (embedding halfvec_cosine_ops)%"),
            )
            == 1
        )
        assert before.startswith("no vectors yet: the database offers pgvector 0.8.2, made with the first")
        assert store.vector_layout() == "vectors in pgvector 0.8.2 (halfvec, HNSW index)"
    else:
        assert column == "bytea"
        assert (
            before
            == store.vector_layout()
            == "vectors in a table, ranked in each instance (no pgvector in the database)"
        )


def test_the_nearest_messages_by_their_nearest_passage_in_the_folders_asked(engine: PostgresEngine) -> None:
    rng = np.random.default_rng(2)
    store = open_store(engine)
    vectors = filled(store, rng, {"INBOX": 60, "Archive": 30})
    # Near one message's second passage (where it has one): it comes first, by that passage.
    chosen = next(place for place, rows in vectors.items() if len(rows) > 1)
    target = vectors[chosen][1] + 0.05 * units(rng, 1)[0]
    target /= np.linalg.norm(target)
    found = assert_nearest(store, vectors, target, None, ["INBOX", "Archive"], 10)
    assert found[0] == chosen
    # A folder alone: its messages only.
    inbox = {place: rows for place, rows in vectors.items() if place[0] == "INBOX"}
    for _ in range(3):
        assert_nearest(store, inbox, units(rng, 1)[0], None, ["INBOX"], 7)
    # More than there are: every one, once.
    assert len(assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX", "Archive"], 200)) == 90
    assert store.nearest(target, None, [], 10) == []
    assert store.nearest(np.zeros(DIMENSIONS, dtype=np.float32), None, ["INBOX"], 10) == []


def test_nearest_among_the_messages_the_query_matches(
    engine: PostgresEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    store = open_store(engine)
    messages = [
        message(
            uid,
            ("fig report" if uid % 3 == 0 else "plum notes") + (" kiwi" if uid in (7, 50, 111) else ""),
            ("\\Seen",) if uid % 2 else (),
        )
        for uid in range(1, 121)
    ]
    stored(store, "INBOX", messages)
    vectors = embedded(store, rng, [("INBOX", uid) for uid in range(1, 121)])
    cases: list[tuple[Query, set[int]]] = [
        (Contains("text", "fig"), {uid for uid in range(1, 121) if uid % 3 == 0}),
        (
            AllOf((Contains("subject", "plum"), HasFlag("seen", True))),
            {u for u in range(1, 121) if u % 3 and u % 2},
        ),
        (Not(HasFlag("seen", True)), {uid for uid in range(1, 121) if uid % 2 == 0}),
        # A narrow query: the nearest of the whole index are mostly others.
        (Contains("subject", "kiwi"), {7, 50, 111}),
        (Contains("text", "nowhere"), set()),
    ]
    for query, matching in cases:
        for _ in range(3):
            kept = {place: rows for place, rows in vectors.items() if place[1] in matching}
            found = assert_nearest(store, kept, units(rng, 1)[0], query, ["INBOX"], 10)
            assert {uid for _, uid in found} <= matching
    # The table's: the matches' signatures first where they are many (a first pass that keeps more
    # than these hold: as exact as ranking them whole).
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)
    for query, matching in cases:
        kept = {place: rows for place, rows in vectors.items() if place[1] in matching}
        assert_nearest(store, kept, units(rng, 1)[0], query, ["INBOX"], 10)
    # A first pass that keeps fewer than they hold: a query passing most is asked of the nearest alone.
    monkeypatch.setattr(meaning_vectors, "RERANK", 10)
    monkeypatch.setattr(meaning_vectors, "WIDEN", 2)
    asked: list[int] = []
    passing = vector_copy._passing

    def counted(conn: Scoped, query: PgQuery) -> Passing:
        """``_passing``, each call's messages counted in ``asked``."""
        passes = passing(conn, query)

        def passed(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
            asked.append(len(ids))
            return passes(ids)

        return passed

    monkeypatch.setattr(vector_copy, "_passing", counted)
    broad = (Not(Contains("subject", "kiwi")), set(range(1, 121)) - {7, 50, 111})
    for query, matching in [*cases, broad]:
        hits = store.nearest(units(rng, 1)[0], query, ["INBOX"], 10)
        assert {hit.uid for hit in hits} <= matching and len(hits) == min(10, len(matching))
    in_table = not store.vector_layout().startswith("vectors in pgvector")
    assert (0 < sum(asked) < 120) if in_table else not asked  # the broad one asked of the nearest alone


def test_a_search_walks_the_hnsw_index_and_finds_each_message_by_its_key(
    postgres_vector: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a new index is (few rows, no statistics yet), the planner sorted a folder's every match by
    distance, or joined each vector against all of them: the walk is the index's, whatever it guesses."""
    rng = np.random.default_rng(9)
    engine = engine_on(postgres_vector)
    try:
        store = open_store(engine)
        # The HNSW index is built once the first build is done and every message has its vectors;
        # searches are exact meanwhile.
        messages = [message(uid, "fig" if uid % 2 else "plum") for uid in range(1, 301)]
        stored(store, "INBOX", messages[:200], complete=False)
        vectors = embedded(store, rng, [("INBOX", uid) for uid in range(1, 201)])
        walk_index = f'"{store.schema}".vectors_walk'
        assert one(store, "SELECT to_regclass(%s) IS NULL", (walk_index,)) is True
        assert store.vector_layout() == (
            "vectors in pgvector 0.8.2 (halfvec, HNSW index once every message has them; exact until then)"
        )
        stored(store, "INBOX", messages[200:])
        vectors |= embedded(store, rng, [("INBOX", uid) for uid in range(201, 251)])
        assert one(store, "SELECT to_regclass(%s) IS NULL", (walk_index,)) is True
        assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX"], 10)
        vectors |= embedded(store, rng, [("INBOX", uid) for uid in range(251, 301)])
        assert one(store, "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (walk_index,))
        plans: list[str] = []
        real = Scoped.execute

        def explained(
            self: Scoped, statement: str, params: Sequence[object] | None = None, **options: Any
        ) -> Any:
            if "ORDER BY v.embedding" in statement:  # the walk: its plan, in its transaction
                plans.append("\n".join(row[0] for row in real(self, "EXPLAIN " + statement, params)))
            return real(self, statement, params, **options)

        monkeypatch.setattr(Scoped, "execute", explained)
        odd = {place: rows for place, rows in vectors.items() if place[1] % 2}
        assert_nearest(store, odd, units(rng, 1)[0], Contains("subject", "fig"), ["INBOX"], 10)
        assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX"], 10)
        assert len(plans) == 2
        for plan in plans:
            assert "Index Scan using vectors_walk" in plan, plan
            assert "Index Scan using messages_pkey" in plan, plan
            assert "Sort" not in plan and "Materialize" not in plan and "Hash" not in plan, plan
    finally:
        engine.close()


def test_vectors_go_with_their_messages(engine: PostgresEngine) -> None:
    rng = np.random.default_rng(4)
    store = open_store(engine)
    vectors = filled(store, rng, {"INBOX": 20, "Junk": 10})
    assert store.vector_counts(MODEL).with_vectors == 30
    target = vectors[("INBOX", 5)][0]
    assert store.nearest(target, None, ["INBOX", "Junk"], 1)[0].uid == 5
    store.update(store.folders()["INBOX"], flags={}, removed=[5, 6])  # expunged
    store.put(store.folders()["INBOX"], [message(7, "stored again")])  # its vectors are the old text's
    # Of the folders a search covers: Junk has every vector, INBOX lacks 7's.
    assert store.vector_counts(MODEL, ["Junk"]) == VectorCounts(10, 10)
    assert store.vector_counts(MODEL, ["INBOX"]) == VectorCounts(17, 18)
    store.drop_folder("Junk")
    left = {
        place: rows for place, rows in vectors.items() if place[0] == "INBOX" and place[1] not in (5, 6, 7)
    }
    for probe in (target, *units(rng, 3)):
        assert_nearest(store, left, probe, None, ["INBOX", "Junk"], 25)
    assert store.vector_counts(MODEL) == VectorCounts(17, 18)
    assert [(todo.folder, todo.uid, todo.texts[0]) for todo in store.vectors_todo(MODEL, 10)] == [
        ("INBOX", 7, "stored again")
    ]
    with store.pool.connection() as conn:
        kept = conn.execute(f'SELECT count(DISTINCT message) FROM "{store.schema}".vectors').fetchone()
    assert kept == (17,)


def test_what_has_no_vectors_newest_first_and_another_models_replacing_them(engine: PostgresEngine) -> None:
    rng = np.random.default_rng(5)
    store = open_store(engine)
    assert store.vector_model() is None
    stored(store, "INBOX", [message(uid, f"subject {uid}") for uid in range(1, 11)])
    assert store.vector_counts(MODEL) == VectorCounts(0, 10)
    todo = store.vectors_todo(MODEL, 4)
    assert [(t.folder, t.uid) for t in todo] == [("INBOX", 10), ("INBOX", 9), ("INBOX", 8), ("INBOX", 7)]
    assert todo[0].texts[TEXT_COLUMNS.index("subject")] == "subject 10"
    vectors = embedded(store, rng, [(t.folder, t.uid) for t in todo])
    # A message without a passage (an empty text: a zero row) has its vectors too, and ranks nowhere.
    store.put_vectors(
        MODEL, {("INBOX", 6): np.zeros((1, DIMENSIONS), dtype=np.float32), ("INBOX", 99): units(rng, 1)}
    )
    assert store.vector_model() == MODEL
    assert store.vector_counts(MODEL).with_vectors == 5
    assert store.vector_counts(MODEL).partial
    assert [t.uid for t in store.vectors_todo(MODEL, 10)] == [5, 4, 3, 2, 1]
    assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX"], 10)
    # Another model (another size): the first model's vectors go, every message is to do again.
    assert [t.uid for t in store.vectors_todo(OTHER_MODEL, 3)] == [10, 9, 8]
    store.put_vectors(OTHER_MODEL, {("INBOX", 1): units(rng, 2, 64)})
    assert store.vector_model() == OTHER_MODEL
    assert store.vector_counts(MODEL).with_vectors == 0
    assert store.vector_counts(OTHER_MODEL) == VectorCounts(1, 10)
    assert [t.uid for t in store.vectors_todo(OTHER_MODEL, 20)] == list(range(10, 1, -1))
    probe = units(rng, 1, 64)[0]
    assert [hit.uid for hit in store.nearest(probe, None, ["INBOX"], 5)] == [1]
    assert store.nearest(units(rng, 1)[0], None, ["INBOX"], 5) == []  # a vector of the first model's size


def test_an_index_of_the_release_before_gains_vectors(
    engine: PostgresEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = f"v{next(_schemas)}"
    with schema_before(monkeypatch, 2):
        old = open_store(engine, account)
        stored(old, "INBOX", [message(uid) for uid in range(1, 6)])
        assert one(old, f"SELECT value FROM \"{old.schema}\".meta WHERE key = 'version'") == "2"
    store = open_store(engine, account)
    assert store.vector_counts(MODEL) == VectorCounts(0, 5)
    assert [t.uid for t in store.vectors_todo(MODEL, 10)] == [5, 4, 3, 2, 1]
    vectors = embedded(store, np.random.default_rng(6), [("INBOX", uid) for uid in range(1, 6)])
    assert not store.vector_counts(MODEL).partial
    assert_nearest(store, vectors, vectors[("INBOX", 2)][0], None, ["INBOX"], 3)


def test_two_instances_share_one_index_of_vectors(
    flavour: tuple[PostgresServer, bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each instance finds what the other stored (the signatures each holds of the table brought up to
    date by row id), and not what the other removed."""
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)  # the signatures, not every message read
    rng = np.random.default_rng(7)
    first = engine_on(flavour[0])
    second = engine_on(flavour[0], first.settings.index_url)
    try:
        account = f"v{next(_schemas)}"
        mine, theirs = open_store(first, account), open_store(second, account)
        stored(mine, "INBOX", [message(uid) for uid in range(1, 41)])
        vectors = embedded(mine, rng, [("INBOX", uid) for uid in range(1, 21)])
        assert_nearest(theirs, vectors, units(rng, 1)[0], None, ["INBOX"], 8)
        assert_nearest(mine, vectors, units(rng, 1)[0], None, ["INBOX"], 8)
        vectors |= embedded(theirs, rng, [(t.folder, t.uid) for t in theirs.vectors_todo(MODEL, 20)])
        assert mine.vector_counts(MODEL) == VectorCounts(40, 40)
        newest = vectors[("INBOX", 40)][-1]
        assert mine.nearest(newest, None, ["INBOX"], 1)[0].uid == 40
        theirs.update(theirs.folders()["INBOX"], flags={}, removed=[40])
        vectors.pop(("INBOX", 40))
        assert_nearest(mine, vectors, newest, None, ["INBOX"], 5)
        assert_nearest(theirs, vectors, newest, None, ["INBOX"], 5)
    finally:
        first.close()
        second.close()


def test_pgvector_made_by_an_administrator_is_found_by_an_index_that_may_not_make_it(
    postgres_vector: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A role that may not create the extension (not trusted: a superuser's): where an administrator made
    it, the index's vectors are pgvector's; where none did, a table's (the refusal rolls back to a
    savepoint, and the vectors are kept)."""
    rng = np.random.default_rng(8)
    role, password = f"mimx_member_{next(_schemas)}", "pw-member-" + "7" * 8
    monkeypatch.setenv("MAIL_IMAP_MCP_TEST_MEMBER_PASSWORD", password)
    with psycopg.connect(postgres_vector.conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    layouts = {}
    for made_by_admin in (False, True):
        url = new_database(postgres_vector)
        database = url.rsplit("/", 1)[1]
        with psycopg.connect(
            postgres_vector.conninfo.replace("dbname=postgres", f"dbname={database}"), autocommit=True
        ) as conn:
            conn.execute(f"GRANT CREATE ON DATABASE {database} TO {role}")
            if made_by_admin:
                conn.execute("CREATE EXTENSION vector")
        index = IndexSettings.model_validate(
            {
                "index_engine": "postgresql",
                "index_url": url.replace(f"{SUPERUSER}@", f"{role}@"),
                "index_password_env": "MAIL_IMAP_MCP_TEST_MEMBER_PASSWORD",
                "index_connect_timeout_s": patient(CONNECT_TIMEOUT_S),
            }
        )
        member = PostgresEngine(index, index_password(index))
        try:
            store = open_store(member)
            stored(store, "INBOX", [message(uid) for uid in range(1, 11)])
            vectors = embedded(store, rng, [("INBOX", uid) for uid in range(1, 11)])
            assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX"], 4)
            layouts[made_by_admin] = store.vector_layout()
        finally:
            member.close()
    assert layouts == {
        False: "vectors in a table, ranked in each instance (no pgvector in the database)",
        True: "vectors in pgvector 0.8.2 (halfvec, HNSW index)",
    }


def test_a_page_is_full_after_the_nearest_messages_went(
    engine: PostgresEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signatures an instance holds keep those of messages removed since (a folder dropped, mail
    expunged or stored again, by this instance or another) until a search finds them gone: that search
    still ranks those left (it passed a page short, or empty, where the nearest signatures were the
    removed messages')."""
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)  # the signatures, not every message read
    monkeypatch.setattr(meaning_vectors, "RERANK", 10)
    rng = np.random.default_rng(10)
    store = open_store(engine)
    stored(store, "INBOX", [message(uid) for uid in range(1, 31)])
    stored(store, "Junk", [message(uid) for uid in range(1, 31)])
    vectors = embedded(store, rng, [("INBOX", uid) for uid in range(1, 31)])
    toward = units(rng, 1)[0]
    near = {("Junk", uid): units(rng, 1)[0] * 0.2 + toward for uid in range(1, 31)}  # the nearest of all
    store.put_vectors(
        MODEL, {place: (row / np.linalg.norm(row)).reshape(1, -1) for place, row in near.items()}
    )
    assert {hit.folder for hit in store.nearest(toward, None, ["INBOX", "Junk"], 10)} == {"Junk"}
    store.drop_folder("Junk")
    assert_nearest(store, vectors, toward, None, ["INBOX"], 10)


@contextmanager
def _forty_read_by_signatures(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch, seed: int, *, with_vectors: int
) -> Iterator[tuple[PostgresStore, np.random.Generator, Vectors]]:
    """A store of 40 INBOX messages, the first ``with_vectors`` of them with vectors, whose searches read
    the instance's copy of the signatures (not every message): the store, its random vectors' source and
    the vectors."""
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)
    rng = np.random.default_rng(seed)
    engine = engine_on(postgres)
    try:
        store = open_store(engine)
        stored(store, "INBOX", [message(uid) for uid in range(1, 41)])
        yield store, rng, embedded(store, rng, [("INBOX", uid) for uid in range(1, with_vectors + 1)])
    finally:
        engine.close()


def test_a_search_of_the_table_asks_three_statements_once_the_copy_is_up_to_date(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without pgvector, a search asks PostgreSQL for what it reads first (the vectors' record, the
    folders, the last row id stored) in one statement, then its candidates' int8 rows and its hits: the
    instance's copy of the signatures is read again (a COPY of the rows since) only where rows were
    stored since, by any instance."""
    with _forty_read_by_signatures(postgres, monkeypatch, 11, with_vectors=30) as (store, rng, vectors):
        asked: list[str] = []
        real_execute, real_copy = Scoped.execute, Scoped.copy

        def execute(self: Scoped, statement: str, *args: Any, **kwargs: Any) -> Any:
            asked.append(statement.split()[0])
            return real_execute(self, statement, *args, **kwargs)

        def copy(self: Scoped, statement: str, params: Sequence[object]) -> Any:
            asked.append(statement.split()[0])
            return real_copy(self, statement, params)

        monkeypatch.setattr(Scoped, "execute", execute)
        monkeypatch.setattr(Scoped, "copy", copy)
        assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX"], 8)  # the copy read whole
        assert "COPY" in asked
        for _ in range(2):
            asked.clear()
            assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX"], 8)
            assert asked == ["SELECT", "SELECT", "SELECT"]
        vectors |= embedded(store, rng, [("INBOX", uid) for uid in range(31, 41)])
        asked.clear()
        newest = vectors[("INBOX", 40)][0]
        assert store.nearest(newest, None, ["INBOX"], 1)[0].uid == 40
        assert asked == ["SELECT", "COPY", "SELECT", "SELECT"]


def test_a_read_of_the_copy_broken_off_midway_is_read_again_whole(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of the COPY that brings an instance's copy of the signatures up to date come in any
    order: where it breaks off midway (PostgreSQL gone), the next search reads the copy again whole, not
    from the highest row id it had read (rows below it would be missed) nor on top of what it had."""
    monkeypatch.setattr(binary_copy, "AT_ONCE", 1)  # handed on a row at a time
    with _forty_read_by_signatures(postgres, monkeypatch, 12, with_vectors=40) as (store, rng, vectors):
        real = packed.packed_signatures
        added: list[int] = []

        def breaking(rows: Any, dimensions: int) -> Any:
            added.append(len(rows))
            if len(added) == 5:
                raise psycopg.OperationalError("the server closed the connection")
            return real(rows, dimensions)

        monkeypatch.setattr(packed, "packed_signatures", breaking)
        with pytest.raises(IndexUnusable):
            store.nearest(units(rng, 1)[0], None, ["INBOX"], 8)
        monkeypatch.setattr(packed, "packed_signatures", real)
        assert_nearest(store, vectors, units(rng, 1)[0], None, ["INBOX"], 8)
        held = store._held._signatures  # type: ignore[union-attr]
        assert held is not None and len(held) == sum(len(rows) for rows in vectors.values())


def test_vectors_of_an_earlier_form_are_made_again_in_the_codes_every_engine_ranks(
    engine: PostgresEngine,
) -> None:
    """Vectors stored before their codes were kept in the SQLite engines' form (``meta`` without
    ``vector_form``: int8 rows, or a ``halfvec`` alone) are taken for another model's: none is searched
    or read, every message is to be embedded again, and the next vectors make the table again."""
    rng = np.random.default_rng(9)
    store = open_store(engine)
    vectors = filled(store, rng, {"INBOX": 12})
    assert store.vector_counts(MODEL).with_vectors == 12
    with store.pool.connection() as conn:
        conn.execute(f"DELETE FROM \"{store.schema}\".meta WHERE key = 'vector_form'")
    assert store.vector_model() != MODEL
    assert store.vector_counts(MODEL).with_vectors == 0
    assert store.nearest(units(rng, 1)[0], None, ["INBOX"], 5) == []
    assert store.vectors_of(list(vectors)) == {} and store.vector_sample(5) == {}
    assert len(store.vectors_todo(MODEL, 50)) == 12
    again = embedded(store, rng, [("INBOX", uid) for uid in range(1, 13)])
    assert store.vector_model() == MODEL and store.vector_counts(MODEL).with_vectors == 12
    assert_nearest(store, again, units(rng, 1)[0], None, ["INBOX"], 5)
