"""The size of each chunk of a run on a whole search, from the server's work in the last chunk (issue 78
item 6, issue 89 item 12): a chunk aims at half a second of the server's time, its waits for the link's
round trip left out, so a cancel, seen between two chunks, takes effect within one chunk plus its round
trips, and a slow link does not shrink the chunks."""

from __future__ import annotations

import pytest

from mail_imap_mcp.operations.bulk import CHUNKS
from mail_imap_mcp.operations.chunk_sizes import ChunkSizes

SIZES = ChunkSizes(first=100, least=10, most=500, target_s=0.5)


def test_a_slow_chunk_makes_the_next_one_smaller_in_proportion() -> None:
    assert SIZES.after(500, 5.0) == 50  # 5 s for 500: 0.5 s is 50
    assert SIZES.after(100, 1.0) == 50
    assert SIZES.after(200, 0.5) == 200  # on target: unchanged


def test_a_quick_chunk_grows_the_next_at_most_fourfold_and_never_past_the_most() -> None:
    assert SIZES.after(100, 0.01) == 400
    assert SIZES.after(100, 0.0) == 400  # a clock that did not move says little
    assert SIZES.after(400, 0.1) == 500


def test_regression_the_links_round_trips_are_not_the_servers_work() -> None:
    """Issue 89 item 12: at 1 s RTT a chunk of 100 UIDs took 2.05 s, two waits (SELECT, UID MOVE) of 1 s
    and 50 ms of the server's work: the next chunk grows (e01db76 shrank it to 24, then to the least, 10,
    about 5 messages a second). Courier's four waits (SELECT, COPY, STORE, EXPUNGE) likewise."""
    assert SIZES.after(100, 2.05, round_trips=2, round_trip_s=1.0) == 400
    assert SIZES.after(500, 4.2, round_trips=4, round_trip_s=1.0) == 500
    # A chunk slow on the server still shrinks: 2.5 s of work for 500 (the wait of 0.5 s left out).
    assert SIZES.after(500, 3.0, round_trips=1, round_trip_s=0.5) == 100
    # Waits longer than the chunk (a round trip measured on a quicker moment): no work, grow.
    assert SIZES.after(100, 0.5, round_trips=2, round_trip_s=0.3) == 400


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
