"""A page's best matches from Tantivy, exactly: by score, equal scores by newest row id first (the order
SQLite's pages break ties in), whatever order Tantivy gives equal scores.

Tantivy's top ``n`` (its collector skips blocks whose best possible score cannot enter it, block-max
WAND) holds every match scoring above the ``n``-th's score, in some order among equal scores. So the
best ``k`` are certain once the ``k``-th kept scores above the last read; when it ties the last read (the
page's edge falls inside a run of equal scores, as every message of one sender scores alike), the run's
newest are looked for among the newest stored rows (row ids follow sent dates: a range of the ``id``
field, its bound from SQLite), scored by the query limited to them: where the run is dense (one sender's
messages) they hold the page. Their scores are checked against the scores the top ``n`` gave for a few
of the same rows (the same sum, or the look is left). Otherwise (a small run scattered among many
matches) the page is read in growing rounds, which is exact at the cost of reading the whole run.

``passing``: where the query has conditions SQLite checks (:mod:`.store`), which of a list of rows
pass them; rows that do not are skipped, and the rounds stop at :data:`READ_MOST` rows (None: SQLite
ranks the page instead).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tantivy

from mail_imap_mcp.index.engines.tantivy.query import ID_FIELD

#: Ranked rows read at most for a page whose query has conditions SQLite checks (then FTS5 ranks it).
READ_MOST = 20_000
#: The newest stored rows the look into a run of equal scores scores (at least; 32 for each row it needs:
#: a page that needs more than :data:`_WINDOW_MOST` / 32 from the run reads it in rounds).
_WINDOW = 4_096
_WINDOW_MOST = 16_384
#: How many times more rows each round reads than the last: a round over many matches costs about the
#: same whatever it reads (Tantivy scores the blocks it cannot skip), so few rounds are cheaper.
_GROWTH = 8
#: Rows a round reads before the look into a run is tried: it reads every match's id (a cost that grows
#: with the matches), a round only the best (a cost that grows with the run), and most runs are short.
_WALK_AFTER = 250
#: Rows read beyond a page's own in the first round.
_MARGIN = 16
#: Rows of the first round's whose scores each walk step checks again.
_CHECKED = 8

Ranked = list[tuple[float, int]]
Passing = Callable[[list[int]], set[int]]
#: The lowest row id of the newest ``n`` stored rows (0: there are fewer).
Newest = Callable[[int], int]


def best_matches(
    searcher: Any, schema: Any, text: Any, best: int, passing: Passing | None, newest: Newest
) -> Ranked | None:
    """The best ``best`` (score, row id) pairs of the matches of ``text`` that ``passing`` keeps (None:
    every one), by score, equal scores by newest row id first; None when a filtered page needed more
    than :data:`READ_MOST` rows read."""
    wanted = best + _MARGIN if passing is None else max(best * 4, 200)
    walked = False
    while True:
        hits = searcher.search(text, wanted, count=False).hits
        ids = searcher.fast_field_values(ID_FIELD, [address for _, address in hits])
        read = [(float(score), int(row)) for (score, _), row in zip(hits, ids, strict=True)]
        pairs = read
        if passing is not None:
            kept = passing([row for _, row in read])
            pairs = [pair for pair in read if pair[1] in kept]
        pairs.sort(key=lambda pair: (-pair[0], -pair[1]))
        if len(hits) < wanted:  # every match read
            return pairs[:best]
        floor = read[-1][0]  # no row not read scores above it
        if best == 0 or (len(pairs) >= best and pairs[best - 1][0] > floor):
            return pairs[:best]
        if len(pairs) >= best and not walked and wanted >= _WALK_AFTER:  # the edge may be in a long run
            walked = True
            found = _through_the_run(searcher, schema, text, read, pairs, best, floor, passing, newest)
            if found is not None:
                return found
        if passing is not None and wanted >= READ_MOST:
            return None
        wanted *= _GROWTH


def _through_the_run(
    searcher: Any,
    schema: Any,
    text: Any,
    read: Ranked,
    pairs: Ranked,
    best: int,
    floor: float,
    passing: Passing | None,
    newest: Newest,
) -> Ranked | None:
    """The best ``best``: those of ``pairs`` above ``floor``, then the newest of the run of matches
    scoring ``floor``, found among the newest stored rows (None: too few of them are in the run, or their
    scores were not the top's)."""
    above = [pair for pair in pairs if pair[0] > floor]
    known_above = {row for score, row in read if score > floor}
    checked = {row: score for score, row in read[-_CHECKED:]}
    needed = best - len(above)
    window = max(_WINDOW, 32 * needed)
    if window > _WINDOW_MOST:
        return None
    bound = newest(window)  # every row id from it on is one of the newest ``window`` rows
    recent = tantivy.Query.range_query(schema, ID_FIELD, tantivy.FieldType.Unsigned, lower_bound=bound)
    checks = tantivy.Query.term_set_query(schema, ID_FIELD, list(checked))
    only = tantivy.Query.boolean_query([(tantivy.Occur.Should, recent), (tantivy.Occur.Should, checks)])
    scores = _scores_of(searcher, text, only, window + len(checked))
    if any(scores.get(row) != score for row, score in checked.items()):
        return None  # not the same sum as the top's: the rounds read the run instead
    run = []
    for row in sorted((row for row in scores if row >= bound), reverse=True):  # newest first
        score = scores[row]
        if score > floor and row not in known_above:
            return None
        if score == floor:
            run.append(row)
    if passing is not None and run:
        kept = passing(run)
        run = [row for row in run if row in kept]
    if len(run) < needed:
        return None  # the run is sparse among the newest rows: the rounds read it
    return above + [(floor, row) for row in run[:needed]]


def _scores_of(searcher: Any, text: Any, rows: Any, most: int) -> dict[int, float]:
    """The score ``text`` gives each of the rows the query ``rows`` matches (at most ``most``)."""
    only = tantivy.Query.const_score_query(rows, 0.0)
    limited = tantivy.Query.boolean_query([(tantivy.Occur.Must, text), (tantivy.Occur.Must, only)])
    hits = searcher.search(limited, most, count=False).hits
    ids = searcher.fast_field_values(ID_FIELD, [address for _, address in hits])
    return {int(row): float(score) for (score, _), row in zip(hits, ids, strict=True)}
