"""A build (the background sync, ``mail-imap-mcp index``) leaves a folder alone whose STATUS, from the
listing's own round trip (LIST-STATUS), shows nothing changed since the index stored it (issue 80): no
EXAMINE, no question what changed, the indexer's lock not taken for it. A folder that changed (new mail, a
flag, an expunge) is synced as before. On Dovecot, every command seen on the wire (a recording relay)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.index.build import BuildReport, build
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.store import IndexStore
from mail_imap_mcp.index.sync import Indexer
from tests.support.mail.mailgen import plain_message
from tests.support.round_trips import recorded_index
from tests.support.servers.dovecot import Dovecot
from tests.support.shared.index_search import other_client
from tests.support.wire import ImapRecorder, parse_commands

FOLDERS = ("INBOX", "Work", "Lists/Python")


def note(folder: str, number: int) -> bytes:
    return plain_message(f"{folder} note {number}", f"the text of note {number}\r\n")


@contextmanager
def opened(config: Config) -> Iterator[IndexStore]:
    engine = open_engine(config)
    store = engine.location("default", config.accounts["default"]).open().store
    try:
        yield store
    finally:
        store.close()
        engine.close()


def built(config: Config, recorder: ImapRecorder) -> tuple[BuildReport, list[str]]:
    """One build on a connection of its own (as the background sync's first, after a restart): its
    report and the commands it sent after logging in."""
    account = config.accounts["default"]
    connection = AccountConnection(
        "default", account, credentials=credentials_for("default", account), enable_qresync=True
    )
    recorder.take()
    try:
        with opened(config) as store:
            report = build(connection, Indexer(store, "default", config.server.index_text_bytes))
    finally:
        connection.close()
    sent = [command.verb for out, _ in recorder.take() for command in parse_commands(out)]
    return report, [verb for verb in sent if verb not in {"LOGIN", "ENABLE", "CAPABILITY", "LOGOUT"}]


def test_a_build_opens_no_folder_whose_status_shows_nothing_changed(dovecot: Dovecot, tmp_path: Path) -> None:
    seeded = {folder: [note(folder, n) for n in range(3)] for folder in FOLDERS}
    with recorded_index(dovecot, tmp_path / "ix", seeded) as (config, recorder, user):
        first, sent = built(config, recorder)
        assert first.fetched == 9 and "EXAMINE" in sent
        again, sent = built(config, recorder)
        assert (again.unchanged, again.fetched, sent) == (len(FOLDERS), 0, ["LIST"])

        with other_client(dovecot, user) as other:
            other.append("Work", note("Work", 7))
            other.select_folder("Lists/Python")
            other.add_flags(other.search(["SUBJECT", "note 1"]), [b"\\Flagged"])
        changed, sent = built(config, recorder)
        assert (changed.unchanged, changed.fetched, sent.count("EXAMINE")) == (1, 1, 2)
        with opened(config) as store:
            assert {name: state.messages for name, state in store.folders().items()} == {
                "INBOX": 3,
                "Work": 4,
                "Lists/Python": 3,
            }
            flagged = [uid for uid, (bits, _) in store.flags_of("Lists/Python").items() if bits & 4]
            assert len(flagged) == 1
        quiet, sent = built(config, recorder)
        assert (quiet.unchanged, sent) == (len(FOLDERS), ["LIST"])
