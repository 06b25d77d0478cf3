"""The three index engines answer alike, store to store, without IMAP or MCP: SQLite, sqlite+tantivy and
PostgreSQL (the session's throwaway cluster) are given the same messages and writes, and every query of
the language (``test_index_query_language.QUERIES``) finds the same messages in each, in folders named
as each server of the matrix names them (Dovecot beside INBOX, Cyrus's ``/`` namespace, Courier below
``INBOX.``); each refuses what the index cannot answer alike. That SQLite's answers equal the server's
own SEARCH is proved end to end on every server (test_index_query_language, test_index_search); Gmail's
labels and global ids, and the text of attachments, are kept and found alike too; each
engine's own paths (its build and resume, freshness under concurrent writes, paging, locks, faults) run
end to end on it (docs/index.md lists where)."""

from __future__ import annotations

import datetime as dt
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.store import TEXT_COLUMNS, FolderState, IndexedMessage, IndexStore, Unsupported
from mail_imap_mcp.query import EVERYTHING, Label, Query
from mail_imap_mcp.query.parse import Anywhere, InMailbox, ParsedQuery, parse
from tests.support.clients.in_process import make_config
from tests.support.servers.postgres import ENGINES, PostgresServer, index_table
from tests.support.shared.index_query_language import QUERIES
from tests.support.shared.query_language import INBOX, INBOX_ARRIVALS, INBOX_FLAGS, NOW, message

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
#: How each way of naming folders names the scenario's archive, Trash and Junk.
NAMINGS = {
    "dovecot": {"archive": "Archive", "trash": "Trash", "junk": "Junk"},
    "cyrus_altns": {"archive": "Archiv/Ältere Post", "trash": "Deleted Items", "junk": "Junk/Spam"},
    "courier": {"archive": "INBOX.Archive", "trash": "INBOX.Trash", "junk": "INBOX.Junk"},
}
_accounts = itertools.count()


def engine_named(name: str, request: pytest.FixtureRequest, index_dir: Path) -> IndexEngine:
    """The engine ``name`` as the application opens it, its files in ``index_dir`` (PostgreSQL: a new
    database of the session's cluster)."""
    config = make_config({}, index_dir=str(index_dir))
    if name == "postgresql":
        postgres: PostgresServer = request.getfixturevalue("postgres")
        config = config.model_copy(update={"index": IndexSettings.model_validate(index_table(postgres))})
    elif name != "sqlite":
        config = config.model_copy(update={"index": IndexSettings(index_engine=name)})
    opened = open_engine(config)
    assert opened.name == name
    return opened


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IndexEngine]:
    """Each engine in turn."""
    opened = engine_named(request.param, request, tmp_path)
    yield opened
    opened.close()


@dataclass
class Stores:
    """One store of each engine, written alike."""

    stores: dict[str, IndexStore]

    def put(self, folder: str, messages: list[IndexedMessage], uidvalidity: int = 7) -> None:
        for store in self.stores.values():
            state = store.folders().get(folder) or store.start_folder(folder, uidvalidity)
            store.put(state, messages)

    def update(self, folder: str, flags: dict[int, tuple[str, ...]], removed: list[int]) -> None:
        for store in self.stores.values():
            store.update(store.folders()[folder], flags=flags, removed=removed)

    def update_labels(self, folder: str, labels: dict[int, tuple[str, ...]]) -> None:
        for store in self.stores.values():
            store.update(store.folders()[folder], flags={}, removed=(), labels=labels)

    def drop(self, folder: str) -> None:
        for store in self.stores.values():
            store.drop_folder(folder)

    def found(self, query: ParsedQuery, folders: list[str]) -> dict[str, set[tuple[str, int]]]:
        """Each engine's matches of ``query`` in ``folders``, as (folder, UID), checking its total."""
        answers = {}
        for name, store in self.stores.items():
            page = store.search(query.tree, folders=folders, order="relevance", limit=200, offset=0)
            answers[name] = {(hit.folder, hit.uid) for hit in page.hits}
            assert page.total == len(page.hits), (name, query)
        return answers


@pytest.fixture
def stores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    """A store of every engine (each opened as the application opens it)."""
    engines = [engine_named(name, request, tmp_path_factory.mktemp("ix")) for name in ENGINES]
    opened = {
        each.name: each.location(f"contract{next(_accounts)}", ACCOUNT).open().store for each in engines
    }
    yield Stores(opened)
    for store in opened.values():
        store.close()
    for each in engines:
        each.close()


