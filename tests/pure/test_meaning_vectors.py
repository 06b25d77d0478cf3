"""Vectors as the index keeps them (int8 rows, sign-bit signatures in memory) and the two-pass nearest:
the quantised cosine agrees with the float one, the signatures are the signs, the copy in memory adds,
removes and filters by folder and message, and the two passes find what an exact float ranking finds,
on random vectors and on the shipped model's vectors of real text (the project's own docs)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mail_imap_mcp.meaning import hamming
from mail_imap_mcp.meaning import vectors as meaning_vectors
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from mail_imap_mcp.meaning.vectors import (
    Signatures,
    cosines,
    exact,
    large_bits,
    quantised,
    signatures,
    two_pass,
    unit,
)

ROOT = Path(__file__).resolve().parents[2]


def units(rng: np.random.Generator, count: int, dimensions: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((count, dimensions)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def clustered(rng: np.random.Generator, count: int, dimensions: int, topics: int) -> npt.NDArray[np.float32]:
    """Unit vectors around ``topics`` centres (mail is about few things), each centre's spread its own."""
    centres = units(rng, topics, dimensions)
    which = rng.integers(0, topics, count)
    spread = rng.uniform(0.6, 1.6, topics)[which, None]
    rows = centres[which] + spread * units(rng, count, dimensions) / np.sqrt(2)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_int8_rows_keep_the_cosine_and_a_row_of_zeros_stays_one() -> None:
    rng = np.random.default_rng(1)
    rows = units(rng, 200, 256)
    query = units(rng, 1, 256)[0]
    kept = quantised(np.vstack([rows, np.zeros((1, 256), np.float32)]))
    assert kept.dtype == np.int8 and kept.shape == (201, 256)
    assert (np.abs(kept[:200]).max(axis=1) == 127).all()
    assert not kept[200].any()
    found = cosines(query, kept)
    assert np.abs(found[:200] - rows @ query).max() < 0.01
    assert found[200] == 0.0


def test_signatures_are_the_signs_in_64_bit_words_padded() -> None:
    rng = np.random.default_rng(2)
    rows = rng.standard_normal((5, 100)).astype(np.float32)
    words = signatures(rows)
    assert words.dtype == np.uint64 and words.shape == (5, 2)
    bits = np.unpackbits(words.view(np.uint8), axis=1)[:, :100]
    assert (bits == (rows > 0)).all()
    assert not np.unpackbits(words.view(np.uint8), axis=1)[:, 100:].any()
    kept = quantised(rows)  # the int8 rows keep the signs, but of components that round to 0
    assert (signatures(kept) == signatures(np.where(kept != 0, rows, 0))).all()


def test_the_copy_in_memory_adds_removes_and_filters_by_folder_and_message() -> None:
    rng = np.random.default_rng(3)
    rows = units(rng, 12, 128)
    held = Signatures(2)
    ids = np.arange(100, 112, dtype=np.int64)
    groups = np.array([1, 2] * 6, dtype=np.int32)
    held.add(ids[:6], groups[:6], signatures(rows[:6]), large_bits(rows[:6]))
    held.add(ids[6:], groups[6:], signatures(rows[6:]), large_bits(rows[6:]))
    assert len(held) == 12
    target = rows[7]
    assert held.first_pass(target, None, 1).tolist() == [107]  # its own signature: distance 0
    in_folder_1 = held.candidates([1], None)
    assert in_folder_1 is not None
    assert set(held.first_pass(target, in_folder_1, 12).tolist()) == set(ids[groups == 1].tolist())
    among = held.candidates(None, np.array([101, 105, 999], dtype=np.int64))
    assert set(held.first_pass(target, among, 12).tolist()) == {101, 105}
    held.remove([107, 108, 109])  # a quarter gone: compacted
    assert len(held) == 9
    assert 107 not in held.first_pass(target, None, 12).tolist()
    assert set(held.first_pass(target, held.candidates([2], None), 12).tolist()) == {101, 103, 105, 111}
    held.remove([100])
    assert len(held) == 8 and 100 not in held.first_pass(target, None, 12).tolist()


def test_passages_without_their_large_components_are_refused_where_sizes_are_held() -> None:
    """A guard, not an assert (gone under ``python -O``): nothing is added, the copy stays whole."""
    rows = units(np.random.default_rng(5), 3, 128)
    held = Signatures(2)
    with pytest.raises(ValueError, match="large components"):
        held.add(np.arange(3, dtype=np.int64), np.zeros(3, dtype=np.int32), signatures(rows), None)
    assert len(held) == 0
    signs_only = Signatures(2, sizes=False)
    signs_only.add(np.arange(3, dtype=np.int64), np.zeros(3, dtype=np.int32), signatures(rows), None)
    assert len(signs_only) == 3


