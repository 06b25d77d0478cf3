"""The local index section of ``scripts/bench`` (``scripts/bench --index-only``): our index beside notmuch,
Dovecot's plain ``UID SEARCH`` and Dovecot with its own FTS (``dovecot-fts-xapian``), on the same messages.

One run: :data:`MESSAGES` generated messages (``tests/support/mail/mailgen.py``) spread over :data:`FOLDERS`
folders are written into a throwaway Dovecot's Maildir, into a second Dovecot with ``fts_xapian``, and as
a plain Maildir for notmuch. Then:

* our index: ``mail-imap-mcp index`` builds it over IMAP (time, messages/s, peak RSS of the process,
  bytes per message of the SQLite file after a WAL checkpoint); queries measured in process as a search
  runs them (the freshness round trip over every folder, then the ranked top 20 from the store), and a
  message appended by another client 0.1 s before a query is looked for;
* end to end: ``mail-imap-mcp serve`` over stdio with the index, a ranked page of 20 for a query, beside
  the same server's newest page of 20 (no query);
* notmuch 0.37: ``notmuch new`` (time, index bytes per message), ``notmuch search --limit=20`` per query,
  process start included;
* Dovecot plain: ``UID SEARCH`` of each folder in turn (EXAMINE + SEARCH), the sum over every folder;
* Dovecot + fts-xapian: ``doveadm index`` (time), the same searches (``BODY``/``TEXT`` answered by the
  FTS index).

The query terms are picked from our index's own vocabulary (``fts5vocab``), so every engine answers the
same words: a sender, a subject word (selective, a few thousand hits at 100,000 messages), a rare word
and the commonest word of the bodies (found in most messages).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from tests.support.accounts import account_settings, config_toml
from tests.support.index_files import identity_index_paths
from tests.support.mail import mailgen
from tests.support.servers.dovecot import Dovecot

from benchmark.common import PASSWORD_ENV, ROOT, SERVER_BIN, SampledRun, run_sampled, say
from benchmark.index_sizes import markers, results_name, write_sizes
from benchmark.report import write_section
from benchmark.servers import our_server
from mail_imap_mcp.config import load_config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.pages import ImapPageReads
from mail_imap_mcp.imap.push_view import PushView
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.answer import fresh_page
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.engines.sqlite.location import identity_index_path
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.sync import Indexer
from mail_imap_mcp.query import AnyOf, Contains

#: How the bench asks :func:`fresh_page` for a page: every folder listed, ranked, the top 20.
EVERY_FOLDER: dict[str, Any] = {
    "folders": None,
    "order": "relevance",
    "limit": 20,
    "offset": 0,
    "flags_tested": False,
}
MESSAGES = 100_000
FOLDERS = 40
QUERY_RUNS = 30
CLI_RUNS = 10
IMAP_RUNS = 3
XAPIAN_CONFIG = """
mail_plugins = $mail_plugins fts fts_xapian
plugin {
  fts = xapian
  fts_xapian = partial=3 full=20 verbose=0
  fts_autoindex = yes
  fts_enforced = yes
}
"""


@dataclass
class Query:
    """One query as each engine is asked it."""

    label: str
    field: str  # "from", "subject" or "text"
    word: str
    hits: int = 0


@dataclass
class IndexRun:
    messages: int
    folders: int
    results: dict[str, Any] = field(default_factory=dict)
    #: Our index's engine (``[index] index_engine``): ``sqlite`` or ``sqlite+tantivy``.
    engine: str = "sqlite"


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def _timed(action: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def _folder_names(count: int) -> list[str]:
    return ["INBOX", *(f"Folder{n:02d}" for n in range(1, count))]


def _seed(dovecot: Dovecot, user: str, messages: int, folders: list[str], maildir: Path | None) -> None:
    """Write the corpus into ``user``'s folders (and, with ``maildir``, a plain Maildir for notmuch)."""
    per_folder = -(-messages // len(folders))
    batch: list[bytes] = []
    folder_index = 0
    for number, message in enumerate(mailgen.corpus(messages, seed=35), 1):
        batch.append(message)
        if len(batch) == per_folder or number == messages:
            name = folders[folder_index]
            dovecot.seed(user, name, batch, flags=lambda i: "\\Seen" if i % 3 else "")
            if maildir is not None:
                target = maildir / name / "cur"
                target.mkdir(parents=True, exist_ok=True)
                (maildir / name / "new").mkdir(exist_ok=True)
                (maildir / name / "tmp").mkdir(exist_ok=True)
                for offset, data in enumerate(batch):
                    (target / f"{number - len(batch) + offset}.bench:2,S").write_bytes(data)
            batch, folder_index = [], folder_index + 1


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _pick_queries(db_path: Path) -> list[Query]:
    """The words each engine is asked, from our index's vocabulary."""
    db = sqlite3.connect(db_path)
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, 'col')")
    total = db.execute("SELECT count(*) FROM messages").fetchone()[0]

    def hits(column: str, term: str) -> int:
        row = db.execute("SELECT doc FROM temp.vocab WHERE col = ? AND term = ?", (column, term)).fetchone()
        return int(row[0]) if row else 0

    def pick(column: str, low: float, high: float, *, glob: str = "[a-z][a-z]*") -> tuple[str, int]:
        rows = db.execute(
            "SELECT term, doc FROM temp.vocab WHERE col = ? AND doc BETWEEN ? AND ? AND length(term) > 1 "
            "AND term GLOB ? ORDER BY doc DESC, term LIMIT 1",
            (column, max(int(total * low), 1), max(int(total * high), 1), glob),
        ).fetchall()
        if not rows:
            raise RuntimeError(f"no {column} term between {low} and {high} of {total} messages")
        return rows[0][0], rows[0][1]

    # Words of mailgen's corpus that every engine reads alike: ASCII (the servers fold no accents), at
    # least four letters (fts-xapian indexes no shorter ones), and found as words.
    sender, sender_hits = "dvolkov", hits("sender", "dvolkov")
    subject, subject_hits = "itinerary", hits("subject", "itinerary")
    rare, rare_hits = pick("body", 0.0, 0.0, glob="[0-9][0-9][0-9][0-9]*")  # a reference number: one message
    common, common_hits = pick("body", 0.5, 0.95, glob="[a-z][a-z][a-z][a-z]*")
    db.close()
    return [
        Query("sender", "from", sender, sender_hits),
        Query("subject word", "subject", subject, subject_hits),
        Query("rare word", "text", rare, rare_hits),
        Query("word in most messages", "text", common, common_hits),
    ]


