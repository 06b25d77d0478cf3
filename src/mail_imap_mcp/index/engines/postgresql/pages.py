"""A page of the PostgreSQL index, by key: a later page goes on after the previous page's last row.

A page counts its matches apart (their kept count where :mod:`.counts` keeps one), then lists
its rows in its order; a first page notes the highest row id of the index as it read them (in the same
statement: one snapshot). Each page's last row's sort key, the order (:class:`Mode`) and that row id are
its :attr:`~.store.Keyed.resume`; the next page is ``WHERE (key) < (last key) AND id <= highest ORDER
BY key LIMIT n``: no OFFSET to walk past, no places kept. A row's key never changes while it is stored,
so a message that matches on every page comes exactly once, in the first page's order, however many
arrive or go meanwhile; rows added since the first page have higher ids: mail that arrived since is left
out, counted (:attr:`~.store.Keyed.newer`), and a message filed meanwhile (moved, or stored again: its
INTERNALDATE before the first page) comes at its new place if its key is still ahead (a move keeps the
rank, the dates and so the key but for its place and UID: listed once, in one of its two places).

The keys: ranked, ``ts_rank`` (of several words, each weighed by its rarity: :mod:`.rarity`) then the
newest sent date then the row id; the unweighted ranking (every
word in most messages), the sent date then the row id; ``uid``, the UID then the row id; ``arrival``,
INTERNALDATE newest first, then the folder's place in the searched list, then the UID; ``date`` (and
relevance with no words to rank), the sent date newest first, then as ``arrival`` (the server's order).
``ts_rank`` weighs the query's lexemes in the message's own ``tsvector`` and nothing else (PostgreSQL's
text search keeps no corpus statistics: no document frequency, no average length); the words' rarities
are found at the first page and kept in the resume, so a row's rank is the same on every page whatever
else arrives, unlike SQLite's BM25 (whose pages keep places instead).
"""

from __future__ import annotations

import enum
import struct
import time
from collections.abc import Sequence
from typing import Any

from mail_imap_mcp.index.engines.postgresql.counts import Scoped, keep_count, kept_total, stored_messages
from mail_imap_mcp.index.engines.postgresql.flag_counts import flag_total
from mail_imap_mcp.index.engines.postgresql.query import RARE_TERMS, PgQuery
from mail_imap_mcp.index.engines.postgresql.rarity import rarities, weighed_score
from mail_imap_mcp.index.engines.sqlite.ranking import UNWEIGHTED_MATCHES
from mail_imap_mcp.index.store import (
    RESUME_BYTES,
    Hit,
    HitPage,
    Keyed,
    Order,
    PageAsk,
    Place,
    StaleResume,
    flag_names,
    unpack_doc,
)

#: ``ts_rank``'s weights of D, C, B and A.
RANK_WEIGHTS = "{0.1, 0.2, 0.4, 1.0}"
_HIT_COLUMNS = (
    "m.id, f.name, f.uidvalidity, m.uid, m.sent, m.doc, m.flag_bits, m.keywords, m.size, "
    "m.has_attachment, m.labels, m.arrival"
)
_SOURCE = "FROM messages m JOIN folders f ON f.id = m.folder"


class Mode(enum.IntEnum):
    """A page's order by key, as its resume records it."""

    RANKED = 1
    NEWEST = 2  # by sent date: ``date``, or relevance without words to rank
    UNWEIGHTED = 3  # ranked, but every word in most messages: by sent date, said
    UID = 4
    ARRIVAL = 5
    RARE = 6  # ranked, each word weighed by its rarity (the rarities after the resume's fields)


#: The modes each order of a page may be in.
_MODES: dict[Order, frozenset[Mode]] = {
    "relevance": frozenset({Mode.RANKED, Mode.RARE, Mode.NEWEST, Mode.UNWEIGHTED}),
    "date": frozenset({Mode.NEWEST}),
    "uid": frozenset({Mode.UID}),
    "arrival": frozenset({Mode.ARRIVAL}),
}
#: A resume: its mode, the highest row id of the first page, the rank (0 but ranked), the three integers
#: of the last row's key, and when the first page was read (epoch seconds); then, ranked by rarity, the
#: words' rarities (a byte each).
_RESUME = struct.Struct("<BqfqqQq")
#: The bytes of a resume but for the words' rarities.
RESUME_SIZE = _RESUME.size
assert RESUME_SIZE + RARE_TERMS <= RESUME_BYTES


