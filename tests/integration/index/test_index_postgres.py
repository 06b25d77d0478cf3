"""The index in PostgreSQL (issue 50) against a throwaway cluster of Debian's PostgreSQL on loopback
(tests/support/servers/postgres.py): the same messages as the SQLite index for every query tree, users kept
apart by schemas of their own (words shaped like SQL and ``tsquery`` syntax included), PostgreSQL
stopped under a running server (the server answers, with a warning; the index answers again once it is
back), a schema of a newer release refused with its reason, and ``index --drop`` dropping schemas.

The query language's own corpus runs on both engines in test_index_query_language.py."""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index import runtime
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.engines.postgresql import query as pg_query
from mail_imap_mcp.index.engines.postgresql import rarity
from mail_imap_mcp.index.engines.postgresql.counts import stored_messages
from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine
from mail_imap_mcp.index.engines.postgresql.pages import RESUME_SIZE
from mail_imap_mcp.index.engines.postgresql.schema import SCHEMA_VERSION
from mail_imap_mcp.index.engines.sqlite.engine import SqliteEngine
from mail_imap_mcp.index.store import TEXT_COLUMNS, HitPage, IndexedMessage, IndexStore, StaleResume
from mail_imap_mcp.query.tree import AnyOf, Contains, Query
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import index_config, wait_ready
from tests.support.engine_words import HOSTILE, assert_same_words
from tests.support.mail import mailgen
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import SERVER, http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import PASSWORD_ENV, PostgresServer, analyzed, index_table, on_engine
from tests.support.servers.team import serve_per_user
from tests.support.shared.index_fts5 import messages, trees

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
RANKED = "best match first"
#: Each user's own word (Alice's mail also holds the words of HOSTILE).
ALICES_WORD, BOBS_WORD = "kiwiword", "mangoword"
ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})


@pytest.fixture(scope="module")
def both_stores(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[IndexStore, IndexStore]]:
    """One store of each engine for every example, each example in a folder of its own."""
    index = IndexSettings.model_validate(index_table(postgres))
    sqlite: IndexEngine = SqliteEngine(tmp_path_factory.mktemp("both"))
    pg: IndexEngine = PostgresEngine(index, index_password(index))
    stores = (sqlite.location("a", ACCOUNT).open().store, pg.location("a", ACCOUNT).open().store)
    yield stores
    for store in stores:
        store.close()
    pg.close()


_example_folders = itertools.count()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=messages(), query=trees())
def test_postgresql_finds_the_messages_sqlite_finds_for_every_query_tree(
    both_stores: tuple[IndexStore, IndexStore], corpus: list[IndexedMessage], query: Query
) -> None:
    folder = f"Example {next(_example_folders)}"
    found = []
    for store in both_stores:
        store.put(store.start_folder(folder, 1), corpus)
        page = store.search(query, folders=[folder], order="relevance", limit=100, offset=0)
        found.append((sorted(hit.uid for hit in page.hits), page.total))
    assert found[0] == found[1], query


def test_words_are_the_sqlite_indexs_accents_case_and_syntax_alike(
    both_stores: tuple[IndexStore, IndexStore],
) -> None:
    texts = [
        "Crème Brûlée at the CAFÉ",
        "o'brien wrote: kiwi:* & apple&pear | plum|fig !quince",
        "see https://example.org/a-b_c and first.last@example.com",
        "'); DROP SCHEMA public CASCADE; -- said Straße İstanbul",
    ]
    corpus = [
        IndexedMessage(
            uid, uid, 20260101, 10, (), False, tuple(t if c == "body" else "" for c in TEXT_COLUMNS)
        )
        for uid, t in enumerate(texts, 1)
    ]
    asked = [
        *HOSTILE,
        "creme brulee",
        "cafe",
        "CRÈME",
        "example.org",
        "a-b",
        "c",
        "first.last@example.com",
        "strasse",
        "straße",
        "istanbul",
        "wrote kiwi",
        "kiwi wrote",
        "pear apple",
    ]
    assert_same_words(both_stores, corpus, asked)
    page = both_stores[1].search(
        Contains("text", "o'brien"), folders=["Words"], order="relevance", limit=9, offset=0
    )
    assert [hit.uid for hit in page.hits] == [2]