def _config(path: Path, dovecot: Dovecot, user: str, index_dir: Path, engine: str = "sqlite") -> Path:
    settings = account_settings(
        dovecot, user, password_env=PASSWORD_ENV, connect_timeout_s=None, command_timeout_s=120
    )
    path.write_text(
        config_toml({"default": settings})
        + f'\n[server]\nindex = true\nindex_dir = "{index_dir}"\nsummary_cache_entries = 0\n'
        + ("" if engine == "sqlite" else f'\n[index]\nindex_engine = "{engine}"\n')
    )
    return path


def _pushed_config(config: Path) -> Path:
    """``config`` with ``index_fresh_from_push`` on (the MCP rows with a quiet push view)."""
    pushed = config.with_name("config-push.toml")
    pushed.write_text(config.read_text().replace("[server]\n", "[server]\nindex_fresh_from_push = true\n", 1))
    return pushed


def run_index_command(config: Path, password: str, log: Path) -> SampledRun:
    """``mail-imap-mcp index`` with ``config`` run to its end, its memory sampled (stderr to ``log``)."""
    done = run_sampled(
        [str(SERVER_BIN), "--config", str(config), "index"], {**os.environ, PASSWORD_ENV: password}, log
    )
    if done.returncode != 0:
        raise RuntimeError(f"mail-imap-mcp index failed: {log.read_text()[-2000:]}")
    return done


