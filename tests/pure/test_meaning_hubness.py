"""Hubness reduction (meaning/hubness.py): a message's density is its mean cosine to its nearest
neighbours, and CSLS's order ranks a message from a crowd below an equally near one standing alone."""

from __future__ import annotations

import numpy as np
import pytest

from mail_imap_mcp.meaning.hubness import densities, locally_scaled, unit_rows


def _angles(*degrees: float) -> np.ndarray:
    radians = np.radians(degrees)
    return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


def test_unit_rows_keeps_a_row_of_zeros() -> None:
    rows = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    assert rows.tolist() == [[pytest.approx(0.6), pytest.approx(0.8)], [0.0, 0.0]]


def test_density_is_the_mean_cosine_to_the_nearest_others() -> None:
    # Three messages close together at 0, 10 and 20 degrees, one alone at 90.
    messages = _angles(0, 10, 20, 90)
    found = densities(messages, messages, neighbours=2, own=True)
    cos = np.cos(np.radians([10.0, 20.0, 70.0, 80.0]))
    assert found[0] == pytest.approx((cos[0] + cos[1]) / 2, abs=1e-6)  # to 10 and 20, not to itself
    assert found[1] == pytest.approx(cos[0], abs=1e-6)  # to 0 and 20
    assert found[3] == pytest.approx((cos[2] + cos[3]) / 2, abs=1e-6)  # to 20 and 10
    assert found[3] < found[0]


def test_density_against_another_reference_counts_every_row() -> None:
    found = densities(_angles(0), _angles(0, 60), neighbours=5)
    assert found[0] == pytest.approx((1.0 + 0.5) / 2, abs=1e-6)


def test_no_reference_row_left_means_no_density() -> None:
    assert densities(_angles(0), _angles(0), neighbours=3, own=True).tolist() == [0.0]


def test_a_message_from_a_crowd_ranks_below_one_as_near_that_stands_alone() -> None:
    crowd = _angles(40, 41, 42, 43, 44)
    alone = _angles(-40)
    messages = np.concatenate([crowd, alone])
    query = _angles(0)[0]
    cosines = messages @ query
    assert cosines[0] == pytest.approx(cosines[5], abs=1e-6)  # as near the query, both
    scaled = locally_scaled(cosines, densities(messages, messages, neighbours=3, own=True))
    assert scaled[5] > scaled[0]
    assert locally_scaled(cosines, np.zeros(6, dtype=np.float32)).tolist() == pytest.approx(cosines.tolist())
