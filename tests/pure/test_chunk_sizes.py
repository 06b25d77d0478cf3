"""The size of each chunk of a run on a whole search, from the last chunk's time (issue 78 item 6): a
chunk aims at half a second, so a cancel, seen between two chunks, takes effect within about a second."""

from __future__ import annotations

import pytest

from mail_imap_mcp.operations.bulk import CHUNKS
from mail_imap_mcp.operations.chunk_sizes import ChunkSizes

SIZES = ChunkSizes(first=100, least=10, most=500, target_s=0.5)


def test_a_slow_chunk_makes_the_next_one_smaller_in_proportion() -> None:
    assert SIZES.after(500, 5.0) == 50  # 5 s for 500: 0.5 s is 50
    assert SIZES.after(100, 1.0) == 50
    assert SIZES.after(200, 0.5) == 200  # on target: unchanged


def test_a_quick_chunk_grows_the_next_at_most_twofold_and_never_past_the_most() -> None:
    assert SIZES.after(100, 0.01) == 200
    assert SIZES.after(100, 0.0) == 200  # a clock that did not move says little
    assert SIZES.after(400, 0.1) == 500


def test_no_chunk_is_smaller_than_the_least_however_slow_the_server() -> None:
    assert SIZES.after(10, 60.0) == 10
    assert SIZES.after(0, 1.0) == 100  # nothing measured: the first size


def test_under_a_steady_server_the_sizes_settle_on_the_target_time() -> None:
    """A server that takes 10 ms per message (Courier's COPY, STORE and EXPUNGE under load): from the
    first chunk on, every chunk takes about half a second, so a cancel waits about that long."""
    size, times = SIZES.first, []
    for _ in range(8):
        seconds = size * 0.010
        times.append(seconds)
        size = SIZES.after(size, seconds)
    assert size == 50 and all(t <= 0.5 for t in times[1:]) and times[0] == 1.0


@pytest.mark.parametrize(
    "settings", [{"least": 0}, {"first": 600}, {"least": 200}, {"target_s": 0.0}, {"growth": 0.5}]
)
def test_sizes_out_of_order_are_refused(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ChunkSizes(**settings)  # type: ignore[arg-type]


def test_a_run_starts_below_its_largest_chunk_and_aims_at_half_a_second() -> None:
    assert CHUNKS.least < CHUNKS.first <= CHUNKS.most == 500 and CHUNKS.target_s == 0.5