def _build_ours(config: Path, password: str, log: Path) -> dict[str, Any]:
    done = run_index_command(config, password, log)
    return {"seconds": round(done.seconds, 1), "peak_rss_mb": done.peak_rss_mb, "cpu_s": done.cpu_seconds}


def _counted_search(indexer: Indexer, asked: Any, trips: list[int]) -> Callable[[ImapSession], int]:
    """A search of ``asked`` over every folder as a tool call runs it (freshness, then the page): its
    total, each call's round trips appended to ``trips``."""

    def search(session: ImapSession) -> int:
        answer = fresh_page(
            ImapPageReads(session, "bench"), indexer, asked, **EVERY_FOLDER, deadline=time.monotonic() + 5
        )
        trips.append(answer.fresh.round_trips)
        return answer.page.total

    return search


def _ours_queries(
    config: Path, dovecot: Dovecot, user: str, queries: list[Query], runs: int
) -> dict[str, Any]:
    """Each query as a search runs it: the freshness round trip over every folder, then the top 20."""
    os.environ[PASSWORD_ENV] = dovecot.password
    loaded = load_config(config)
    account = loaded.accounts["default"]
    path = identity_index_path(loaded.server.index_dir, "default", account)
    engine = open_engine(loaded)
    store = engine.location("default", account).open().store
    indexer = Indexer(store, "default", loaded.server.index_text_bytes)
    connection = AccountConnection(
        "default", account, credentials=credentials_for("default", account), enable_qresync=True
    )
    found: dict[str, Any] = {}
    try:
        for query in queries:
            asked = Contains(query.field, query.word)  # type: ignore[arg-type]
            trips: list[int] = []
            search = _counted_search(indexer, asked, trips)

            connection.run(search)  # warm: connected, the index file in the page cache
            samples = _timed(partial(connection.run, search), runs)
            everywhere = list(store.folders())
            alone = _timed(
                partial(store.search, asked, folders=everywhere, order="relevance", limit=20, offset=0),
                runs,
            )
            found[query.label] = {
                "median_ms": _median_ms(samples),
                "store_only_median_ms": _median_ms(alone),
                "round_trips": max(trips),
            }
        common = Contains(queries[-1].field, queries[-1].word)  # type: ignore[arg-type]
        inbox = {**EVERY_FOLDER, "folders": ["INBOX"]}

        def in_inbox(session: ImapSession) -> int:
            return fresh_page(
                ImapPageReads(session, "bench"), indexer, common, **inbox, deadline=time.monotonic() + 5
            ).page.total

        hits = connection.run(in_inbox)
        found["inbox_common"] = {
            "median_ms": _median_ms(_timed(partial(connection.run, in_inbox), runs)),
            "store_only_median_ms": _median_ms(
                _timed(
                    partial(store.search, common, folders=["INBOX"], order="relevance", limit=20, offset=0),
                    runs,
                )
            ),
            "hits": hits,
        }
        either = [Contains(q.field, q.word) for q in (queries[-1], queries[1])]  # type: ignore[arg-type]
        scored = AnyOf(tuple(either))
        found["shards"] = _shards_compared(path, scored, runs)
        if loaded.index.index_engine != "sqlite":
            found["scored_engine"] = {
                "median_ms": _median_ms(
                    _timed(
                        partial(
                            store.search, scored, folders=everywhere, order="relevance", limit=20, offset=0
                        ),
                        runs,
                    )
                )
            }
        found["appended"] = _appended_found(connection, indexer, store, dovecot, user)
        found["push"] = _with_push(connection, indexer, account, queries, runs, dovecot, user)
    finally:
        connection.close()
        store.close()
        engine.close()
    return found


