"""The local index stays equal to the server while another client changes the mail *during* its syncs, on
every server of the matrix and the IMAP4rev1-only Dovecot, through a real MCP client: every server with
the SQLite engine, each of the servers' sync paths with PostgreSQL and sqlite+tantivy
(:func:`property_cases` says which and why).

A property test: another client appends, sets and clears flags, moves and expunges at random, on a
connection of its own, while the index's first build, its background sync and the searches' freshness
checks run. The changes come two ways: a thread that changes the mail continuously (truly concurrent,
landing anywhere, between the commands of a pipelined round trip too), and seams at the sync's own
boundaries (before each chunk or flag update is stored, before a folder's changes are asked for), where a
change is most likely to be lost. The sync runs in small steps (chunks of a few UIDs, steps of a few
messages, a background resync every fraction of a second) so that these boundaries are many and the
background sync and the searches' freshness checks interleave on the same folders. Once the other client
stops, each query's answer from the index (after the freshness check of that search) must be what the
server's own ``UID SEARCH`` finds: nothing missing, nothing expunged, the flags each message shows the
server's. A failing round names its seed.
"""

from __future__ import annotations

import random
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import imapclient
import pytest

import mail_imap_mcp.index.runtime as runtime
import mail_imap_mcp.index.sync as sync
import mail_imap_mcp.index.sync_chunks as sync_chunks
from mail_imap_mcp.app import AppContext
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.sync import Indexer, sync_folder_now
from mail_imap_mcp.services.index_search import PUSHED_UNCHECKED
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import caught_up_pages
from tests.support.mail.mailgen import plain_message
from tests.support.mail.random_changes import random_change
from tests.support.patience import patient
from tests.support.servers.courier import Courier
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import MATRIX, MatrixServer
from tests.support.servers.postgres import ENGINES, engine_of, on_engine

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
#: Words and senders no other text of the generated mail holds, even as part of a word (IMAP SEARCH
#: matches substrings, the index whole words: with these both mean the same).
WORDS = ("kiwiword", "mangoword", "papayaword")
SENDERS = ("Quincy Sender <quincy@alpha.test>", "Rhubarb Sender <rhubarb@beta.test>")
#: Rounds per server, each a fresh user, index and seed.
ROUNDS = 3
SEEDED = 30


@pytest.fixture(params=(*MATRIX, "dovecot_rev1"))
def server(request: pytest.FixtureRequest) -> MatrixServer:
    found: MatrixServer = request.getfixturevalue(request.param)
    return found


def message(number: int, rng: random.Random) -> bytes:
    word = rng.choice(WORDS)
    return plain_message(
        f"note {number} {word if number % 2 else ''}",
        f"the text of note {number} says {word}\r\n",
        from_=rng.choice(SENDERS),
        message_id=f"<note{number}@concurrent.test>",
    )


