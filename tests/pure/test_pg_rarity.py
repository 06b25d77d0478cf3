"""Which words a PostgreSQL search weighs by their rarity (``index/engines/postgresql/rarity.py``), and the
byte each rarity is kept in, without a server: the compiled query's terms and BM25's weight."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mail_imap_mcp.index.engines.postgresql.query import RARE_TERMS, PgCompiler
from mail_imap_mcp.index.engines.postgresql.rarity import STEPS, coded, scan_estimate, weighed_score
from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, HasFlag

compile_pg = PgCompiler(Tokenizer()).compile


def words(*asked: str) -> AnyOf:
    return AnyOf(tuple(Contains("text", word) for word in asked))


def test_two_to_sixteen_words_or_phrases_are_weighed_each_once() -> None:
    assert compile_pg(Contains("text", "landlord")).terms == ()  # one word: its rarity orders nothing
    assert len(compile_pg(words("landlord", "heating")).terms) == 2
    assert len(compile_pg(words("landlord", "heating", "Landlord")).terms) == 2  # the same word once
    phrase = compile_pg(AnyOf((Contains("text", "heating bill"), Contains("subject", "rent")))).terms
    assert len(phrase) == 2 and "<->" in phrase[0] and phrase[1].count("/rent") == 1
    many = [f"word{at}" for at in range(RARE_TERMS + 1)]
    assert len(compile_pg(words(*many[:RARE_TERMS])).terms) == RARE_TERMS
    assert compile_pg(words(*many)).terms == ()  # more: ts_rank of them all, as one


def test_only_the_ranked_text_is_weighed() -> None:
    query = AllOf((words("landlord", "heating"), HasFlag("flagged", True)))
    assert len(compile_pg(query).terms) == 2
    assert compile_pg(HasFlag("flagged", True)).terms == ()


def test_a_rarity_is_bm25_s_weight_in_sixteenths_within_a_byte() -> None:
    assert coded(100_000, 5) == round(math.log(1 + (100_000 - 5 + 0.5) / 5.5) * STEPS)
    assert coded(100_000, 77_485) < coded(100_000, 4_151) < coded(100_000, 5)
    assert coded(100_000, 100_000) == round(math.log(1 + 0.5 / 100_000.5) * STEPS) == 0
    assert coded(10**12, 0) == 255  # past a byte: held at its top


def test_a_score_needs_a_rarity_for_each_word() -> None:
    terms = compile_pg(words("landlord", "heating")).terms
    weighed = weighed_score("{0.1, 0.2, 0.4, 1.0}", terms, bytes([40, 4]))
    assert weighed.params == list(terms) and weighed.score.endswith("::real")
    assert "w.r0" in weighed.score and "w.r1" in weighed.score and "OFFSET 0" in weighed.ranks
    with pytest.raises(ValueError, match="a rarity for each word"):
        weighed_score("{0.1, 0.2, 0.4, 1.0}", terms, bytes([40]))


def _plan(node_type: str, *children: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"Node Type": node_type, **fields, **({"Plans": list(children)} if children else {})}


def test_a_count_s_estimate_is_its_scan_s_and_a_parallel_scan_s_is_multiplied_back() -> None:
    """The plans ``EXPLAIN (FORMAT JSON)`` gives a count: a parallel scan estimates each process's rows
    (PostgreSQL divides by 2.4 for two workers and the leader)."""
    index = _plan("Bitmap Index Scan", **{"Index Name": "messages_terms_idx", "Plan Rows": 78_419})
    heap = _plan("Bitmap Heap Scan", index, **{"Relation Name": "messages", "Plan Rows": 78_419})
    assert scan_estimate(_plan("Aggregate", heap)) == 78_419
    parallel = _plan(
        "Bitmap Heap Scan",
        index,
        **{"Relation Name": "messages", "Plan Rows": 32_675, "Parallel Aware": True},
    )
    gathered = _plan("Gather", _plan("Aggregate", parallel), **{"Workers Planned": 2})
    assert scan_estimate(_plan("Aggregate", gathered)) == round(32_675 * 2.4)
    limited = _plan(
        "Subquery Scan", _plan("Limit", _plan("Seq Scan", **{"Relation Name": "messages", "Plan Rows": 9}))
    )
    assert scan_estimate(_plan("Aggregate", limited)) == 9
