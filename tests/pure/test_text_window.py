"""TextCollector keeps only the text of its window (a window at the end of a 30 MB text must not hold
the 30 MB), its windows concatenate to the whole text, and each window moves on (a combining sequence
longer than the window is split rather than answered with an empty window at the same offset)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.content._window import TextCollector


def windows(chunks: list[str], max_chars: int, hard_cap: int = 10**9) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    offset = 0
    while True:
        collector = TextCollector(offset=offset, max_chars=max_chars, hard_cap=hard_cap)
        complete = True
        for chunk in chunks:
            if not collector.add(chunk):
                complete = False
                break
        window = collector.finish(complete=complete)
        out.append(window)
        if window["next_offset"] is None:
            return out
        offset = int(str(window["next_offset"]))


def test_a_window_far_into_the_text_keeps_only_what_follows_its_start() -> None:
    line = "a line of text that repeats\n"
    collector = TextCollector(offset=len(line) * 9_990, max_chars=10_000, hard_cap=10**9)
    assert all(collector.add(line) for _ in range(10_000))
    window = collector.finish(complete=True)
    assert window["text"] == (line * 10).rstrip()
    assert window["total_chars"] == len((line * 10_000).rstrip()) and window["next_offset"] is None
    assert sum(len(piece) for piece in collector.pieces) <= len(line) * 11


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab \n\u0301\U0001f600", max_size=30), max_size=30),
    st.integers(min_value=1, max_value=25),
)
def test_windows_concatenate_to_the_whole_text(chunks: list[str], max_chars: int) -> None:
    whole = TextCollector(offset=0, max_chars=10**9, hard_cap=10**9)
    for chunk in chunks:
        whole.add(chunk)
    expected = whole.finish(complete=True)
    pieces = windows(chunks, max_chars)
    assert "".join(str(w["text"]) for w in pieces) == expected["text"]
    assert all(w["total_chars"] == expected["total_chars"] for w in pieces if w["next_offset"] is None)
    # Every window makes progress, also inside a combining sequence longer than the window.
    offsets = [w["offset"] for w in pieces]
    assert offsets == sorted(set(offsets))
