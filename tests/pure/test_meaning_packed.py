"""Vectors packed six bits a component, as the SQLite engines keep them (meaning/packed.py): a row's
signs as its signature holds them, then five bits a component, the cosine read back close to the float
one, a row's signature its first bytes, a row of zeros kept as one and no other row mistaken for it, at
any number of dimensions."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from mail_imap_mcp.meaning.packed import (
    CLIP,
    packed,
    packed_large,
    packed_signatures,
    row_bytes,
    runs,
    unpacked,
    unpacked_by,
)
from mail_imap_mcp.meaning.vectors import cosines, large_bits, quantised, signatures


def units(count: int, dimensions: int, seed: int = 0) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((count, dimensions)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("dimensions", [256, 255, 130, 64, 3, 1])
def test_rows_take_their_signs_and_five_bytes_for_eight_components_and_read_back_as_int8(
    dimensions: int,
) -> None:
    rows = units(50, dimensions)
    kept = packed(rows)
    signs = -(-dimensions // 64) * 8  # whole 64-bit words, as a signature is held
    assert kept.dtype == np.uint8 and kept.shape == (50, row_bytes(dimensions))
    assert row_bytes(dimensions) == signs + -(-dimensions // 8) * 5
    assert row_bytes(256) == 192
    back = unpacked(kept, dimensions)
    assert back.dtype == np.int8 and back.shape == (50, dimensions)
    assert (back % 2 != 0).all()  # every code is the middle of its step: odd, never zero
    assert np.abs(back).max() <= 63


@pytest.mark.parametrize("dimensions", [256, 255, 130, 3])
def test_the_signature_of_a_packed_row_is_its_vectors_read_from_the_bytes_alone(dimensions: int) -> None:
    rows = units(300, dimensions, seed=1)
    rows[5, : dimensions // 2] = 0.0  # components at zero: no bit, as signatures() of the floats
    kept = packed(rows)
    assert (packed_signatures(kept, dimensions) == signatures(rows)).all()
    assert (signatures(unpacked(kept, dimensions)) == signatures(rows)).all()


@pytest.mark.parametrize("dimensions", [256, 130, 3])
def test_the_large_components_of_a_packed_row_are_read_from_its_steps_as_from_the_rows_read_back(
    dimensions: int,
) -> None:
    """The first pass's sizes, read from the steps alone when the signatures are, are those of the rows
    read back, and those of the floats but for components on the boundary's own step."""
    rows = units(400, dimensions, seed=2)
    rows[7] = 0.0  # a row of zeros: no large component
    kept = packed(rows)
    from_steps = packed_large(kept, dimensions)
    assert (from_steps == large_bits(unpacked(kept, dimensions))).all()
    differing = np.unpackbits((from_steps ^ large_bits(rows)).view(np.uint8), axis=1).mean()
    assert differing < 0.01
    assert not from_steps[7].any()


def test_the_cosine_read_back_is_close_to_the_floats_on_random_and_on_the_models_vectors() -> None:
    rows = units(2000, 256, seed=2)
    query = units(1, 256, seed=3)[0]
    assert np.abs(cosines(query, unpacked(packed(rows), 256)) - rows @ query).max() < 0.03
    model = shipped_model(ENGLISH)
    texts = [line for line in (__doc__ or "").split("\n") if line] + ["the bill for the website redesign"]
    made = model.embed(texts)
    asked = model.embed(["an invoice for the new homepage"])[0]
    moved = cosines(asked, unpacked(packed(made), model.dimensions)) - made @ asked
    int8_moved = cosines(asked, quantised(made)) - made @ asked
    assert np.sqrt(np.mean(moved**2)) < 0.006
    assert np.abs(moved).max() > np.abs(int8_moved).max()  # coarser than int8: the measure is not empty


def test_a_row_of_zeros_stays_one_and_no_vector_packs_as_it() -> None:
    rows = np.vstack([np.zeros((1, 256), np.float32), units(3, 256, seed=4)])
    # The rows nearest to every component at the lowest code: all alike below zero, or one spike.
    rows = np.vstack([rows, -np.ones((1, 256), np.float32) / 16, np.eye(256, dtype=np.float32)[:1] * -1])
    kept = packed(rows)
    assert not kept[0].any()
    assert all(row.any() for row in kept[1:])
    back = unpacked(kept, 256)
    assert not back[0].any()
    assert all(row.any() for row in back[1:])
    assert cosines(units(1, 256)[0], back)[0] == 0.0


def test_a_component_beyond_the_clip_keeps_the_last_code_and_its_sign() -> None:
    row = np.zeros((1, 256), np.float32)
    row[0, 0], row[0, 1], row[0, 2:] = 20.0, -20.0, 1.0  # far beyond CLIP root mean squares
    back = unpacked(packed(row), 256)
    assert back[0, 0] == 63 and back[0, 1] == -63
    spread = float(np.sqrt(np.mean(row**2)))
    assert CLIP * spread < 20.0


def test_rows_kept_a_bytes_each_read_back_by_key_are_the_rows_read_back_whole() -> None:
    """PostgreSQL keeps a passage's codes a row each: read back by message, they are the int8 rows the
    SQLite engines read from one blob (the one form every engine ranks, issue 89 item 7)."""
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((6, 256)).astype(np.float32)
    codes = packed(rows)
    by_key = {7: [row.tobytes() for row in codes[:2]], 3: [row.tobytes() for row in codes[2:]], 9: []}
    found = unpacked_by(by_key, 256)
    assert set(found) == {7, 3}
    assert (found[7] == unpacked(codes[:2], 256)).all() and (found[3] == unpacked(codes[2:], 256)).all()
    assert unpacked_by({}, 256) == {}


@pytest.mark.parametrize("counts", [[3, 0, 1, 4], [0], [2], [0, 0, 5, 0]])
def test_rows_cut_into_runs_are_np_split_at_their_ends(counts: list[int]) -> None:
    rows = np.arange(sum(counts) * 3, dtype=np.int8).reshape(-1, 3)
    expected = np.split(rows, np.cumsum(counts)[:-1])
    found = runs(rows, counts)
    assert len(found) == len(expected)
    for mine, theirs in zip(found, expected, strict=True):
        assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
        assert np.array_equal(mine, theirs)
