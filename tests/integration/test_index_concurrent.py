"""The local index stays equal to the server while another client changes the mail during its syncs, on
every server of the matrix and the IMAP4rev1-only Dovecot.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.index.sqlite_store import SqliteStore
from mail_imap_mcp.index.sync import Indexer, sync_folder_now
from tests.support.accounts import account_settings
from tests.support.clients import make_config
from tests.support.mailgen import plain_message
from tests.support.matrix import MATRIX, MatrixServer

WORDS = ("kiwiword", "mangoword", "papayaword")
SENDERS = ("Quincy Sender <quincy@alpha.test>", "Rhubarb Sender <rhubarb@beta.test>")


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


def test_regression_a_sync_resumed_after_another_sync_of_its_folder_still_sees_later_expunges(
    server: MatrixServer, tmp_path: Path
) -> None:
    # Found by a property test with changes during the syncs (Cyrus): the background sync carried the folder's state from its
    # begin to each step; a search's freshness check that synced the folder between two steps had
    # stored a higher UIDNEXT, which the next step wrote back lower. With QRESYNC, VANISHED names
    # only the UIDs below the stored UIDNEXT: a message the index held above it and expunged later
    # stayed in the index for good.
    user = server.new_user()
    server.seed(user, "INBOX", [message(i, random.Random(i)) for i in range(10)])
    account = make_config({"default": account_settings(server, user)}).accounts["default"]
    background = AccountConnection("default", account, enable_qresync=True)
    searches = AccountConnection("default", account, enable_qresync=True)
    store = SqliteStore(tmp_path / "index.sqlite3")
    indexer = Indexer(store, "default", 4096)
    other = server.connect(user, tls=False, starttls=False)
    try:
        steps = indexer.folder("INBOX")
        assert background.run(steps.begin) == 10
        assert background.run(lambda session: steps.fetch(session, 4)) == 6
        # A search's freshness check between two steps: it indexes the rest of the folder.
        assert searches.run(lambda session: sync_folder_now(session, indexer, "INBOX", limit=100)) == 0
        background.run(lambda session: steps.fetch(session, 2))
        other.select_folder("INBOX")
        newest = max(other.search("ALL"))
        other.add_flags([newest], [b"\\Deleted"])
        other.expunge()
        searches.run(lambda session: sync_folder_now(session, indexer, "INBOX", limit=100))
        assert store.uids("INBOX") == sorted(other.search("ALL"))
        assert store.folders()["INBOX"].uidnext == newest + 1
    finally:
        other.logout()
        background.close()
        searches.close()
        store.close()