def _with_push(
    connection: AccountConnection,
    indexer: Indexer,
    account: Any,
    queries: list[Query],
    runs: int,
    dovecot: Dovecot,
    user: str,
) -> dict[str, Any]:
    """The same queries with ``index_fresh_from_push``: the counts from a quiet push view (one NOOP on
    its NOTIFY connection) instead of the LIST-STATUS of every folder, each run of it followed by one
    without the view (so both meet the same load of a shared machine); and a message appended again."""
    view = PushView(AccountConnection("default", account, credentials=credentials_for("default", account)))
    found: dict[str, Any] = {}
    try:
        for query in queries:
            asked = Contains(query.field, query.word)  # type: ignore[arg-type]
            trips: list[int] = []
            search = _counted_search(indexer, asked, trips)

            pushed: list[float] = []
            asked_status: list[float] = []
            for number in range(runs + 1):
                indexer.pushed = view.listing
                pushed += _timed(partial(connection.run, search), 1)
                pushed_trips = trips[-1]
                indexer.pushed = None
                asked_status += _timed(partial(connection.run, search), 1)
                if number == 0:  # warm: the view set up, the index file in the page cache
                    pushed, asked_status = [], []
            found[query.label] = {
                "median_ms": _median_ms(pushed),
                "status_median_ms": _median_ms(asked_status),
                "round_trips": pushed_trips,
            }
        indexer.pushed = view.listing
        found["appended"] = _appended_found(connection, indexer, indexer.store, dovecot, user, "quokkaword")
        found["view"] = {"setups": view.setups, "flushes": view.flushes}
    finally:
        indexer.pushed = None
        view.close()
    return found


def _shards_compared(path: Path, query: Any, runs: int) -> dict[str, float]:
    """A query whose every match is scored (the word in most messages OR the subject word: an OR is
    ranked however common its words) by a store of the index ``path`` alone, in one thread and in two
    shards (two threads, whatever the machine's cores), every folder searched."""
    found: dict[str, float] = {}
    for shards in (1, 2):
        store = SqliteStore(path, shards=shards)
        try:
            search = partial(
                store.search, query, folders=list(store.folders()), order="relevance", limit=20, offset=0
            )
            found["hits"] = search().total
            found[f"{shards}_median_ms"] = _median_ms(_timed(search, runs))
        finally:
            store.close()
    return found


def _appended_found(
    connection: AccountConnection,
    indexer: Indexer,
    store: Any,
    dovecot: Dovecot,
    user: str,
    word: str = "zanzibarword",
) -> dict[str, Any]:
    """A message with ``word`` (in no other) appended by another client 0.1 s before a query: found by
    that query?"""
    other = dovecot.connect(user, tls=False, starttls=False)
    other.append("INBOX", mailgen.plain_message(f"{word} freshness", "appended by another client\r\n"))
    other.logout()
    time.sleep(0.1)
    asked = Contains("text", word)

    def search(session: ImapSession) -> tuple[int, int]:
        answer = fresh_page(
            ImapPageReads(session, "bench"), indexer, asked, **EVERY_FOLDER, deadline=time.monotonic() + 5
        )
        return answer.page.total, answer.fresh.round_trips

    started = time.perf_counter()
    total, trips = connection.run(search)
    return {"found": total == 1, "ms": round((time.perf_counter() - started) * 1000, 1), "round_trips": trips}


def _notmuch(maildir: Path, work: Path, queries: list[Query], messages: int) -> dict[str, Any]:
    config = work / "notmuch-config"
    config.write_text(f"[database]\npath={maildir}\n[new]\ntags=\n[search]\nexclude_tags=\n")
    env = {**os.environ, "NOTMUCH_CONFIG": str(config)}
    started = time.perf_counter()
    subprocess.run(["notmuch", "new", "--quiet"], env=env, check=True, capture_output=True)
    seconds = time.perf_counter() - started
    size = _du(maildir / ".notmuch")
    found: dict[str, Any] = {
        "new_seconds": round(seconds, 1),
        "new_messages_per_s": round(messages / seconds),
        "index_bytes_per_message": round(size / messages),
    }
    prefix = {"from": "from:", "subject": "subject:", "text": ""}
    for query in queries:
        argv = ["notmuch", "search", "--limit=20", "--output=messages", prefix[query.field] + query.word]
        samples = _timed(partial(subprocess.run, argv, env=env, check=True, capture_output=True), CLI_RUNS)
        found[query.label] = {"median_ms": _median_ms(samples)}
    return found