def _bodies(folder: str, store: IndexStore, bodies: dict[int, tuple[str, str]], arrival: int = 0) -> None:
    """Put in ``folder`` of ``store`` a message of each UID's (subject, body)."""
    corpus = [
        IndexedMessage(
            uid,
            uid,
            20260101,
            10,
            (),
            False,
            tuple({"subject": subject, "body": body}.get(column, "") for column in TEXT_COLUMNS),
            arrival=arrival,
        )
        for uid, (subject, body) in bodies.items()
    ]
    store.put(store.start_folder(folder, 1), corpus)


def _ranked(
    store: IndexStore, query: Query, folder: str, limit: int = 100, after: bytes | None = None
) -> HitPage:
    return store.search(query, folders=[folder], order="relevance", limit=limit, offset=0, after=after)


def test_a_search_of_several_words_ranks_the_rarer_word_first_on_both_engines(
    both_stores: tuple[IndexStore, IndexStore],
) -> None:
    """A message holding the rare word once comes before one holding the common word in its subject and
    five times: SQLite's BM25 weighs words by their rarity, PostgreSQL's ``ts_rank`` alone did not."""
    bodies = {1: ("plumword plumword", "plumword plumword plumword")}
    bodies |= {uid: ("", f"plumword and other words {uid}") for uid in range(2, 41)}
    bodies[41] = ("", "quincerare once among other words")
    query = AnyOf((Contains("text", "plumword"), Contains("text", "quincerare")))
    for store in both_stores:
        _bodies("Rarity", store, bodies)
        assert [hit.uid for hit in _ranked(store, query, "Rarity", limit=2).hits] == [41, 1], store


def test_later_pages_of_several_words_rank_by_the_rarities_the_first_page_found(
    both_stores: tuple[IndexStore, IndexStore],
) -> None:
    """Mail that arrives between pages and makes the rare word common changes no row's rank: the
    rarities are kept in the cursor, so every match comes once, in the first page's order."""
    store = both_stores[1]
    bodies = {uid: ("", f"fennelword {'fennelword ' * (uid % 3)}note {uid}") for uid in range(1, 7)}
    bodies |= {uid: ("", f"sorrelword {'sorrelword ' * (uid % 4)}note {uid}") for uid in range(7, 37)}
    _bodies("Rarity pages", store, bodies)
    query = AnyOf((Contains("text", "fennelword"), Contains("text", "sorrelword")))
    whole = [hit.uid for hit in _ranked(store, query, "Rarity pages").hits]
    assert sorted(whole[:6]) == [1, 2, 3, 4, 5, 6]  # the rarer word's messages first
    listed, after, arrived = [], None, 1000
    while True:
        page = _ranked(store, query, "Rarity pages", limit=4, after=after)
        listed += [hit.uid for hit in page.hits]
        assert page.keyed is not None
        after = page.keyed.resume
        if after is None:
            break
        assert len(after) == RESUME_SIZE + 2  # a byte a word: its rarity
        later = int(time.time()) + 3600  # arrived after the first page: left out of its pages
        _bodies(
            "Rarity pages",
            store,
            dict.fromkeys(range(arrived, arrived + 60), ("", "fennelword " * 4)),
            later,
        )
        arrived += 60
    assert listed == whole
    now = [hit.uid for hit in _ranked(store, query, "Rarity pages", limit=200).hits]
    assert now[0] not in range(1, 7)  # the word is common now: a new search ranks by that


