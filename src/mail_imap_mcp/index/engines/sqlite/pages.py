"""A page of the SQLite index: the SQL of a query's count, its order and its rows, run on a read connection.

Ranked (``relevance``), every match is scored (:mod:`.ranking`). Every other order is the
server's own, so a page is the same whichever answers: ``arrival`` newest INTERNALDATE first, then the
folder's place in the searched list, then UID ascending (a search of several mailboxes,
docs/search.md); ``uid`` the highest UID first (one mailbox in arrival order); ``date`` the newest sent
date first, then as ``arrival`` (never the row id: a build's order of rows is no order of the server's).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from functools import partial

from mail_imap_mcp.index.engines.sqlite.flag_index import counted
from mail_imap_mcp.index.engines.sqlite.query import Fts5Query, folder_column, in_places
from mail_imap_mcp.index.engines.sqlite.ranking import (
    Ranker,
    Then,
    weighs_nothing,
    weighs_nothing_uncounted,
)
from mail_imap_mcp.index.store import (
    COLUMN_WEIGHTS,
    UNCOUNTED,
    Hit,
    HitPage,
    Order,
    PageAsk,
    Place,
    done,
    flag_names,
    unpack_doc,
)

#: BM25 with the columns' weights, called as a function (as FTS5's ``rank`` column it took twice as long).
_BM25 = f"bm25(fts, {', '.join(str(w) for w in (*COLUMN_WEIGHTS, 0.0))})"  # the place weighs nothing
_HIT_COLUMNS = (
    "f.name, f.uidvalidity, m.uid, 0.0, m.sent, m.doc, m.flag_bits, m.keywords, m.size, m.has_attachment, "
    "m.labels, m.arrival"
)


def page_task(
    stored: Sequence[tuple[str, int, int]], ranker: Ranker, query: Fts5Query, ask: PageAsk
) -> Callable[[sqlite3.Connection], tuple[HitPage, Then]]:
    """The work of the page ``ask`` of ``query`` (its folders in the search's order), to run on a read
    connection (:meth:`Ranker.submit`); ``stored``: every folder's (name, id, messages). The places of
    its first ``keep`` matches are found after it is handed over, on the same snapshot (its
    :attr:`~.store.HitPage.places`): their look-up costs the page nothing, and their ranking what
    :data:`RANK_KEPT_AFTER` says."""
    folders, order, limit, offset = list(ask["folders"]), ask["order"], ask["limit"], ask["offset"]
    keep, places = ask.get("keep", 0), ask.get("places")
    wanted = set(folders)
    searched = {folder: count for name, folder, count in stored if name in wanted}
    others = {folder: count for name, folder, count in stored if name not in wanted}
    if not searched:
        return lambda db: (HitPage([], 0, folders, places=done([]) if keep else None), None)
    ordered = order in ("arrival", "uid", "date")  # the key is the message row's: it is joined
    if query.match is not None:
        # The folders are words of the place column: the MATCH names the searched ones, or the
        # others where they hold fewer messages (FTS5's cost follows the lists it merges).
        match = query.match
        if others:
            excluded = sum(others.values()) < sum(searched.values())
            match = in_places(match, others if excluded else searched, excluded=excluded)
        source, condition = "fts", "fts MATCH ?"
        params: list[object] = [match]
        if query.where != "1" or ordered:  # FTS5 drives (CROSS JOIN keeps the order): its matches are fewer
            source = "fts CROSS JOIN messages m ON m.id = fts.rowid"
            condition = f"fts MATCH ? AND ({query.where})"
            params = [match, *query.params]
        row_id = "fts.rowid"
    else:
        source = "messages m"
        held = sum(searched.values()) + sum(others.values())
        # With no condition the folders' index answers alone (it holds them): no row is looked up.
        column = (
            "m.folder" if query.where == "1" else folder_column(sum(searched.values()), held, query.flagged)
        )
        condition = f"{column} IN ({', '.join('?' for _ in searched)}) AND ({query.where})"
        params = [*searched, *query.params]
        row_id = "m.id"
    count_sql = f"SELECT count(*) FROM {source} WHERE {condition}"
    total_stored = sum(searched.values()) + sum(others.values())
    order_by, order_params = _order_by(order, query.match is not None, folders, stored)
    listed = f"SELECT {row_id} FROM {source} WHERE {condition} ORDER BY {order_by} LIMIT ? OFFSET ?"
    ranked = order == "relevance" and query.match is not None
    shard_sql = (
        f"SELECT {_BM25} AS rank, fts.rowid FROM {source} WHERE {condition} "
        "AND fts.rowid BETWEEN ? AND ? ORDER BY rank, fts.rowid DESC LIMIT ?"
    )
    matching = f"SELECT {row_id} FROM {source} WHERE {condition} AND {row_id} IN "

    # Where no total is read, an OR whose every phrase is in most messages is not counted either.
    uncounted = ask.get("uncounted", False) and ranked and not keep and places is None
    outside = sum(others.values())
    # Whether at most ``limit`` match: any ``limit + 1`` of them, neither counted nor sorted.
    bounded = ask.get("bounded", False) and not keep and places is None and offset == 0
    some_sql = f"SELECT {row_id} FROM {source} WHERE {condition} LIMIT ?"

    def page(db: sqlite3.Connection) -> tuple[HitPage, Then]:
        if bounded:
            some = [row[0] for row in db.execute(some_sql, [*params, limit + 1])]
            return HitPage(rows_of(db, some[:limit], [0.0] * len(some[:limit])), len(some), folders), None
        in_most = partial(_in_most, db, total_stored)
        weightless = False
        told = weighs_nothing_uncounted(query, total_stored, outside, in_most) if uncounted else None
        if query.match is None and query.flag_values is not None:  # flags alone: the file's counts say
            total = counted(db, list(searched), query.flag_values)
        elif told is not None:
            weightless = told
            total = UNCOUNTED if weightless else int(db.execute(count_sql, params).fetchone()[0])
        else:
            total = int(db.execute(count_sql, params).fetchone()[0])
            weightless = ranked and places is None and weighs_nothing(query, total, total_stored, in_most)
        if places is not None:
            ids = _still_matching(db, matching, params, _ids_at(db, places, folders))
            return HitPage(rows_of(db, ids, [0.0] * len(ids)), total, folders), None
        by_rank = ranked and not weightless
        ranked_first: list[int] | None = None  # the first ``keep`` matches, when ranked with the page
        if by_rank:
            rank_kept_now = keep and not RANK_KEPT_AFTER
            best = max(offset + limit, keep) if rank_kept_now else offset + limit
            pairs = ranker.rank(db, shard_sql, params, matches=total, stored=total_stored, best=best)
            chosen = pairs[offset : offset + limit]
            ids, ranks = [row for _, row in chosen], [rank for rank, _ in chosen]
            ranked_first = [row for _, row in pairs[:keep]] if rank_kept_now else None
        else:
            ids = [row[0] for row in db.execute(listed, [*params, *order_params, limit, offset])]
            ranks = [0.0] * len(ids)
        found = HitPage(
            rows_of(db, ids, ranks), total, folders, unweighted=ranked and ids != [] and not any(ranks)
        )
        if not keep:
            return found, None
        kept: Future[list[Place]] = Future()
        found.places = kept
        if offset + len(ids) >= total:  # no page follows
            kept.set_result(places_of(db, ids[:keep]))
            return found, None

        def keep_places() -> None:
            """The first ``keep`` matches' places, found after the page is handed over, on its snapshot:
            the page's own order (the first of them are the page's rows), off its critical path."""
            try:
                if ranked_first is not None:
                    first = ranked_first
                elif by_rank:
                    pairs = ranker.rank(db, shard_sql, params, matches=total, stored=total_stored, best=keep)
                    first = [row for _, row in pairs[:keep]]
                else:
                    first = [row[0] for row in db.execute(listed, [*params, *order_params, keep, 0])]
                kept.set_result(places_of(db, first))
            except BaseException as exc:
                kept.set_exception(exc)
                raise

        return found, keep_places

    return page


#: Whether a ranked first page ranks its 20 alone and the first ``keep`` matches again after it is handed
#: over (True: the page waits for no more than its own ranking; the whole ranking is done twice), or
#: ranks the ``keep`` with it (False: the page waits for the larger top-k, 5-7 ms more over 41,000
#: matches of a million messages; nothing is ranked twice). Either way their places are looked up after.
#: docs/benchmarks.md (issue 51, item 3) has both measured.
RANK_KEPT_AFTER = False

#: Rows named in one statement at most (SQLite's bound on parameters is 32,766 since 3.32, 999 before).
_CHUNK = 400


def _in_most(db: sqlite3.Connection, stored: int, phrase: str) -> bool:
    """Whether ``phrase`` (a MATCH expression) matches more than half the ``stored`` messages of the whole
    index, as BM25 counts them: its matches walked up to that half and no further, uncounted (a third
    less CPU than a count)."""
    sql = "SELECT rowid FROM fts WHERE fts MATCH ? LIMIT 1 OFFSET ?"
    return db.execute(sql, (phrase, stored // 2)).fetchone() is not None


def places_of(db: sqlite3.Connection, ids: list[int]) -> list[Place]:
    """The place (folder, UID, INTERNALDATE, size) of each of the rows ``ids``, in that order."""
    found: dict[int, Place] = {}
    for first in range(0, len(ids), _CHUNK):
        chunk = ids[first : first + _CHUNK]
        found.update(
            (row_id, Place(name, uid, arrival, size))
            for row_id, name, uid, arrival, size in db.execute(
                "SELECT m.id, f.name, m.uid, m.arrival, m.size FROM messages m JOIN folders f ON f.id = m.folder "
                f"WHERE m.id IN ({', '.join('?' for _ in chunk)})",
                chunk,
            )
        )
    return [found[row_id] for row_id in ids if row_id in found]


def _ids_at(db: sqlite3.Connection, places: Sequence[Place], folders: Sequence[str]) -> list[int]:
    """The rows of ``places`` the index still holds, in that order; where a place is gone, the row of a
    message filed meanwhile in one of ``folders`` with its INTERNALDATE and size, at none of ``places``
    (a move keeps both: the message listed at its new place). The caller drops one kept elsewhere."""
    ids: list[int] = []
    at = {(place.folder, place.uid) for place in places}
    for place in places:
        row = db.execute(
            "SELECT m.id FROM messages m JOIN folders f ON f.id = m.folder WHERE f.name = ? AND m.uid = ?",
            (place.folder, place.uid),
        ).fetchone()
        if row is None and place.arrival:
            moved = db.execute(
                "SELECT m.id, f.name, m.uid FROM messages m JOIN folders f ON f.id = m.folder WHERE "
                f"m.arrival = ? AND m.size = ? AND f.name IN ({', '.join('?' for _ in folders)}) ORDER BY m.id",
                (place.arrival, place.size, *folders),
            ).fetchall()
            row = next(
                (found for found in moved if (found[1], found[2]) not in at and found[0] not in ids), None
            )
        if row is not None:
            ids.append(int(row[0]))
    return ids


def _still_matching(db: sqlite3.Connection, matching: str, params: list[object], ids: list[int]) -> list[int]:
    """Those of ``ids`` the query still matches (``matching``: its rows among a list that follows), in
    that order."""
    if not ids:
        return []
    found = {row[0] for row in db.execute(f"{matching}({', '.join('?' for _ in ids)})", [*params, *ids])}
    return [row_id for row_id in ids if row_id in found]


def _order_by(
    order: Order, matched: bool, folders: list[str], stored: Sequence[tuple[str, int, int]]
) -> tuple[str, list[object]]:
    """The ORDER BY of a page listed in ``order`` (relevance past ranking: newest sent date first), and
    its parameters."""
    if order == "uid":
        return "m.uid DESC", []
    if order in ("arrival", "date"):  # the server's order: ties by the folder's place, then UID
        ids = {name: folder for name, folder, _ in stored}
        places = [(ids[name], place) for place, name in enumerate(folders) if name in ids]
        cases = " ".join("WHEN ? THEN ?" for _ in places)
        key = "m.arrival" if order == "arrival" else "m.sent"
        return f"{key} DESC, CASE m.folder {cases} END, m.uid", [n for pair in places for n in pair]
    return ("fts.rowid DESC" if matched else "m.sent DESC, m.id DESC"), []


def rows_of(db: sqlite3.Connection, ids: list[int], ranks: list[float]) -> list[Hit]:
    """The hits of the rows ``ids`` (with their ``ranks``), in that order."""
    if not ids:
        return []
    found = db.execute(
        f"SELECT m.id, {_HIT_COLUMNS} FROM messages m JOIN folders f ON f.id = m.folder "
        f"WHERE m.id IN ({', '.join('?' for _ in ids)})",
        ids,
    ).fetchall()
    by_id = {row[0]: row[1:] for row in found}
    return [
        replace(_hit(by_id[row_id]), rank=rank)
        for row_id, rank in zip(ids, ranks, strict=True)
        if row_id in by_id
    ]


def _hit(row: tuple[object, ...]) -> Hit:
    name, uidvalidity, uid, rank, sent, doc, bits, keywords, size, attached, labels, arrival = row
    assert isinstance(doc, bytes) and isinstance(bits, int) and isinstance(keywords, str)
    assert isinstance(labels, str)
    flags = (*flag_names(bits), *keywords.split())
    texts, kept = unpack_doc(doc)
    return Hit(
        str(name),
        int(uidvalidity),  # type: ignore[call-overload]
        int(uid),  # type: ignore[call-overload]
        float(rank),  # type: ignore[arg-type]
        int(sent),  # type: ignore[call-overload]
        tuple(texts),
        flags,
        int(size),  # type: ignore[call-overload]
        bool(attached),
        tuple(labels.split("\n")) if labels else (),
        arrival=int(arrival),  # type: ignore[call-overload]
        kept=kept,
    )