def test_of_two_passages_with_the_query_s_signs_the_one_whose_large_components_are_its_own_is_kept() -> None:
    """Signs alone cannot tell a passage that is the query from one with the same signs and its sizes
    shuffled (Hamming distance 0 both, the same sum of the query's components at their signs); which
    components are large can (issue 89 item 7: the first pass by signs alone left out the nearest)."""
    rng = np.random.default_rng(11)
    query = units(rng, 1, 256)[0]
    shuffled = np.sign(query) * rng.permutation(np.abs(query))
    rows = np.vstack([shuffled, query]).astype(np.float32)  # the look-alike first: a tie keeps it
    held = Signatures(4)
    held.add(np.array([1, 2], dtype=np.int64), np.zeros(2, np.int32), signatures(rows), large_bits(rows))
    assert (signatures(rows)[0] == signatures(rows)[1]).all()
    assert held.first_pass(query, None, 1).tolist() == [2]


def test_from_512_dimensions_the_signs_alone_are_held_and_order_the_passages() -> None:
    """Wide vectors hold no sizes (half the memory): their signs alone kept the exact ranking's first tens
    (:data:`~mail_imap_mcp.meaning.vectors.SIGNS_ENOUGH`)."""
    assert Signatures.of_dimensions(256).sizes and Signatures.of_dimensions(130).words == 3
    wide = Signatures.of_dimensions(512)
    assert not wide.sizes and wide.words == 8
    rng = np.random.default_rng(13)
    rows = units(rng, 300, 512)
    ids = np.arange(300, dtype=np.int64)
    wide.add(ids, np.zeros(300, np.int32), signatures(rows), None)
    narrow = Signatures(8)
    narrow.add(ids, np.zeros(300, np.int32), signatures(rows), large_bits(rows))
    assert wide._large.size == 0 and wide.nbytes == narrow.nbytes - narrow._large.nbytes > 0
    query = unit(rows[42] + 0.3 * units(rng, 1, 512)[0])
    assert wide.first_pass(query, None, 1).tolist() == [42]
    assert len(wide.first_pass(query, None, 20)) == 20
    wide.remove(range(100))  # compacted without sizes
    assert len(wide) == 200 and 42 not in wide.first_pass(query, None, 20).tolist()