def test_a_common_word_weighs_by_the_planner_s_estimate_and_a_rare_word_by_its_count(
    postgres: PostgresServer,
) -> None:
    """The rarities of a word in most messages come from the statistics (its count would build a bitmap of
    every message holding it), those of the others from a count: each found once."""
    index = IndexSettings.model_validate(index_table(postgres))
    engine = PostgresEngine(index, index_password(index))
    store = engine.location("rarity", ACCOUNT).open().store
    try:
        bodies = {uid: ("", f"oatword note {uid}") for uid in range(1, 1501)}
        bodies |= {uid: ("", f"other note {uid}") for uid in range(1501, 1601)}
        bodies[1601] = ("", "ryeword note")
        _bodies("Common", store, bodies)
        analyzed(store)
        query = AnyOf((Contains("text", "oatword"), Contains("text", "ryeword")))
        terms = store.compiler.compile(query).terms
        said: list[str] = []

        def recorded(conn: Any) -> bytes:
            execute = conn.execute

            def recording(statement: str, params: Any = None, **kwargs: Any) -> Any:
                said.append(statement)
                return execute(statement, params, **kwargs)

            stored = stored_messages(conn)
            conn.execute = recording
            return rarity.rarities(conn, terms, stored)

        oat, rye = store._read(recorded)
        estimated = store._read(lambda conn: rarity.estimates(conn, terms[:1]))[0]
        assert estimated >= rarity.COUNTED
        assert (oat, rye) == (rarity.coded(1601, estimated), rarity.coded(1601, 1))
        assert [statement.split()[0] for statement in said] == ["EXPLAIN", "SELECT"]
        assert said[-1].count("count(*)") == 1  # the rare word's alone is counted
        assert [hit.uid for hit in _ranked(store, query, "Common", limit=1).hits] == [1601]
    finally:
        store.close()
        engine.close()