def indexed(uid: int, raw: bytes, flags: str = "", arrived: dt.datetime | None = None) -> IndexedMessage:
    """The index's record of a generated message (what the sync would store from its FETCH)."""
    parsed = message_from_bytes(raw, policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    sent = parsed["Date"].datetime
    arrival = arrived or sent
    body = parsed.get_body(("plain",))
    filenames = tuple(
        part.get_filename().lower() for part in parsed.iter_attachments() if part.get_filename()
    )
    texts = (
        str(parsed["Subject"] or ""),
        str(parsed["From"] or ""),
        str(parsed["To"] or ""),
        str(parsed["Cc"] or ""),
        "",
        str(parsed["Message-ID"] or ""),
        body.get_content() if body is not None else "",
        "",
        " ".join(filenames),
        "",
    )
    return IndexedMessage(
        uid=uid,
        sent=int(sent.timestamp()),
        arrival_day=int(arrival.strftime("%Y%m%d")),
        size=len(raw),
        flags=tuple(flags.split()),
        has_attachment=bool(filenames),
        texts=texts,
        filenames=filenames,
        arrival=int(arrival.timestamp()),
    )


def seed(stores: Stores, names: dict[str, str]) -> None:
    """The scenario of ``test_query_language.seed`` in folders named as ``names`` says."""
    stores.put(
        "INBOX",
        [
            indexed(uid, raw, INBOX_FLAGS[uid - 1], INBOX_ARRIVALS[uid - 1])
            for uid, raw in enumerate(INBOX, 1)
        ],
    )
    stores.put(
        names["archive"], [indexed(1, message("Old budget", "Archived budget figures.", days_ago=900))]
    )
    stores.put(names["trash"], [indexed(1, message("Deleted budget", "A budget draft, deleted."))])
    junk = message("Budget offer!!", "Cheap budget loans.", sender="x@spam.example")
    stores.put(names["junk"], [indexed(1, junk)])


def folders_of(query: ParsedQuery, names: dict[str, str]) -> list[str]:
    """The folders a search of ``query`` reads (the search resolves roles before the store is asked):
    every one but Trash and Junk unless it names them."""
    roles = {"inbox": "INBOX", **names, "spam": names["junk"]}
    if isinstance(query.scope, Anywhere):
        return ["INBOX", *names.values()]
    if isinstance(query.scope, InMailbox):
        return [roles[query.scope.name]]
    return ["INBOX", names["archive"]]


@pytest.mark.parametrize("naming", sorted(NAMINGS))
def test_every_query_finds_the_same_messages_on_every_engine(stores: Stores, naming: str) -> None:
    names = NAMINGS[naming]
    seed(stores, names)
    found_any = 0
    for text in QUERIES:
        query = parse(text, today=NOW.date())
        answers = stores.found(query, folders_of(query, names))
        assert answers["sqlite+tantivy"] == answers["postgresql"] == answers["sqlite"], (text, answers)
        found_any += bool(answers["sqlite"])
    # Not a comparison of empty answers: most queries of the scenario find something.
    assert found_any >= len(QUERIES) - 3


def test_the_same_messages_after_any_writes_on_every_engine(stores: Stores) -> None:
    """Random puts, flag changes, expunges, dropped folders and new UIDVALIDITYs (what a sync after
    another client's changes writes) leave the engines alike, in folders of every naming."""
    chooser = random.Random(57)
    folders = ["INBOX", *{name for names in NAMINGS.values() for name in names.values()}]
    flag_sets = ("", "\\Seen", "\\Flagged", "\\Seen \\Flagged", "\\Answered \\Seen")
    queries = [parse(text, today=NOW.date()) for text in QUERIES if "in:" not in text]
    uidvalidity = dict.fromkeys(folders, 7)
    for step in range(40):
        folder = chooser.choice(folders)
        reference = stores.stores["sqlite"]
        held = set(reference.uids(folder)) if folder in reference.folders() else set()
        action = chooser.choice(("put", "put", "update", "drop", "uidvalidity") if held else ("put",))
        if action == "put":  # new UIDs, and some stored again with other text and flags
            uids = chooser.sample(range(1, 9), chooser.randint(1, 3))
            batch = [indexed(uid, chooser.choice(INBOX), chooser.choice(flag_sets)) for uid in uids]
            stores.put(folder, batch, uidvalidity[folder])
        elif action == "update":
            changed = {
                uid: tuple(chooser.choice(flag_sets).split()) for uid in chooser.sample(sorted(held), 1)
            }
            removed = [uid for uid in held - set(changed) if chooser.random() < 0.3]
            stores.update(folder, changed, removed)
        elif action == "drop":
            stores.drop(folder)
        else:
            uidvalidity[folder] += 1
            stores.put(folder, [indexed(1, INBOX[step % len(INBOX)])], uidvalidity[folder])
        query = queries[step % len(queries)]
        answers = stores.found(query, folders)
        assert answers["sqlite+tantivy"] == answers["postgresql"] == answers["sqlite"], (step, action, query)
        for name, store in stores.stores.items():
            assert store.flags_of(folder) == reference.flags_of(folder), (step, action, name)
    assert sum(store.count() for store in stores.stores.values()) > 0


def test_a_test_the_index_cannot_answer_is_refused_by_every_engine(engine: IndexEngine) -> None:
    with pytest.raises(Unsupported, match="bcc"):
        engine.check(parse("bcc:nobody budget", today=NOW.date()).tree)


def test_a_folders_state_reads_back_alike_on_every_engine(stores: Stores) -> None:
    for naming in NAMINGS.values():
        stores.put(naming["archive"], [indexed(3, INBOX[0], "\\Seen \\Flagged")], uidvalidity=11)
    state = FolderState(NAMINGS["cyrus_altns"]["archive"], 11, uidnext=9, highestmodseq=40, messages=1)
    expected_flags = stores.stores["sqlite"].flags_of(NAMINGS["courier"]["archive"])
    assert len(expected_flags) == 1
    for name, store in stores.stores.items():
        store.put(state, [])
        assert store.folders()[state.name] == state, name
        assert store.uids(NAMINGS["courier"]["archive"]) == [3], name
        assert store.flags_of(NAMINGS["dovecot"]["archive"]) == expected_flags, name


def test_gmail_labels_and_global_ids_are_kept_and_found_alike_on_every_engine(stores: Stores) -> None:
    """A message with the server's own id is one row wherever it is shown (Trash replaces All Mail's),
    ``label:`` answers from its stored labels, a label changed by a sync shows, and each hit carries its
    labels: alike on every engine (what test_index_gmail runs end to end on SQLite)."""
    every = ["[Gmail]/All Mail", "[Gmail]/Trash"]
    labels = (("\\Inbox", "\\Important", "Work"), ("\\Inbox",), ("Work",), ())
    kept = [
        replace(indexed(uid, INBOX[uid]), global_id=70 + uid, labels=labels[uid - 1]) for uid in (1, 2, 3, 4)
    ]
    stores.put(every[0], kept)
    stores.put(every[1], [replace(kept[3], uid=9, labels=())], uidvalidity=9)

    def alike(query: Query) -> set[tuple[str, int]]:
        found = stores.found(ParsedQuery(query), every)
        assert found["sqlite+tantivy"] == found["postgresql"] == found["sqlite"], (query, found)
        return found["sqlite"]

    assert alike(EVERYTHING) == {(every[0], 1), (every[0], 2), (every[0], 3), (every[1], 9)}
    assert alike(Label("work")) == {(every[0], 1), (every[0], 3)}
    assert alike(Label("inbox")) == {(every[0], 1), (every[0], 2)} == alike(Label("\\Inbox"))
    stores.update_labels(every[0], {2: ("\\Inbox", "Travel")})
    assert alike(Label("travel")) == {(every[0], 2)}
    for name, store in stores.stores.items():
        assert store.count() == 4, name
        page = store.search(Label("travel"), folders=every, order="date", limit=5, offset=0)
        assert [hit.labels for hit in page.hits] == [("\\Inbox", "Travel")], name


def test_attachment_text_and_the_attachments_left_to_read_are_alike_on_every_engine(stores: Stores) -> None:
    """The text read from attachments is found as the message's (what test_index_attachments runs end
    to end on SQLite, and test_index_attachment_backfill on every engine), and the messages indexed
    without it are the ones each engine lists to read."""
    column = TEXT_COLUMNS.index("attachment_text")

    def with_text(uid: int, text: str, read: bool) -> IndexedMessage:
        plain = indexed(uid, INBOX[uid - 1])
        texts = tuple(text if i == column else value for i, value in enumerate(plain.texts))
        return replace(plain, texts=texts, attachments_read=read)

    stores.put(
        "INBOX",
        [with_text(1, "quokkaword figures", True), with_text(3, "", False), with_text(6, "dugongword", True)],
    )
    for word, expected in (("quokkaword", {1}), ("dugongword", {6}), ("figures", {1}), ("wombatword", set())):
        found = stores.found(parse(word, today=NOW.date()), ["INBOX"])
        assert found["sqlite+tantivy"] == found["postgresql"] == found["sqlite"], (word, found)
        assert {uid for _, uid in found["sqlite"]} == expected, word
    for name, store in stores.stores.items():
        assert store.unread_attachments("INBOX") == [3], name