def page_of(conn: Scoped, query: PgQuery, ask: PageAsk, writer_lock: str) -> HitPage:
    """The page ``ask`` of ``query`` (its folders in the search's order), by key (see the module's text):
    the count of the matches (kept, :mod:`.counts`, or counted apart; ``writer_lock``: the index's
    writers' lock, taken to start keeping one), then the page's rows and one more (does a row follow?)."""
    folders, order, limit, offset = list(ask["folders"]), ask["order"], ask["limit"], ask["offset"]
    places, after = ask.get("places"), ask.get("after")
    condition = f"f.name = ANY(%s) AND ({query.where})"
    params: list[object] = [folders, *query.params]
    total = _matches(conn, query, folders, writer_lock)
    if places is not None:  # a later page of a cursor whose first page kept places (an earlier release)
        found = _still_matching(conn, query, _ids_at(conn, places))
        return HitPage(rows_of(conn, found, [0.0] * len(found)), total, folders)
    if after:
        mode, highest, last, since, rarity = _resumed(after, order, query)
        # The rows added since the first page, read by the primary key (a few), then tested: mail that
        # arrived since (a message filed meanwhile, moved or stored again, keeps its older arrival).
        newer = conn.execute(
            "WITH m AS MATERIALIZED (SELECT * FROM messages WHERE id > %s) "
            f"SELECT count(*) FROM m JOIN folders f ON f.id = m.folder WHERE m.arrival >= %s AND {condition}",
            [highest, since, *params],
        ).fetchone()
        added = int(newer[0]) if newer else 0
        rows = _listed(
            conn,
            query,
            mode,
            condition,
            params,
            folders,
            limit,
            highest=highest,
            last=last,
            since=since,
            rarity=rarity,
        )
        return _page(
            conn, rows, mode, highest, total - added, folders, limit, since, newer=added, rarity=rarity
        )
    mode = {"date": Mode.NEWEST, "uid": Mode.UID, "arrival": Mode.ARRIVAL}.get(order, Mode.RANKED)
    if mode is Mode.RANKED and query.rank is None:
        mode = Mode.NEWEST
    stored = stored_messages(conn) if mode is Mode.RANKED and (query.conjunctive or query.terms) else 0
    # SQLite's rule: every word in most messages, newest first.
    if mode is Mode.RANKED and query.conjunctive and total >= UNWEIGHTED_MATCHES and total * 2 > stored:
        mode = Mode.UNWEIGHTED
    rarity = b""
    if mode is Mode.RANKED and query.terms:
        mode, rarity = Mode.RARE, rarities(conn, query.terms, stored)
    since = int(time.time())
    rows = _listed(conn, query, mode, condition, params, folders, limit, offset=offset, rarity=rarity)
    highest = int(rows[0][-1]) if rows else 0
    return _page(conn, rows, mode, highest, total, folders, limit, since, rarity=rarity)


def _matches(conn: Scoped, query: PgQuery, folders: list[str], writer_lock: str) -> int:
    """How many messages of ``folders`` match ``query``: its kept count, else counted over every match's
    row (and kept from then on where it qualifies, :mod:`.counts`)."""
    kept = flag_total(conn, query, folders)
    kept = kept_total(conn, query, folders) if kept is None else kept
    if kept is not None:
        return kept
    row = conn.execute(
        f"SELECT count(*) {_SOURCE} WHERE f.name = ANY(%s) AND ({query.where})", [folders, *query.params]
    ).fetchone()
    total = int(row[0]) if row is not None else 0
    keep_count(conn, query, total, writer_lock)
    return total


def _listed(
    conn: Scoped,
    query: PgQuery,
    mode: Mode,
    condition: str,
    params: list[object],
    folders: list[str],
    limit: int,
    *,
    offset: int = 0,
    highest: int | None = None,
    last: tuple[float, int, int, int] | None = None,
    since: int = 0,
    rarity: bytes = b"",
) -> list[tuple[Any, ...]]:
    """The page's rows and one more, each ``(id, rank, k1, k2, k3, highest id)``: after ``last`` among rows
    up to ``highest`` and those stored since that arrived before ``since`` (a later page: a message moved
    meanwhile is listed at its new place if its key is still ahead), else from ``offset`` with the index's
    highest row id, read in the same statement. Never counted here: a count over the window of the ordered rows reads every match
    (and made the planner walk the sent dates' index with the words as a filter, reading every message)."""
    score, score_params = "0.0::real", list[object]()
    ranks, rank_params = "", list[object]()
    if mode is Mode.RANKED:
        score, score_params = f"ts_rank('{RANK_WEIGHTS}', m.terms, %s::tsquery)", [query.rank]
    elif mode is Mode.RARE:
        weighed = weighed_score(RANK_WEIGHTS, query.terms, rarity)
        ranks, rank_params, score = f" {weighed.ranks}", weighed.params, weighed.score
    ranked = mode in (Mode.RANKED, Mode.RARE)
    key_params: list[object] = []
    bound_params: list[object] = []
    if mode in (Mode.ARRIVAL, Mode.NEWEST):  # the server's order: ties by the folder's place, then UID
        column = "m.arrival" if mode is Mode.ARRIVAL else "m.sent"
        keys = f"{column}, array_position(%s::text[], f.name), m.uid"
        key_params = [folders]
        order_by = f"{column} DESC, 4, m.uid"
        after = f"(-{column}, array_position(%s::text[], f.name), m.uid) > (%s, %s, %s)"
        bound_params = [folders]
    else:  # ranked: the rank, then the sent date, then the row id; else the UID
        key = "m.uid" if mode is Mode.UID else "m.sent"
        keys, order_by = f"{key}, m.id, 0", f"{key} DESC, m.id DESC"
        after = f"({key}, m.id) < (%s, %s)"
        if ranked:
            order_by = "2 DESC, m.sent DESC, m.id DESC"
            after, bound_params = f"({score}, m.sent, m.id) < (%s::real, %s, %s)", score_params
    where, where_params = condition, list(params)
    if last is not None:
        rank, first, second, third = last
        bound: list[object] = [rank, first, second] if ranked else [first, second]
        if mode in (Mode.ARRIVAL, Mode.NEWEST):
            bound = [-first, second, third]
        where = f"{condition} AND (m.id <= %s OR m.arrival < %s) AND {after}"
        where_params += [highest, since, *bound_params, *bound]
    return conn.execute(
        f"SELECT m.id, {score}, {keys}, (SELECT coalesce(max(id), 0) FROM messages) {_SOURCE}{ranks} "
        f"WHERE {where} ORDER BY {order_by} LIMIT %s OFFSET %s",
        [*score_params, *key_params, *rank_params, *where_params, limit + 1, offset],
    ).fetchall()


