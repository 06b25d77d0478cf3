"""The line ``-p tests.support.run.collected_tiers`` prints: each directory a run collected from, and how many."""

from __future__ import annotations

from tests.support.run.collected_tiers import PREFIX, collected_line, tier_of


def test_a_test_belongs_to_the_directory_below_tests() -> None:
    assert tier_of("tests/pure/test_a.py::test_x[1-a/b]") == "tests/pure"
    assert tier_of("tests/integration/test_b.py::Suite::test_y") == "tests/integration"


def test_the_line_counts_each_directory_in_order() -> None:
    nodeids = ["tests/unit/test_c.py::t", "tests/pure/test_a.py::test_x", "tests/pure/test_b.py::test_y[1]"]
    assert collected_line(nodeids) == f"{PREFIX} tests/pure 2, tests/unit 1"
