"""Pseudo-relevance feedback for search by meaning (meaning/feedback.py): the description's vector moved
towards the messages it finds first."""

from __future__ import annotations

import numpy as np
import pytest

from mail_imap_mcp.meaning.feedback import FEEDBACK_WEIGHT, fed_back


def _unit(*values: float) -> np.ndarray:
    row = np.array(values, dtype=np.float32)
    return row / np.linalg.norm(row)


def test_the_vector_moves_towards_the_mean_of_its_first_messages_and_stays_of_length_one() -> None:
    query = _unit(1, 0, 0)
    first = [_unit(0, 1, 0)[None, :], _unit(0, 0, 1)[None, :]]
    moved = fed_back(query, first)
    expected = _unit(1, FEEDBACK_WEIGHT / 2, FEEDBACK_WEIGHT / 2)
    assert moved == pytest.approx(expected, abs=1e-6)
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0)


def test_a_message_counts_by_the_unit_mean_of_its_passages_whatever_their_scale() -> None:
    """Stored rows may be quantised (not of length 1): a message of many passages weighs as one of one."""
    query = _unit(1, 0)
    many = np.array([[0, 90], [0, 127]], dtype=np.float32)  # int8-like rows, one direction
    one = np.array([[0, 1]], dtype=np.float32)
    assert fed_back(query, [many]) == pytest.approx(fed_back(query, [one]), abs=1e-6)
    assert fed_back(query, [many], weight=1.0) == pytest.approx(_unit(1, 1), abs=1e-6)


def test_without_first_messages_the_vector_is_left_as_it_is() -> None:
    query = _unit(0.6, 0.8)
    assert fed_back(query, []) == pytest.approx(query)
    assert fed_back(query, [np.zeros((0, 2), dtype=np.float32)]) == pytest.approx(query)