def test_a_cursor_of_a_release_before_rarities_pages_on_by_ts_rank_alone(
    both_stores: tuple[IndexStore, IndexStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = both_stores[1]
    bodies = {uid: ("", f"{'dillword ' * (1 + uid % 3)}note") for uid in range(1, 5)}
    bodies |= {uid: ("", f"{'cressword ' * (1 + uid % 5)}note") for uid in range(5, 21)}
    _bodies("Rarity before", store, bodies)
    query = AnyOf((Contains("text", "dillword"), Contains("text", "cressword")))
    with monkeypatch.context() as before:
        before.setattr(pg_query, "RARE_TERMS", 1)  # the compiler of the release before: no terms weighed
        whole = [hit.uid for hit in _ranked(store, query, "Rarity before").hits]
        first = _ranked(store, query, "Rarity before", limit=5)
    assert first.keyed is not None and first.keyed.resume is not None
    assert len(first.keyed.resume) == RESUME_SIZE
    listed, after = [hit.uid for hit in first.hits], first.keyed.resume
    while after is not None:
        page = _ranked(store, query, "Rarity before", limit=5, after=after)
        listed += [hit.uid for hit in page.hits]
        assert page.keyed is not None
        after = page.keyed.resume
    assert listed == whole
    assert whole != [hit.uid for hit in _ranked(store, query, "Rarity before").hits]  # ranked otherwise now
    cut = _ranked(store, query, "Rarity before", limit=5).keyed
    assert cut is not None and cut.resume is not None
    with pytest.raises(StaleResume):
        _ranked(store, query, "Rarity before", limit=5, after=cut.resume[:-1])


# -- through the MCP server ----------------------------------------------------------------------------


async def wait_for(mcp: EnvelopeClient, account: str, state: str, within: float = 60.0) -> str:
    with anyio.fail_after(patient(within)):
        while True:
            listed = (await mcp.ok("imap_list_accounts", {}))["accounts"]
            now = {a["account_id"]: a["index"] for a in listed}[account]
            if now.startswith(state):
                return str(now)
            await anyio.sleep(0.05)


@pytest.fixture
async def own_postgres(tmp_path: Path) -> AsyncIterator[PostgresServer]:
    """A PostgreSQL of this test alone (it is killed and started again: durable, as a deployment's; with
    fsync off a killed server loses what it had committed)."""
    server = PostgresServer(durable=True)
    server.start()
    try:
        yield server
    finally:
        server.close()


async def test_postgresql_stopped_under_a_running_server_hands_searches_to_the_mail_server(
    dovecot: Dovecot, own_postgres: PostgresServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(
        user, "INBOX", [mailgen.plain_message(f"budget {i}", "the budget talk\r\n") for i in range(4)]
    )
    config = on_engine(
        make_config({"default": account_settings(dovecot, user, index=True)}), "postgresql", own_postgres
    )
    async for mcp in open_client(config, AppContext.from_config(config)):
        await wait_for(mcp, "default", "ready")
        ask = {"account_id": "default", "query": "budget", "sort": "relevance"}
        ranked = await mcp.ok(SEARCH, ask)
        assert ranked["total"] == 4
        own_postgres.stop(crash=True)
        answered = await mcp.call(SEARCH, ask)
        assert answered["success"] and answered["data"]["total"] == 4, answered
        assert not answered["summary"].endswith(RANKED)
        said = " ".join(answered["meta"]["warnings"])
        assert "the server answered" in said and ("could not be read" in said or "unavailable" in said), said
        own_postgres.start()
        with anyio.fail_after(patient(90)):  # the pool connects again; the background sync reopens the index
            while True:
                again = await mcp.call(SEARCH, ask)
                if again["success"] and again["summary"].endswith(RANKED):
                    break
                await anyio.sleep(0.5)
        assert again["data"]["total"] == 4


async def test_a_schema_of_a_newer_release_is_refused_saying_so_and_the_server_answers(
    dovecot: Dovecot, postgres: PostgresServer
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [mailgen.plain_message("budget", "the budget\r\n")])
    config = on_engine(
        make_config({"default": account_settings(dovecot, user, index=True)}), "postgresql", postgres
    )
    async for mcp in open_client(config, AppContext.from_config(config)):
        await wait_for(mcp, "default", "ready")
    newer = SCHEMA_VERSION + 1  # a release after this one's
    with psycopg.connect(config.index.index_url, password=postgres.password, autocommit=True) as conn:
        conn.execute(
            "UPDATE mimx_default.meta SET value = %s WHERE key IN ('version', 'readable_from')", (str(newer),)
        )
    async for mcp in open_client(config, AppContext.from_config(config)):
        state = await wait_for(mcp, "default", "unavailable")
        assert f"schema version {newer}" in state and "upgrade" in state, state
        answered = await mcp.call(SEARCH, {"account_id": "default", "query": "budget", "sort": "relevance"})
        assert answered["success"] and answered["data"]["total"] == 1
        assert any(
            "unavailable" in w and f"schema version {newer}" in w for w in answered["meta"]["warnings"]
        )
    with psycopg.connect(config.index.index_url, password=postgres.password) as conn:  # left as it was
        assert conn.execute("SELECT count(*) FROM mimx_default.messages").fetchone() == (1,)


# -- team users ------------------------------------------------------------------------------------------


def schemas(url: str, password: str) -> dict[str, int]:
    """Each index's schema in the database and the messages it holds."""
    with psycopg.connect(url, password=password) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'mimx%%' ORDER BY 1"
            )
        ]
        return {name: conn.execute(f'SELECT count(*) FROM "{name}".messages').fetchone()[0] for name in names}


def test_a_schema_moved_aside_is_dropped_once_the_same_index_is_built_again(postgres: PostgresServer) -> None:
    """Issue 56, item 15: an index moved aside (damaged) leaves a schema of mail text; once the index is
    built again it is dropped, and another account's schema moved aside is left alone."""
    table = index_table(postgres)
    settings = IndexSettings.model_validate(table)
    engine = PostgresEngine(settings, index_password(settings))
    try:
        ours, theirs = engine.location("a", ACCOUNT), engine.location("b", ACCOUNT)
        for location in (ours, theirs):
            location.open().store.close()
        ours_aside, theirs_aside = (
            location.move_aside().removeprefix("schema ") for location in (ours, theirs)
        )
        ours.open().store.close()
        assert set(schemas(table["index_url"], postgres.password)) == {ours.schema, ours_aside, theirs_aside}
        assert ours.discard_aside() == [f"schema {ours_aside}"]
        assert set(schemas(table["index_url"], postgres.password)) == {ours.schema, theirs_aside}
    finally:
        engine.close()


async def test_the_first_search_after_a_start_on_a_built_index_answers_from_it(
    dovecot: MatrixServer, tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 56, item 16: the index built, the server started again, its first search before the
    background sync has looked at the index (here: started after that search) is answered by the index,
    ranked, where it said "not ready (building)" (2 of 3 starts: the pool of PostgreSQL takes a moment
    to open); the background sync, started then, keeps it ready."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [mailgen.plain_message(f"note {i}", "kiwiword\r\n") for i in range(3)])
    config = on_engine(index_config(dovecot, user, tmp_path), "postgresql", postgres)
    async for mcp in open_client(config, AppContext.from_config(config)):
        assert await wait_ready(mcp) == "ready"
    start, held = runtime.AccountIndex.start, []
    monkeypatch.setattr(runtime.AccountIndex, "start", lambda index: held.append(index))
    async for mcp in open_client(config, AppContext.from_config(config)):
        found = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance"})
        assert found["success"] and found["summary"].endswith(RANKED), found
        assert found["data"]["total"] == 3 and not found["meta"].get("warnings"), found
        for index in held:
            start(index)
        assert await wait_ready(mcp) == "ready"
        again = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance"})
        assert again["summary"].endswith(RANKED) and again["data"]["total"] == 3, again


async def test_two_users_indexes_are_schemas_of_their_own_whatever_their_words(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider, postgres: PostgresServer
) -> None:
    alice, bob = master_dovecot.new_user("t-alice"), master_dovecot.new_user("t-bob")
    said = " ".join(HOSTILE)
    for user, text in ((alice, f"{ALICES_WORD} {said}"), (bob, BOBS_WORD)):
        mail = [mailgen.plain_message(f"note {i} of {text}", f"the text says {text}\r\n") for i in range(3)]
        master_dovecot.seed(user, "INBOX", [*mail, mailgen.plain_message("other", "nothing of note\r\n")])
    index = index_table(postgres)
    server = serve_per_user(
        tmp_path,
        master_dovecot,
        idp,
        [alice, bob],
        own={"index_per_user": True},
        server={"index": True, "state_dir": str(tmp_path / "state")},
        auth={"user_idle_s": 600},
        index=index,
        env={PASSWORD_ENV: postgres.password},
    )
    try:
        for user, mine, theirs in (
            (alice, [ALICES_WORD, *HOSTILE], []),
            (bob, [BOBS_WORD], [ALICES_WORD, *HOSTILE]),
        ):
            async with http_client(server.url, idp.jwt(user, audience=server.url)) as mcp:
                await mcp.call(SEARCH, {"account_id": "own", "query": mine[0]})  # starts the user's index
                await wait_for(mcp, "own", "ready")
                for word in mine:
                    found = await mcp.call(
                        SEARCH, {"account_id": "own", "query": f'"{word}"', "sort": "relevance"}
                    )
                    assert found["success"] and found["summary"].endswith(RANKED), (word, found)
                    assert found["data"]["total"] == 3, (word, found["data"])
                for word in theirs:  # the other user's words, and syntax: found nowhere, by the index
                    found = await mcp.call(
                        SEARCH, {"account_id": "own", "query": f'"{word}"', "sort": "relevance"}
                    )
                    assert found["success"] and found["data"]["total"] == 0, (word, found)
                    assert not found["meta"].get("warnings"), (word, found["meta"])
        held = schemas(index["index_url"], postgres.password)
        assert len(held) == 2 and set(held.values()) == {4}, held
        assert all(name.startswith("mimx_own~") and len(name) == len("mimx_own~") + 24 for name in held)
        assert not any(u.split("@")[0] in name for u in (alice, bob) for name in held)
    finally:
        server.stop()
    config = str(tmp_path / "config.toml")
    env = {**os.environ, PASSWORD_ENV: postgres.password}

    def index_command(*args: str) -> str:
        done = subprocess.run(
            [SERVER, "index", "--config", config, *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done
        return done.stdout

    assert "deleted the user's index schema mimx_own~" in index_command(
        "--drop", "--account", "own", "--user", alice
    )
    assert len(schemas(index["index_url"], postgres.password)) == 1
    assert "deleted the indexes of 1 team user(s)" in index_command("--drop", "--account", "own")
    assert schemas(index["index_url"], postgres.password) == {}