def test_large_bits_mark_the_components_beyond_the_boundary_of_two_sizes() -> None:
    rows = np.array([[3.0, -0.5, 0.2, -2.0], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    spread = np.sqrt((rows[0] ** 2).mean())  # 1.8
    bits = np.unpackbits(large_bits(rows).view(np.uint8), axis=1)[:, :4]
    assert bits.tolist() == [(np.abs(rows[0]) > meaning_vectors.LARGE * spread).astype(int).tolist(), [0] * 4]
    assert bits[0].tolist() == [1, 0, 0, 1]


def test_a_message_ranks_by_its_best_passage() -> None:
    rng = np.random.default_rng(4)
    query = units(rng, 1, 64)[0]
    far = units(rng, 3, 64)
    near = np.vstack([far[0], unit(query + 0.05 * far[1])])
    ranked = exact(query, {1: quantised(far), 2: quantised(near), 3: np.zeros((0, 64), np.int8)}, 5)
    assert [key for key, _ in ranked] == [2, 1]
    assert ranked[0][1] > 0.98


def recall(found: list[int], wanted: list[int]) -> float:
    return len(set(found) & set(wanted)) / len(wanted)


def two_pass_recall(rows: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], rerank: int) -> float:
    """The mean recall at 10 of the two passes over ``rows`` (one passage per message) against the exact
    ranking of the float vectors."""
    stored = quantised(rows)
    held = Signatures(-(-rows.shape[1] // 64))
    ids = np.arange(len(rows), dtype=np.int64)
    held.add(ids, np.zeros(len(rows), np.int32), signatures(stored), large_bits(stored))

    def read(keys: list[int]) -> dict[int, npt.NDArray[np.int8]]:
        return {key: stored[key : key + 1] for key in keys}

    found = []
    for query in queries:
        wanted = np.argsort(-(rows @ query), kind="stable")[:10].tolist()
        found.append(recall([key for key, _ in two_pass(query, held, None, read, 10, rerank)], wanted))
    return float(np.mean(found))


def test_two_passes_find_what_the_exact_ranking_finds_among_random_vectors() -> None:
    rng = np.random.default_rng(5)
    rows = clustered(rng, 50_000, 256, 300)
    # Queries near stored mail (a paraphrase of one), as a search by meaning asks.
    queries = np.array([unit(rows[i] + 0.8 * units(rng, 1, 256)[0]) for i in rng.integers(0, 50_000, 40)])
    assert two_pass_recall(rows, queries, 400) >= 0.95


def passages_of_the_docs() -> list[str]:
    """Sentences of the project's docs: real text on many subjects (a few thousand)."""
    found = []
    for path in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            words = " ".join(paragraph.split())
            if not words.startswith(("|", "```", "#")):
                found.extend(s[:600] for s in re.split(r"(?<=[.!?:])\s+", words) if len(s) > 40)
    return found


@pytest.mark.parametrize("rerank", [100, 400])
def test_two_passes_find_what_the_exact_ranking_finds_with_the_shipped_model(rerank: int) -> None:
    texts = passages_of_the_docs()
    assert len(texts) > 3000
    model = shipped_model(ENGLISH)
    rows = model.embed(texts)
    questions = [
        "how do I turn the index off for one account",
        "what happens when the password is wrong",
        "where are drafts saved before sending",
        "the search is slow on a big mailbox",
        "which servers were tested",
        "can an agent delete mail for good",
        "attachments text extraction limits",
        "team deployment with a shared database",
        "sign in with a browser for Gmail",
        "how much memory does the server use",
    ]
    queries = model.embed(questions)
    # 100 passages are a fortieth of these (at a million the 400 re-ranked are far fewer: scripts/
    # bench_vectors measures the recall at 100,000 messages against every int8 row ranked).
    assert two_pass_recall(rows, queries, rerank) >= (0.9 if rerank == 100 else 0.95)


def test_a_broad_condition_is_asked_of_the_nearest_alone_and_a_narrow_one_left_to_a_list() -> None:
    """A condition passing most messages is asked of the nearest passages' messages alone, in the first
    pass's order, and it keeps nearly what the first pass of its matches listed keeps; one passing few
    is left to a list of its matches (None)."""
    rng = np.random.default_rng(7)
    rows = clustered(rng, 50_000, 256, 100)
    held = Signatures(4)
    ids = np.arange(50_000, dtype=np.int64)
    stored = quantised(rows)
    held.add(ids, np.zeros(50_000, np.int32), signatures(stored), large_bits(stored))
    asked: list[int] = []

    def passing_percent(percent: int) -> Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
        def passing(some: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
            asked.append(len(some))
            return some[some % 100 < percent]

        return passing

    for seed in range(5):
        query = unit(rows[seed * 999] + 0.8 * units(np.random.default_rng(seed), 1, 256)[0])
        asked.clear()
        broad = held.first_pass_passed(query, None, 400, passing_percent(70))
        listed = held.first_pass(query, held.candidates(None, ids[ids % 100 < 70]), 400)
        assert broad is not None and len(broad) == 400 and (broad % 100 < 70).all()
        assert len(set(broad.tolist()) & set(listed.tolist())) >= 0.9 * 400
        assert sum(asked) < 1_000  # the nearest alone, no more than the share says are needed
        assert held.first_pass_passed(query, None, 400, passing_percent(2)) is None


@pytest.mark.parametrize("keep", [1, 7, 400, 3200, 40_000, 70_000])
def test_the_nearest_by_hamming_distance_are_found_within_a_sampled_bound_as_among_all(keep: int) -> None:
    """The same positions in the same order (ties at the bound taken first by position, which orders
    the second pass's equal agreements), with every other distance left out (``far``), whatever the
    sample guesses, as counting every distance finds."""
    rng = np.random.default_rng(keep)
    far = 257
    for spread in (256, 40, 3):  # every distance, a few, and mostly ties
        distance = rng.integers(128 - spread // 2, 128 + (spread + 1) // 2, 60_000).astype(np.uint16)
        distance[rng.random(60_000) < 0.3] = far  # left out: another folder's
        found = hamming.smallest(distance, keep, far)
        assert found.tolist() == hamming.smallest_of(distance, keep, far).tolist()
        assert len(found) == min(keep, int((distance < far).sum()))


def test_a_passage_is_in_the_groups_asked_compared_with_few_or_looked_up_among_many() -> None:
    rng = np.random.default_rng(11)
    present = rng.integers(1, 50, 5000).astype(np.int32)
    for wanted in ([3], [1, 49], list(range(1, 50, 3)), [77]):
        found = meaning_vectors._in_groups(present, np.array(wanted, dtype=np.int64))
        assert found.tolist() == [int(group) in wanted for group in present]
