"""How rare each asked word is, for a ranked search of several in PostgreSQL (BM25's idea).

PostgreSQL's text search keeps no corpus statistics: ``ts_rank`` weighs a message's own lexemes alone, so a
search of "landlord heating" put a message saying "heating" three times above one saying "landlord" once,
however few messages name a landlord. A ranked search of two to :data:`~.query.RARE_TERMS` words or phrases
(:attr:`~.query.PgQuery.terms`) weighs each by its BM25 rarity, ``ln(1 + (N - n + 0.5) / (n + 0.5))``: ``N``
the messages stored, ``n`` those holding it. A message's score is the sum, over the words it holds, of each
word's rarity times ``r / (r + SATURATION)``, ``r`` its ``ts_rank`` of that word: a word counts once by its
rarity, and where it stands (the subject above the body) and how often move it by a little (as BM25's
saturation, nearly at once).

``n`` is first the planner's estimate (one ``EXPLAIN`` of every word's count: the statistics ``ANALYZE``
keeps of the lexemes most messages hold), near for a common word (78,419 for 77,485 at 100,000 messages),
whose count would cost a page more than ranking it (the GIN index builds a bitmap of all its messages, 11
ms for 77,000). A word the estimate does not call common (in :data:`COMMON` of the messages and
:data:`COUNTED` or more) is counted, up to :data:`COUNTED` messages (one statement for them all, a few rows
each), its estimate kept where it holds more: a rare word's estimate is no better than the statistics'
least frequency (4,889 for a word in none), and without statistics (a new index) every word is counted.

The rarities are found once, at a search's first page, and kept in its cursor as a byte each
(sixteenths, :func:`coded`): every later page ranks by the same weights, so a row's score, and its key,
never change while the cursor pages, whatever mail arrives or goes, or the statistics say.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mail_imap_mcp.index.engines.postgresql.counts import Scoped

#: The share of the messages from which the planner's estimate of a word's messages is taken as it is.
COMMON = 0.1
#: The most messages counted holding a word the estimate does not call common.
COUNTED = 1_000
#: ``r / (r + SATURATION)``: how soon a word's ``ts_rank`` stops adding (measured: 0.001 found the English
#: keywords' mail as SQLite's BM25 does, 0.05 less, ``docs/search.md``).
SATURATION = 0.001
#: A rarity's steps in its cursor's byte.
STEPS = 16


def coded(stored: int, holding: int) -> int:
    """BM25's rarity of a word ``holding`` of ``stored`` messages hold, in sixteenths, as a byte."""
    rarity = math.log(1 + (stored - holding + 0.5) / (holding + 0.5))
    return max(0, min(255, round(rarity * STEPS)))


def rarities(conn: Scoped, terms: Sequence[str], stored: int) -> bytes:
    """Each of ``terms``' rarity as a byte (:func:`coded`) among ``stored`` messages: estimated, then
    counted where not common."""
    estimated = estimates(conn, terms)
    counted = [at for at, rows in enumerate(estimated) if rows < max(COMMON * stored, COUNTED)]
    holding = list(estimated)
    if counted:
        found = conn.execute(
            f"SELECT {_each(len(counted), f'LIMIT {COUNTED}')}", [terms[at] for at in counted]
        ).fetchone()
        assert found is not None
        for at, rows in zip(counted, found, strict=True):
            holding[at] = int(rows) if rows < COUNTED else max(COUNTED, estimated[at])
    return bytes(coded(max(stored, 1), rows) for rows in holding)


def _each(words: int, limit: str = "") -> str:
    """A count of the messages holding each of ``words`` words (each a parameter), as columns of a row."""
    return ", ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM messages m WHERE m.terms @@ %s::tsquery {limit}) s)"
        for _ in range(words)
    )


def estimates(conn: Scoped, terms: Sequence[str]) -> list[int]:
    """The planner's estimate of the messages holding each of ``terms``: each count's scan's rows, in the
    order of the counts (their subplans are numbered so)."""
    (plan,) = conn.execute(f"EXPLAIN (FORMAT JSON) SELECT {_each(len(terms))}", list(terms)).fetchone() or (
        None,
    )
    subplans = plan[0]["Plan"].get("Plans", []) if plan else []
    found = sorted(
        (int("".join(filter(str.isdigit, part["Subplan Name"].split("(")[0]))), scan_estimate(part))
        for part in subplans
        if part.get("Subplan Name")
    )
    if len(found) != len(terms):
        raise ValueError(f"the plan counts {len(found)} of {len(terms)} words")
    return [rows for _, rows in found]


def scan_estimate(node: dict[str, Any]) -> int:
    """The rows the scan under a count's plan is expected to find: a parallel scan's estimate is each
    process's, so it is multiplied back by the planner's divisor (its workers, and the leader's share)."""
    divisor = 1.0
    while node.get("Plans") and not node.get("Relation Name"):
        if node.get("Node Type") in ("Gather", "Gather Merge"):
            workers = int(node.get("Workers Planned", 0))
            divisor = workers + max(0.0, 1.0 - 0.3 * workers)  # PostgreSQL's get_parallel_divisor
        node = node["Plans"][0]
    rows = float(node["Plan Rows"])
    return round(rows * divisor) if node.get("Parallel Aware") else round(rows)


@dataclass(frozen=True)
class Weighed:
    """A message's score under its words' rarities, as SQL: ``ranks`` joins each word's ``ts_rank`` once
    a message (``w.r0``, ``w.r1``...; ``OFFSET 0`` keeps PostgreSQL from folding it into the score, where
    each would be computed twice), ``params`` its parameters, ``score`` the sum (``real``)."""

    ranks: str
    params: list[object]
    score: str


def weighed_score(weights: str, terms: Sequence[str], codes: bytes) -> Weighed:
    """The score of a message under ``codes``, the rarities of ``terms``, each ranked by ``ts_rank`` with
    ``weights``."""
    ranks = ", ".join(f"ts_rank('{weights}', m.terms, %s::tsquery) AS r{at}" for at in range(len(terms)))
    parts = [f"{code / STEPS!r} * (w.r{at} / (w.r{at} + {SATURATION!r}))" for at, code in enumerate(codes)]
    if len(parts) != len(terms):
        raise ValueError("a rarity for each word")
    return Weighed(
        f"CROSS JOIN LATERAL (SELECT {ranks} OFFSET 0) AS w", list(terms), f"({' + '.join(parts)})::real"
    )