class OtherClient:
    """Another client of the same user changing the mail at random, on a connection of its own. One
    change at a time, whoever asks (its thread or a seam of the sync)."""

    #: Stalls the client gets over (by a new connection) before it fails the test.
    STALLS_GOT_OVER = 2

    def __init__(self, server: MatrixServer, user: str, folders: tuple[str, str], seed: int) -> None:
        self.imap = self._connect(server, user)
        self.server, self.user = server, user
        self.folders = folders
        self.rng = random.Random(seed)
        self.number = 1000
        self.changes = 0
        self.inside_syncs = 0
        #: Changes the thread makes at most (the seams make theirs beyond it).
        self.budget = 120
        self.active = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        #: What the server showed each time a command of this client went unanswered (see :meth:`_change`).
        self.stalls: list[str] = []

    @staticmethod
    def _connect(server: MatrixServer, user: str) -> imapclient.IMAPClient:
        # 30 s, not the harness's 10: Courier once took more than 10 s to answer this client's SELECT
        # on a loaded machine (a CI run with seven workers, load about 7; likely the shared gamin server:
        # see _change); what this test checks is the answers, not the server's speed.
        return server.connect(user, tls=False, starttls=False, within=30.0)

    def change(self, probability: float = 1.0, *, seam: bool = False) -> None:
        """One random change (with ``probability``), while :attr:`active`; ``seam``: asked by a seam of
        the sync (counted in :attr:`inside_syncs`)."""
        with self._lock:
            if not self.active or self.rng.random() >= probability:
                return
            self._change()
            self.inside_syncs += seam

    def _change(self) -> None:
        folder = self.rng.choice(self.folders)
        other = self.folders[1] if folder == self.folders[0] else self.folders[0]
        self.changes += 1

        def new_message() -> bytes:
            self.number += 1
            return message(self.number, self.rng)

        try:
            random_change(self.imap, self.rng, folder, other, new_message)
        except TimeoutError:
            # Courier left this client's SELECT unanswered in 3 of 8 loaded full runs while every worker's
            # Courier shared one gamin server (now each has its own: tests/support/servers/courier.py). Should it
            # happen again: the property holds whatever became of the change (the index is compared with
            # the server's own search), so the client goes on from a new connection, as the product would,
            # and the run warns with what the server showed; more stalls than that fail the test.
            held = getattr(self.server, "lock_report", None)
            port = self.imap.socket().getsockname()[1]
            self.stalls.append(held(self.user, port) if held is not None else "no report for this server")
            if len(self.stalls) > self.STALLS_GOT_OVER:
                raise
            self.imap.shutdown()
            self.imap = self._connect(self.server, self.user)

    def _run(self) -> None:
        try:
            while not self._stop.is_set() and self.changes < self.budget:
                self.change()
                self._stop.wait(self.rng.random() * 0.02)
        except BaseException as exc:  # said by stop(), in the test's thread
            self.failure = exc

    def start(self) -> None:
        self.active = True
        self._thread = threading.Thread(target=self._run, name="other-client", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """No change after this returns."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=patient(30))
        with self._lock:
            self.active = False
        if self.failure is not None:
            raise AssertionError(f"the other client failed; its stalls: {self.stalls}") from self.failure

    def close(self) -> None:
        self.stop()
        self.imap.logout()


@contextmanager
def changes_at_sync_boundaries(monkeypatch: pytest.MonkeyPatch, other: OtherClient) -> Iterator[None]:
    """Small sync steps, and a chance of a change by ``other`` at each of the sync's boundaries: before a
    chunk of new messages or a folder's flag changes and expunges are stored, before a folder's changes
    are asked for."""
    monkeypatch.setattr(sync, "CHUNK", 4)
    monkeypatch.setattr(sync, "IN_FLIGHT", 2)
    monkeypatch.setattr(sync_chunks, "IN_FLIGHT", 2)
    monkeypatch.setattr(runtime, "RESYNC_S", 0.2)
    monkeypatch.setattr(runtime, "STEP_PAUSE_S", 0.0)
    build = runtime.build
    monkeypatch.setattr(runtime, "build", lambda *args, step: build(*args, step=6))

    def before(method: Callable[..., Any]) -> Callable[..., Any]:
        def changed_first(*args: Any, **kwargs: Any) -> Any:
            other.change(0.7, seam=True)
            return method(*args, **kwargs)

        return changed_first

    monkeypatch.setattr(SqliteStore, "put", before(SqliteStore.put))
    monkeypatch.setattr(SqliteStore, "update", before(SqliteStore.update))
    monkeypatch.setattr(sync, "changes_since", before(sync.changes_since))
    yield


def server_answer(
    imap: imapclient.IMAPClient, folders: list[str], keys: list[Any]
) -> dict[tuple[str, int], tuple[bool, bool]]:
    """What the server's own ``UID SEARCH`` finds in ``folders``: (folder, UID) and the message's
    (unread, flagged) now."""
    found: dict[tuple[str, int], tuple[bool, bool]] = {}
    for folder in folders:
        imap.select_folder(folder, readonly=True)
        uids = imap.search(keys or ["ALL"])
        for uid, data in imap.fetch(uids, ["FLAGS"]).items() if uids else ():
            flags = set(data[b"FLAGS"])
            found[(folder, uid)] = (b"\\Seen" not in flags, b"\\Flagged" in flags)
    return found


def index_answer(data: dict[str, Any]) -> dict[tuple[str, int], tuple[bool, bool]]:
    """The messages of one page from the index: (folder, UID) and the (unread, flagged) it shows."""
    found: dict[tuple[str, int], tuple[bool, bool]] = {}
    for item in data["messages"]:
        parts = item["message_id"].split(":")  # imap:{account}:{mailbox}:{uidvalidity}:{uid}
        found[(parts[2], int(parts[-1]))] = (
            bool(item.get("unread")),
            "\\Flagged" in (item.get("flags") or []),
        )
    return found


async def every_page(mcp: EnvelopeClient, query: str) -> dict[tuple[str, int], tuple[bool, bool]]:
    """The index's whole answer to ``query``, page after page (the index answered, up to date).

    Searched again while a page says the freshness budget (the product's default) ran out: the property
    is the index's equality with the server once the changes stop, not how fast a loaded machine syncs
    (CI at load 16 missed the budget); every page of the answer compared must then say nothing at all."""
    found: dict[tuple[str, int], tuple[bool, bool]] = {}
    for envelope in await caught_up_pages(mcp, {"query": query, "sort": "relevance", "limit": 100}):
        assert envelope["success"] and envelope["summary"].endswith("best match first"), envelope
        # With the push view, a page on counts it checked over a few seconds before says so (whatever
        # the answer): it is the one warning an answer equal to the server's may carry.
        said = [w for w in envelope["meta"]["warnings"] or () if w != PUSHED_UNCHECKED]
        assert not said, said
        found.update(index_answer(envelope["data"]))
    return found


async def wait_built(mcp: EnvelopeClient, within: float = 60.0) -> None:
    with anyio.fail_after(patient(within)):
        while True:
            state = (await mcp.ok("imap_list_accounts", {}))["accounts"][0]["index"]
            assert not state.startswith("unavailable"), state
            if state == "ready" or state.startswith("behind"):
                return
            await anyio.sleep(0.05)


def property_cases() -> list[Any]:
    """Every server on SQLite, each sync path the servers take on the other stores, the push view on
    SQLite, rather than every combination (the suite's time: each case is about 25 s).

    The servers take three sync paths: QRESYNC and CONDSTORE (Dovecot, Cyrus in both namespaces),
    neither with flags compared in full (Courier), and IMAP4rev1 alone (the IMAP4rev1-only Dovecot).
    PostgreSQL runs on Dovecot, Cyrus (its QRESYNC, where the regression below was found), Courier and
    the IMAP4rev1-only Dovecot; Cyrus's other namespace changes the folders' names alone, which the
    SQLite case of it covers. sqlite+tantivy (the SQLite store and one Tantivy writer shared by the
    background sync and the searches' syncs) runs on Dovecot (QRESYNC) and Courier (flags compared in
    full). The push view decides which folders a search syncs, before any store: it runs on SQLite on
    every server of the matrix, where the server offers NOTIFY (Dovecot) and where it does not (Cyrus
    and Courier here: their searches ask STATUS as without it)."""
    on_postgresql = ("dovecot", "cyrus", "courier", "dovecot_rev1")
    on_tantivy = ("dovecot", "courier")
    cases = [(server, "sqlite", False) for server in (*MATRIX, "dovecot_rev1")]
    cases += [(server, "sqlite", True) for server in ("dovecot", "cyrus", "courier")]
    cases += [(server, "postgresql", False) for server in on_postgresql]
    cases += [(server, "sqlite+tantivy", False) for server in on_tantivy]
    assert {engine for _, engine, _ in cases} == set(ENGINES)
    return [
        pytest.param(server, engine, push, id=f"{server}-{engine}-{'push' if push else 'status'}")
        for server, engine, push in cases
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("server_name", "engine", "push"), property_cases())
async def test_property_the_index_equals_the_servers_search_after_changes_during_its_syncs(
    request: pytest.FixtureRequest,
    server_name: str,
    engine: str,
    push: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``push``: with ``index_fresh_from_push``, the searches take the counts from the account's NOTIFY
    connection (one NOOP) where the server offers NOTIFY (Dovecot), else they ask STATUS as without it."""
    server: MatrixServer = request.getfixturevalue(server_name)
    index_engine = engine_of(request, engine)
    moved = server.mailbox_name("Moved")
    folders = ["INBOX", moved]
    # Each query of the index, and the SEARCH keys of the same question in each folder it covers.
    queries: list[tuple[str, list[str], list[Any]]] = [
        ("kiwiword", folders, ["TEXT", "kiwiword"]),
        ("from:quincy", folders, ["FROM", "quincy"]),
        ("mangoword is:unread", folders, ["TEXT", "mangoword", "UNSEEN"]),
        ("is:flagged", folders, ["FLAGGED"]),
        ("papayaword -is:unread", folders, ["TEXT", "papayaword", "SEEN"]),
        (f"in:{moved} note", [moved], ["TEXT", "note"]),
    ]
    inside_all_rounds = pushed_rounds = 0
    for round_number in range(ROUNDS):
        seed = 3500 + round_number
        rng = random.Random(seed)
        user = server.new_user()
        server.seed(
            user, "INBOX", [message(i, rng) for i in range(SEEDED)], flags=lambda i: "\\Seen" * (i % 3 == 0)
        )
        server.seed(user, moved, [message(100 + i, rng) for i in range(SEEDED // 3)])
        other = OtherClient(server, user, ("INBOX", moved), seed)
        checker = server.connect(user, tls=False, starttls=False)
        config = on_engine(
            make_config(
                {"default": account_settings(server, user)},
                index=True,
                index_dir=str(tmp_path / f"ix{seed}"),
                index_fresh_from_push=push,
            ),
            *index_engine,
        )
        try:
            with monkeypatch.context() as patch, changes_at_sync_boundaries(patch, other):
                app = AppContext.from_config(config)
                other.start()  # before the server: the first build runs under the changes
                async for mcp in open_client(config, app):
                    await wait_built(mcp)
                    # Searches while the mail changes: each freshness check syncs folders as they change,
                    # beside the background sync of the same folders.
                    for query, _, _ in queries[:4]:
                        envelope = await mcp.call(SEARCH, {"query": query, "limit": 100})
                        assert envelope["success"], envelope
                    other.stop()
                    changes, inside_syncs = other.changes, other.inside_syncs
                    for query, covered, keys in queries:
                        found = await every_page(mcp, query)
                        expected = server_answer(checker, covered, keys)
                        assert found == expected, (seed, query, changes)
                    runtime_of = app.index_of("default")
                    assert runtime_of is not None
                    view = runtime_of.push_view
                    assert (view is not None) == push
                    if view is not None and view.offered:  # live: it answered, searches took its counts
                        assert view.setups >= 1 and view.flushes >= 1, (view.setups, view.flushes)
                        pushed_rounds += 1
        finally:
            other.close()
            checker.logout()
            for stall in other.stalls:
                warnings.warn(
                    f"{server_name}: the other client's command went unanswered: {stall}", stacklevel=1
                )
        # The mail did change in every round, and inside the syncs too: counted over the rounds, since how
        # many sync steps one round's changes land in depends on the machine's load (4 in one CI round).
        assert changes >= 20 and inside_syncs >= 1, (seed, changes, inside_syncs)
        inside_all_rounds += inside_syncs
    assert inside_all_rounds >= 5 * ROUNDS - 3, inside_all_rounds
    # Dovecot offers NOTIFY and CONDSTORE (not the IMAP4rev1-only one): there the view vouched in every
    # round; the other servers offer no NOTIFY, and their searches asked STATUS.
    full_dovecot = isinstance(server, Dovecot) and not server.capabilities
    assert pushed_rounds == (ROUNDS if push and full_dovecot else 0), (push, pushed_rounds)


def test_the_other_client_gets_over_an_unanswered_command_from_a_new_connection(
    courier: Courier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The property test's driver, when a command of its goes unanswered (as a Courier SELECT did in loaded
    runs), keeps what the server showed and goes on from a new connection; its changes still land."""
    user = courier.new_user()
    other = OtherClient(courier, user, ("INBOX", "INBOX"), seed=1)
    unanswered, answered = [other.imap], random_change

    def first_unanswered(imap: imapclient.IMAPClient, *args: Any) -> str:
        if imap is unanswered[0]:
            raise TimeoutError("timed out")
        return answered(imap, *args)

    monkeypatch.setattr(sys.modules[__name__], "random_change", first_unanswered)
    other.active = True
    try:
        other.change()
        other.change()
    finally:
        other.close()
    (stall,) = other.stalls
    assert "imapd processes: ['" in stall and "courier.log ends: " in stall, stall
    assert other.imap is not unanswered[0] and other.changes == 2
    with courier.connect(user, tls=False, starttls=False) as client:
        assert client.select_folder("INBOX", readonly=True)[b"EXISTS"] == 1  # the second change's append


def test_regression_a_sync_resumed_after_another_sync_of_its_folder_still_sees_later_expunges(
    server: MatrixServer, tmp_path: Path
) -> None:
    # Found by the property test above (Cyrus): the background sync carried the folder's state from its
    # begin to each step; a search's freshness check that synced the folder between two steps had
    # stored a higher UIDNEXT, which the next step wrote back lower. With QRESYNC, VANISHED names
    # only the UIDs below the stored UIDNEXT: a message the index held above it and expunged later
    # stayed in the index for good.
    user = server.new_user()
    server.seed(user, "INBOX", [message(i, random.Random(i)) for i in range(10)])
    account = make_config({"default": account_settings(server, user)}).accounts["default"]
    background = AccountConnection(
        "default", account, credentials=credentials_for("default", account), enable_qresync=True
    )
    searches = AccountConnection(
        "default", account, credentials=credentials_for("default", account), enable_qresync=True
    )
    store = SqliteStore(tmp_path / "index.sqlite3")
    indexer = Indexer(store, "default", 4096)
    with server.connect(user, tls=False, starttls=False) as other:
        steps = indexer.folder("INBOX")
        assert background.run(steps.begin) == 10
        assert background.run(lambda session: steps.fetch(session, 4)) == 6
        # A search's freshness check between two steps: it indexes the rest of the folder.
        assert searches.run(lambda session: sync_folder_now(session, indexer, "INBOX", limit=100).left) == 0
        background.run(lambda session: steps.fetch(session, 2))
        other.select_folder("INBOX")
        newest = max(other.search("ALL"))
        other.add_flags([newest], [b"\\Deleted"])
        other.expunge()
        searches.run(lambda session: sync_folder_now(session, indexer, "INBOX", limit=100))
        assert store.uids("INBOX") == sorted(other.search("ALL"))
        assert store.folders()["INBOX"].uidnext == newest + 1
        background.close()
        searches.close()
        store.close()