def _page(
    conn: Scoped,
    rows: list[tuple[Any, ...]],
    mode: Mode,
    highest: int,
    total: int,
    folders: list[str],
    limit: int,
    since: int,
    *,
    newer: int = 0,
    rarity: bytes = b"",
) -> HitPage:
    chosen = rows[:limit]
    resume = None
    if len(rows) > limit and chosen:
        _, rank, first, second, third, _ = chosen[-1]
        resume = _RESUME.pack(mode, highest, float(rank), int(first), int(second), int(third), since) + rarity
    hits = rows_of(conn, [int(row[0]) for row in chosen], [-float(row[1]) for row in chosen])
    unweighted = mode is Mode.UNWEIGHTED and bool(hits)
    return HitPage(hits, total, folders, unweighted=unweighted, keyed=Keyed(resume, newer))


def _resumed(
    after: bytes, order: Order, query: PgQuery
) -> tuple[Mode, int, tuple[float, int, int, int], int, bytes]:
    """The mode, highest row id, last key, first page's time and words' rarities of a resume this engine
    made for ``order`` (:class:`StaleResume` for any other)."""
    if len(after) < _RESUME.size:
        raise StaleResume("the cursor's place is none this index made")
    raw_mode, highest, rank, first, second, third, since = _RESUME.unpack(after[: _RESUME.size])
    rarity = after[_RESUME.size :]
    if raw_mode not in Mode.__members__.values() or Mode(raw_mode) not in _MODES[order]:
        raise StaleResume("the cursor's place is of another order")
    mode = Mode(raw_mode)
    if mode in (Mode.RANKED, Mode.RARE) and query.rank is None:
        raise StaleResume("the cursor's place is of a ranked search")
    if len(rarity) != (len(query.terms) if mode is Mode.RARE else 0):
        raise StaleResume("the cursor's place is none this index made")
    return mode, highest, (rank, first, second, third), since, rarity


def _ids_at(conn: Scoped, places: Sequence[Place]) -> list[int]:
    """The rows of ``places`` the index still holds, in that order."""
    rows = conn.execute(
        "SELECT p.ord, m.id FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS p(name, uid, ord) "
        "JOIN folders f ON f.name = p.name JOIN messages m ON m.folder = f.id AND m.uid = p.uid ORDER BY p.ord",
        ([place.folder for place in places], [place.uid for place in places]),
    ).fetchall()
    return [int(row[1]) for row in rows]


def _still_matching(conn: Scoped, query: PgQuery, ids: list[int]) -> list[int]:
    if not ids:
        return []
    found = {
        int(row[0])
        for row in conn.execute(
            f"SELECT m.id FROM messages m WHERE m.id = ANY(%s) AND ({query.where})", [ids, *query.params]
        )
    }
    return [row_id for row_id in ids if row_id in found]


def rows_of(conn: Scoped, ids: list[int], ranks: list[float]) -> list[Hit]:
    """The hits of the rows ``ids`` (with their ``ranks``), in that order."""
    if not ids:
        return []
    by_id = {
        int(row[0]): row[1:]
        for row in conn.execute(
            f"SELECT {_HIT_COLUMNS} FROM messages m JOIN folders f ON f.id = m.folder WHERE m.id = ANY(%s)",
            (ids,),
        )
    }
    hits = []
    for row_id, rank in zip(ids, ranks, strict=True):
        if row_id not in by_id:
            continue
        name, uidvalidity, uid, sent, doc, bits, keywords, size, attached, labels, arrival = by_id[row_id]
        texts, kept = unpack_doc(bytes(doc))
        hits.append(
            Hit(
                str(name),
                int(uidvalidity),
                int(uid),
                rank,
                int(sent),
                tuple(texts),
                (*flag_names(int(bits)), *str(keywords).split()),
                int(size),
                bool(attached),
                tuple(str(labels).split("\n")) if labels else (),
                arrival=int(arrival),
                kept=kept,
            )
        )
    return hits
