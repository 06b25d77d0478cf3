"""SummaryCache: bounded, least recently used out, keyed so a new UIDVALIDITY never meets old content."""

from __future__ import annotations

from mail_imap_mcp.imap.summary_cache import SummaryCache, SummaryKey, with_flags
from mail_imap_mcp.mail.records import SummaryRecord
from tests.support.mail.summaries import make_summary


def summary(uid: int, uidvalidity: int = 7, flags: list[str] | None = None) -> SummaryRecord:
    return make_summary(
        uid,
        uidvalidity,
        to="Bob <bob@example.org>, Cy <cy@example.org>",
        flags=flags or [],
        snippet="hello",
        short_recipients="Bob +1",
    )


def key(uid: int, uidvalidity: int = 7, snippet_chars: int = 200) -> SummaryKey:
    return SummaryKey("INBOX", uidvalidity, uid, snippet_chars)


def test_a_kept_summary_comes_back_without_the_flags_it_was_kept_with() -> None:
    cache = SummaryCache(10)
    cache.put(key(1), summary(1, flags=["\\Seen", "\\Flagged"]))
    kept = cache.get(key(1))
    assert kept is not None and kept.flags == [] and kept.subject == "message 1"


def test_with_flags_gives_a_copy_with_todays_flags_and_the_short_recipients() -> None:
    kept = summary(1)
    fresh = with_flags(kept, ["\\Answered"])
    assert fresh.flags == ["\\Answered"] and kept.flags == []
    assert fresh.short_recipients == "Bob +1"
    fresh.flags.append("\\Seen")
    assert kept.flags == []


def test_keys_differ_by_uidvalidity_and_snippet_length() -> None:
    cache = SummaryCache(10)
    cache.put(key(1), summary(1))
    assert cache.get(key(1, uidvalidity=8)) is None
    assert cache.get(key(1, snippet_chars=50)) is None
    assert cache.get(SummaryKey("Archive", 7, 1, 200)) is None
    assert cache.get(key(1)) is not None


def test_the_least_recently_used_entry_leaves_first() -> None:
    cache = SummaryCache(2)
    cache.put(key(1), summary(1))
    cache.put(key(2), summary(2))
    assert cache.get(key(1)) is not None  # 1 is now the most recent
    cache.put(key(3), summary(3))
    assert len(cache) == 2
    assert cache.get(key(2)) is None
    assert cache.get(key(1)) is not None and cache.get(key(3)) is not None


def test_zero_entries_keeps_nothing() -> None:
    cache = SummaryCache(0)
    cache.put(key(1), summary(1))
    assert len(cache) == 0 and cache.get(key(1)) is None


def test_the_text_held_stays_under_its_bound_whatever_the_entries_allow() -> None:
    """Hostile mail with every field at its cap must not make the allowed entries weigh megabytes."""
    cache = SummaryCache(100, max_chars=20_000)
    for uid in range(50):
        big = summary(uid)
        big.subject = "x" * 2_000
        big.snippet = "y" * 500
        cache.put(key(uid), big)
        assert cache.chars <= 20_000
    assert 0 < len(cache) < 10
    assert cache.get(key(49)) is not None and cache.get(key(0)) is None


def test_a_summary_larger_than_the_bound_is_not_kept_and_evicts_nothing() -> None:
    cache = SummaryCache(10, max_chars=1_000)
    cache.put(key(1), summary(1))
    huge = summary(2)
    huge.subject = "z" * 5_000
    cache.put(key(2), huge)
    assert cache.get(key(2)) is None and cache.get(key(1)) is not None


def test_putting_a_key_again_replaces_it_and_counts_its_text_once() -> None:
    cache = SummaryCache(10)
    cache.put(key(1), summary(1))
    once = cache.chars
    cache.put(key(1), summary(1))
    assert cache.chars == once and len(cache) == 1