IMAP_KEYS = {"from": "FROM", "subject": "SUBJECT", "text": "TEXT"}


def _imap_searches(
    dovecot: Dovecot, user: str, folders: list[str], queries: list[Query], runs: int
) -> dict[str, Any]:
    """``UID SEARCH`` of every folder in turn (EXAMINE + SEARCH each), the whole loop timed; and BODY."""
    client = dovecot.connect(user, tls=False, starttls=False)
    found: dict[str, Any] = {}
    try:
        for folder in folders:  # Dovecot builds its own index of each folder on first access: not timed
            client.select_folder(folder, readonly=True)
        cases = [(q.label, IMAP_KEYS[q.field], q.word, q.hits) for q in queries]
        cases.append(("BODY " + queries[-1].word, "BODY", queries[-1].word, queries[-1].hits))
        for label, key, word, _ in cases:

            def every_folder(key: str = key, word: str = word) -> int:
                count = 0
                for folder in folders:
                    client.select_folder(folder, readonly=True)
                    count += len(client.search([key, word]))
                return count

            every_folder()
            samples = _timed(every_folder, runs)
            found[label] = {"key": key, "median_ms": _median_ms(samples), "hits": every_folder()}
    finally:
        client.logout()
    return found


def xapian_skip_reason(xapian_messages: int | None) -> str | None:
    """Why Dovecot + fts-xapian is left out of this run (said before anything is seeded), or None: asked
    for no messages, or Dovecot has no fts-xapian plugin (seeding for it would fill an empty column)."""
    if xapian_messages == 0:
        return "--index-xapian-messages 0"
    plugin_dir = subprocess.run(
        ["doveconf", "-h", "mail_plugin_dir"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not list(Path(plugin_dir or "/usr/lib/dovecot/modules").glob("lib*_fts_xapian_plugin.so")):
        return f"its plugin (dovecot-fts-xapian) is not installed in {plugin_dir or 'Dovecot'}"
    return None


def _xapian(
    work: Path, password: str, messages: int, folders: list[str], queries: list[Query]
) -> dict[str, Any]:
    with Dovecot(extra_config=XAPIAN_CONFIG, password=password) as server:
        user = server.new_user()
        _seed(server, user, messages, folders, None)
        started = time.perf_counter()
        subprocess.run(
            [server.doveadm_binary, "-c", str(server.conf_path), "index", "-u", user, "*"],
            check=True,
            capture_output=True,
        )
        seconds = time.perf_counter() - started
        index_dirs = [p for p in (server.root / "mail" / user).rglob("xapian-indexes") if p.is_dir()]
        size = sum(_du(p) for p in index_dirs)
        found: dict[str, Any] = {
            "index_seconds": round(seconds, 1),
            "index_messages_per_s": round(messages / seconds) if seconds else None,
            "index_bytes_per_message": round(size / messages) if size else None,
        }
        found.update(_imap_searches(server, user, folders, queries, IMAP_RUNS))
        return found


async def _end_to_end(
    config: Path, work: Path, password: str, queries: list[Query], said: str = ""
) -> dict[str, Any]:
    """Ranked and newest pages through MCP (stdio, warm); ``said`` ends each row's label."""
    server = our_server(config, work / "serve.log", password, debug=False)
    found: dict[str, Any] = {}
    async with server.running():
        while True:
            state = (await server.call("imap_list_accounts", {})).content["data"]["accounts"][0]["index"]
            if state == "ready":
                break
            await anyio.sleep(0.2)
        cases = {
            "ranked page of 20, query=" + queries[1].word: {
                "query": queries[1].word,
                "sort": "relevance",
                "mailbox": "*",
                "limit": 20,
            },
            "ranked page of 20, query=" + queries[-1].word: {
                "query": queries[-1].word,
                "sort": "relevance",
                "mailbox": "*",
                "limit": 20,
            },
            "newest page of 20 (INBOX, no query)": {"mailbox": "INBOX", "limit": 20},
        }
        for label, arguments in cases.items():
            for _ in range(3):
                await server.call("imap_search_messages", arguments)
            samples = []
            for _ in range(QUERY_RUNS):
                samples.append((await server.call("imap_search_messages", arguments)).ms / 1000)
            found[label + said] = {"median_ms": _median_ms(samples)}
    return found


async def run_index_bench(
    messages: int,
    folder_count: int,
    out_dir: Path,
    work: Path,
    *,
    ours_only: bool = False,
    xapian_messages: int | None = None,
    engine: str = "sqlite",
) -> IndexRun:
    """The whole section: build every engine's index over the same messages and time the same queries.
    ``ours_only``: measure our index again and keep the anchors' figures of the last full run (from
    ``benchmarks-index.json``; the corpus is the same, generated from one seed), both runs' times said.
    ``engine``: our index's (``sqlite+tantivy``: its own JSON file and section)."""
    run = IndexRun(messages, folder_count, engine=engine)
    xapian_skipped = None if ours_only else xapian_skip_reason(xapian_messages)
    if xapian_skipped:
        say(f"index: Dovecot + fts-xapian is not measured: {xapian_skipped}")
    kept: dict[str, Any] = {}
    if ours_only:
        kept = json.loads((out_dir / results_name(messages, engine)).read_text())
        if (kept["messages"], kept["folders"]) != (messages, folder_count):
            raise RuntimeError("the last full run was of another size: run without --index-ours-only")
    folders = _folder_names(folder_count)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    maildir = work / "maildir"
    with Dovecot() as dovecot:
        user = dovecot.new_user()
        say(f"index: seeding {messages} messages over {folder_count} folders")
        _seed(dovecot, user, messages, folders, maildir)
        config = _config(work / "config.toml", dovecot, user, work / "ix", engine)
        say("index: mail-imap-mcp index")
        build = _build_ours(config, dovecot.password, work / "index.log")
        [db_path] = identity_index_paths(work / "ix", "default")
        checkpoint = sqlite3.connect(db_path)
        checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        checkpoint.close()
        size = _du(db_path.parent)  # the file and, for sqlite+tantivy, the Tantivy index beside it
        build.update(
            {
                "messages_per_s": round(messages / build["seconds"]),
                "bytes_per_message": round(size / messages),
            }
        )
        queries = _pick_queries(db_path)
        run.results["queries"] = [q.__dict__ for q in queries]
        run.results["ours_build"] = build
        say("index: our queries")
        run.results["ours"] = _ours_queries(config, dovecot, user, queries, QUERY_RUNS)
        say("index: end to end through MCP")
        run.results["ours_mcp"] = await _end_to_end(config, work, dovecot.password, queries)
        run.results["ours_mcp"] |= await _end_to_end(
            _pushed_config(config), work, dovecot.password, queries, ", quiet push view"
        )
        if ours_only:
            if [q["word"] for q in kept["queries"]] != [q.word for q in queries]:
                raise RuntimeError("the query words differ from the last full run's")
            for anchor in ("dovecot", "notmuch", "xapian"):
                run.results[anchor] = kept[anchor]
            run.results["anchors_from"] = kept.get("anchors_from") or kept["machine"]
            write_index_results(run, out_dir)
            return run
        say("index: Dovecot UID SEARCH")
        run.results["dovecot"] = _imap_searches(dovecot, user, folders, queries, IMAP_RUNS)
        say("index: notmuch")
        run.results["notmuch"] = _notmuch(maildir, work, queries, messages)
    shutil.rmtree(maildir, ignore_errors=True)
    if xapian_skipped:
        run.results["xapian"] = {"skipped": xapian_skipped}
    else:
        say("index: Dovecot + fts-xapian")
        try:
            count = messages if xapian_messages is None else xapian_messages
            run.results["xapian"] = _xapian(work, os.urandom(8).hex(), count, folders, queries)
            run.results["xapian"]["messages"] = count
        except (subprocess.CalledProcessError, OSError) as exc:
            run.results["xapian"] = {"error": str(exc)[:300]}
    write_index_results(run, out_dir)
    return run


def _cell(found: dict[str, Any], label: str) -> str:
    value = found.get(label, {}).get("median_ms") if isinstance(found.get(label), dict) else None
    return "–" if value is None else f"{value:,.1f}"


def index_section(run: IndexRun, machine: dict[str, Any]) -> str:
    r = run.results
    queries = [Query(**q) for q in r["queries"]]
    build, notmuch, xapian = r["ours_build"], r["notmuch"], r.get("xapian", {})
    xapian_count = xapian.get("messages", run.messages)
    if "skipped" in xapian:
        xapian_note = f" (Dovecot + fts-xapian not measured: {xapian['skipped']})"
    elif xapian_count != run.messages:
        xapian_note = (
            f" (fts-xapian: {xapian_count:,} of the messages, over the same folders: its `doveadm index` of "
            f"all {run.messages:,} took about 25 minutes here, its searches are over those {xapian_count:,})"
        )
    else:
        xapian_note = ""
    begin, end = markers(run.messages, run.engine)
    lines = [
        begin,
        "",
        f"{run.messages:,} generated messages over {run.folders} folders, our index in `{run.engine}`; "
        f"{machine.get('cpu_model')}, "
        f"{machine.get('nproc')} cores shared with other work (load average {machine.get('load_average_at_start')} "
        f"when the run ended, {machine.get('date_utc')}). Median of {QUERY_RUNS} (ours), "
        f"{CLI_RUNS} (notmuch, process start included) and {IMAP_RUNS} (Dovecot, every folder in turn) runs, "
        f"ms{xapian_note}.",
        *(
            [
                "",
                "Our figures are from this run; the anchors' (notmuch, Dovecot, fts-xapian) from the full run of "
                f"{r['anchors_from'].get('date_utc')} (load average {r['anchors_from'].get('load_average_at_start')}"
                " at its start) on the same generated messages.",
            ]
            if "anchors_from" in r
            else []
        ),
        "",
        "| query (hits in our index) | ours: freshness + top 20 | ours: with a quiet push view | ours: store alone | notmuch search | Dovecot UID SEARCH | Dovecot + fts-xapian |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    pushed = r["ours"].get("push", {})
    for query in queries:
        key = IMAP_KEYS[query.field]
        beside = pushed.get(query.label, {}).get("status_median_ms")
        lines.append(
            f"| {query.label}: `{query.word}` ({query.hits:,}) | {_cell(r['ours'], query.label)} | "
            f"{_cell(pushed, query.label)}{'' if beside is None else f' ({beside:,.1f})'} | "
            f"{r['ours'][query.label]['store_only_median_ms']:,.1f} | {_cell(r['notmuch'], query.label)} | "
            f"{_cell(r['dovecot'], query.label)} ({key}) | {_cell(r.get('xapian', {}), query.label)} |"
        )
    inbox = r["ours"].get("inbox_common")
    if inbox is not None:
        lines.append(
            f"| {queries[-1].label}, INBOX alone: `{queries[-1].word}` ({inbox['hits']:,}) | "
            f"{inbox['median_ms']:,.1f} | | {inbox['store_only_median_ms']:,.1f} | | | |"
        )
    shards = r["ours"].get("shards")
    if shards is not None:
        lines.append(
            f"| every match scored: `{queries[-1].word} OR {queries[1].word}` ({int(shards['hits']):,}), store alone "
            f"in one thread / in two shards (two threads) | | | {shards['1_median_ms']:,.1f} / "
            f"{shards['2_median_ms']:,.1f} | | | |"
        )
    scored = r["ours"].get("scored_engine")
    if scored is not None:
        lines.append(
            f"| the same, ranked by `{run.engine}`: store alone | | | {scored['median_ms']:,.1f} | | | |"
        )
    body = "BODY " + queries[-1].word
    lines.append(
        f"| `BODY {queries[-1].word}` | | | | | {_cell(r['dovecot'], body)} | {_cell(r.get('xapian', {}), body)} |"
    )
    appended = r["ours"]["appended"]
    lines += [
        "",
        "| building the index | time | messages/s | bytes per message | peak RSS | CPU time of its threads |",
        "|---|---:|---:|---:|---:|---:|",
        f"| ours (`mail-imap-mcp index`, over IMAP) | {build['seconds']} s | {build['messages_per_s']:,} | "
        f"{build['bytes_per_message']:,} | {build['peak_rss_mb']} MB | {build.get('cpu_s', '–')} s |",
        f"| notmuch new (local files) | {notmuch['new_seconds']} s | {notmuch['new_messages_per_s']:,} | "
        f"{notmuch['index_bytes_per_message']:,} | |",
        f"| Dovecot fts-xapian (`doveadm index`, {xapian_count:,} messages) | {xapian.get('index_seconds', '–')} s | "
        f"{xapian.get('index_messages_per_s', '–')} | {xapian.get('index_bytes_per_message', '–')} | |",
        "",
        f"Freshness: the round trip over every folder is {r['ours'][queries[0].label]['round_trips']} round "
        f"trip(s) when nothing changed; a message appended by another client 0.1 s before the query was "
        f"{'found' if appended['found'] else 'NOT found'} ({appended['ms']} ms, {appended['round_trips']} "
        "round trip(s) before the sync of INBOX).",
        *(
            [
                "",
                f"With a quiet push view (`index_fresh_from_push`): {pushed[queries[0].label]['round_trips']} "
                "round trip(s) on the search's connection when nothing changed (one NOOP on the view's); in "
                "brackets, the same query with the STATUS round trip, each run right after one with the view; a "
                "message appended by another client 0.1 s before the query was "
                f"{'found' if pushed['appended']['found'] else 'NOT found'} ({pushed['appended']['ms']} ms). "
                f"The view was set up {pushed['view']['setups']} time(s) and answered "
                f"{pushed['view']['flushes']} NOOPs.",
            ]
            if pushed
            else []
        ),
        "",
        "| through MCP (stdio, warm) | median ms |",
        "|---|---:|",
        *(f"| {label} | {value['median_ms']:,.1f} |" for label, value in r["ours_mcp"].items()),
        "",
        end,
    ]
    return "\n".join(lines)


def write_index_results(run: IndexRun, out_dir: Path, machine: dict[str, Any] | None = None) -> None:
    """The run's JSON (:func:`~benchmark.index_sizes.results_name`: ``benchmarks-index.json`` at the
    default size), its section of ``benchmarks.md``, and the table of every size side by side
    (``machine``: the run's, when the section is written again from the JSON)."""
    from tests.support.run.machine import machine_info

    machine = machine or machine_info()
    out_dir.mkdir(parents=True, exist_ok=True)
    name = results_name(run.messages, run.engine)
    (out_dir / name).write_text(
        json.dumps(
            {
                "messages": run.messages,
                "folders": run.folders,
                "engine": run.engine,
                "machine": machine,
                **run.results,
            },
            indent=2,
        )
        + "\n"
    )
    markdown = out_dir / "benchmarks.md"
    section = index_section(run, machine)
    print(section)
    write_section(markdown, *markers(run.messages, run.engine), section)
    write_sizes(out_dir)
    say(f"index: wrote {name}, its section of {markdown} and the sizes side by side")


__all__ = ["ROOT", "run_index_bench"]
