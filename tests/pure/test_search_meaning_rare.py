"""The rare-word rule of ``about`` (``services/search_meaning_rare.py``) against what a store may answer:
a page whose total it did not count (``UNCOUNTED``, a store's right where ``uncounted`` was asked) is no
sign that its words are rare."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.index.store import TEXT_COLUMNS, UNCOUNTED, Hit, HitPage
from mail_imap_mcp.query.tree import AllOf
from mail_imap_mcp.services.search_meaning_rare import RARE_MESSAGES, rare_word_holders


class _Store:
    """A store whose every word is held by ``held`` messages (each asked one word at a time)."""

    def __init__(self, held: int) -> None:
        self.held = held
        self.asked: list[Any] = []

    def search(self, query: Any, **ask: Any) -> HitPage:
        self.asked.append(query)
        hits = [_hit(uid) for uid in range(1, min(self.held, ask["limit"]) + 1)]
        return HitPage(hits, self.held, ["INBOX"])


def _hit(uid: int) -> Hit:
    return Hit("INBOX", 1, uid, 0.0, 0, ("",) * len(TEXT_COLUMNS))


def test_an_uncounted_total_is_not_taken_for_few_messages() -> None:
    store: Any = _Store(held=5_000)
    found = HitPage([_hit(uid) for uid in range(1, 21)], UNCOUNTED, ["INBOX"])
    assert rare_word_holders(store, AllOf(()), ["INBOX"], ["invoice", "team"], found) == set()
    assert len(store.asked) == 2  # each word asked alone, as where the total is many


def test_a_counted_total_of_few_messages_answers_alone() -> None:
    store: Any = _Store(held=5_000)
    found = HitPage([_hit(uid) for uid in range(1, RARE_MESSAGES + 1)], RARE_MESSAGES, ["INBOX"])
    assert rare_word_holders(store, AllOf(()), ["INBOX"], ["wohnung"], found) == {
        ("INBOX", uid) for uid in range(1, RARE_MESSAGES + 1)
    }
    assert store.asked == []
