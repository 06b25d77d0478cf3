"""How rare each asked word is, for a ranked search of several in PostgreSQL (BM25's idea).

PostgreSQL's text search keeps no corpus statistics: ``ts_rank`` weighs a message's own lexemes alone, so a
search of "landlord heating" put a message saying "heating" three times above one saying "landlord" once,
however few messages name a landlord. A ranked search of two to :data:`~.query.RARE_TERMS` words or phrases
(:attr:`~.query.PgQuery.terms`) weighs each by its BM25 rarity, ``ln(1 + (N - n + 0.5) / (n + 0.5))``: ``N``
the messages stored, ``n`` those holding it, counted up to :data:`COUNTED` (past that a word is common
whatever its count, and the count stops). A message's score is the sum, over the words it holds, of each
word's rarity times ``r / (r + SATURATION)``, ``r`` its ``ts_rank`` of that word: a word counts once by its
rarity, and where it stands (the subject above the body) and how often move it by a little (as BM25's
saturation, nearly at once).

The rarities are found once, at a search's first page (one statement), and kept in its cursor as a byte
each (sixteenths, :func:`coded`): every later page ranks by the same weights, so a row's score, and its
key, never change while the cursor pages, whatever mail arrives or goes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mail_imap_mcp.index.engines.postgresql.counts import Scoped

#: The most messages counted holding a word: a word in more weighs as one in this many.
COUNTED = 10_000
#: ``r / (r + SATURATION)``: how soon a word's ``ts_rank`` stops adding (measured: 0.001 found the English
#: keywords' mail as SQLite's BM25 does, 0.05 less, ``docs/search.md``).
SATURATION = 0.001
#: A rarity's steps in its cursor's byte.
STEPS = 16


def coded(stored: int, holding: int) -> int:
    """BM25's rarity of a word ``holding`` of ``stored`` messages hold, in sixteenths, as a byte."""
    rarity = math.log(1 + (stored - holding + 0.5) / (holding + 0.5))
    return max(0, min(255, round(rarity * STEPS)))


def rarities(conn: Scoped, terms: Sequence[str]) -> bytes:
    """Each of ``terms``' rarity as a byte (:func:`coded`), found in one statement."""
    counted = ", ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM messages m WHERE m.terms @@ %s::tsquery LIMIT {COUNTED}) s)"
        for _ in terms
    )
    row = conn.execute(
        f"SELECT (SELECT coalesce(sum(messages), 0) FROM folders), {counted}", list(terms)
    ).fetchone()
    assert row is not None
    stored = max(int(row[0]), 1)
    return bytes(coded(stored, int(holding)) for holding in row[1:])


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
