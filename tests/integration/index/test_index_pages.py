"""Later pages of a search the local index answers, while mail arrives (issue 47, item 16).

A first page keeps where its matches are, in its order; later pages list the next of them, so every
message the first page found comes once, in that order, whatever arrives meanwhile: mail that arrives
(and would rank first, or be the newest) is left out and ``meta.warnings`` says so, as the server's
date-ordered cursor leaves it out. Ranks follow word counts over every message, so even mail that does
not match moves them: the ranked order is kept, not computed again.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.index.engines.sqlite import pages as sqlite_pages
from mail_imap_mcp.mail.cursors import IndexCursor
from tests.support.clients.index_clients import indexed_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import ENGINES, IndexEngineParam, engine_of

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
BASE = dt.datetime(2026, 4, 1, 9, 0, tzinfo=dt.UTC)


def note(number: int, *, strong: bool = False) -> bytes:
    """A message matching ``kiwiword`` more or less strongly (its subject, how often, how long the text)."""
    words = "kiwiword " * (3 if strong else 1 + number % 3)
    subject = f"note {number} {'kiwiword' if strong or number % 4 == 0 else ''}"
    filler = "plain words about the weather " * (number % 5)
    return plain_message(
        subject,
        f"{filler}{words}\r\n",
        date=BASE + dt.timedelta(hours=number),
        message_id=f"<page{number}@pages.test>",
    )


def unrelated(number: int) -> bytes:
    return plain_message(
        f"other {number}", "nothing of the query " * 40 + "\r\n", date=BASE + dt.timedelta(hours=number)
    )


@pytest.mark.parametrize("sort", ["relevance", "arrival", "date"])
async def test_later_pages_list_the_first_pages_matches_in_its_order_while_mail_arrives(
    dovecot: MatrixServer, tmp_path: Path, sort: str, index_engine: IndexEngineParam
) -> None:
    user = dovecot.new_user()
    archive = dovecot.mailbox_name("Archive")
    dovecot.seed(user, "INBOX", [note(i) for i in range(0, 14, 2)])
    dovecot.seed(user, archive, [note(i) for i in range(1, 14, 2)])
    search: dict[str, Any] = {"query": "kiwiword", "sort": sort, "mailbox": "*"}
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path, index_engine):
        whole = [m["message_id"] for m in (await mcp.ok(SEARCH, {**search, "limit": 50}))["messages"]]
        assert len(whole) == 14
        listed: list[str] = []
        warnings: list[str] = []
        cursor: str | None = None
        arriving = 100
        while True:
            envelope = await mcp.call(
                SEARCH, {**search, "limit": 4, **({"cursor": cursor} if cursor else {})}
            )
            assert envelope["success"], envelope
            listed += [m["message_id"] for m in envelope["data"]["messages"]]
            warnings += envelope["meta"]["warnings"]
            cursor = envelope["data"].get("next_cursor")
            if not cursor:
                break
            with dovecot.connect(user, tls=False, starttls=False) as other:
                # Mail that ranks first, is the newest and the latest sent, and mail that only moves ranks.
                for folder in ("INBOX", archive):
                    other.append(folder, note(arriving, strong=True))
                    other.append(folder, unrelated(arriving + 1))
                    arriving += 2
        assert listed == whole  # none repeated, none skipped, in the first page's order
        assert any("left out" in w and "14 matches then" in w for w in warnings), warnings
        again = await mcp.ok(SEARCH, {**search, "limit": 50})
        assert again["total"] == 14 + (arriving - 100) // 2


def _expunge(other: Any, folder: str, uid: int) -> None:
    """Delete the message ``uid`` of ``folder`` (counted before and after)."""
    other.select_folder(folder)
    before = len(other.search(["ALL"]))
    other.add_flags([uid], [b"\\Deleted"])
    other.expunge()
    assert len(other.search(["ALL"])) == before - 1


@pytest.mark.parametrize(
    ("engine", "ranked_after"),
    [
        *((engine, False) for engine in ENGINES),
        ("sqlite", True),  # RANK_KEPT_AFTER is the SQLite engine's switch: the others rank theirs one way
    ],
    ids=lambda value: {False: "kept-ranked-with-page", True: "kept-ranked-after"}.get(value, value),
)
async def test_ranked_pages_never_repeat_or_skip_while_mail_arrives_and_is_deleted_on_both_engines(
    request: pytest.FixtureRequest,
    dovecot: MatrixServer,
    tmp_path: Path,
    engine: str,
    ranked_after: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between every two pages of a ranked search, mail that would rank first arrives and a message not
    listed yet is deleted: every message that matched throughout comes once, in the first page's order;
    the deleted ones and the newcomers are not listed, and the pages say so. PostgreSQL pages by key
    (its cursor carries its own place and no kept places), SQLite by the places its first page kept."""
    index_engine = engine_of(request, engine)
    monkeypatch.setattr(sqlite_pages, "RANK_KEPT_AFTER", ranked_after)
    user = dovecot.new_user()
    archive = dovecot.mailbox_name("Archive")
    dovecot.seed(user, "INBOX", [note(i) for i in range(0, 24, 2)])
    dovecot.seed(user, archive, [note(i) for i in range(1, 24, 2)])
    search: dict[str, Any] = {"query": "kiwiword", "sort": "relevance", "mailbox": "*"}
    async for mcp, app, _config in indexed_client(dovecot, user, tmp_path, index_engine):
        found = (await mcp.ok(SEARCH, {**search, "limit": 50}))["messages"]
        whole = [m["message_id"] for m in found]
        place = {m["message_id"]: (m["mailbox"], int(m["message_id"].rsplit(":", 1)[1])) for m in found}
        assert len(whole) == 24
        listed: list[str] = []
        deleted: list[str] = []
        warnings: list[str] = []
        cursor: str | None = None
        arriving, pages = 100, 0
        while True:
            envelope = await mcp.call(
                SEARCH, {**search, "limit": 3, **({"cursor": cursor} if cursor else {})}
            )
            assert envelope["success"], envelope
            pages += 1
            listed += [m["message_id"] for m in envelope["data"]["messages"]]
            warnings += envelope["meta"]["warnings"]
            cursor = envelope["data"].get("next_cursor")
            if not cursor:
                break
            decoded = IndexCursor.decode(cursor, app.caller.user)
            assert decoded is not None
            keyed = index_engine[0] == "postgresql"
            assert (bool(decoded.resume), decoded.places == 0) == (keyed, keyed)
            with dovecot.connect(user, tls=False, starttls=False) as other:
                for folder in ("INBOX", archive):
                    other.append(folder, note(arriving, strong=True))
                    other.append(folder, unrelated(arriving + 1))
                    arriving += 2
                waiting = [m for m in whole if m not in listed and m not in deleted]
                if len(waiting) > 4:  # one that a later page would list
                    gone = waiting[2]
                    _expunge(other, *place[gone])
                    deleted.append(gone)
        assert deleted
        assert listed == [m for m in whole if m not in deleted]  # none repeated, none skipped, in order
        assert pages > 5
        assert any("left out" in w and "24 matches then" in w for w in warnings), warnings
        again = await mcp.ok(SEARCH, {**search, "limit": 50})
        assert again["total"] == 24 - len(deleted) + (arriving - 100) // 2
