"""The fusion of a search by meaning: two rankings (by words, by meaning) as one order, each message saying
why it is there, and the words of a description its search by words looks for."""

from __future__ import annotations

import pytest

from mail_imap_mcp.meaning.fusion import MAX_WORDS, WORDS_FLOOR, about_words, agreement_weight, fuse


def test_a_message_both_rankings_find_comes_before_one_either_finds_alone_at_the_same_place() -> None:
    fused = fuse(["w1", "both", "w3"], ["m1", "both", "m3"], words_weight=1.0)
    keys = [one.key for one in fused]
    assert keys[0] == "both"
    assert {one.key: one.why for one in fused} == {
        "both": "both",
        "w1": "words",
        "w3": "words",
        "m1": "meaning",
        "m3": "meaning",
    }
    # Equal places in either ranking score alike: the order in which they are first named holds the tie.
    assert keys[1:] == ["w1", "m1", "w3", "m3"]
    assert [one.score for one in fused] == sorted((one.score for one in fused), reverse=True)


def test_the_top_of_one_ranking_can_beat_a_message_found_low_in_both() -> None:
    words = ["top", *(f"w{i}" for i in range(200)), "low"]
    meaning = [*(f"m{i}" for i in range(200)), "low"]
    keys = [one.key for one in fuse(words, meaning, words_weight=1.0)]
    assert keys.index("top") < keys.index("low")


def test_either_ranking_alone_is_its_own_order_and_a_key_counts_once_per_ranking() -> None:
    assert [one.key for one in fuse([], ["a", "b", "a", "c"])] == ["a", "b", "c"]
    assert [one.why for one in fuse(["x", "y"], [])] == ["words", "words"]
    assert fuse([], []) == []


def test_the_words_count_as_much_as_they_agree_with_the_meaning_at_the_top_both_ways() -> None:
    meaning = [f"m{i}" for i in range(30)]
    # Each ranking's first five are all among the other's first ten: the words count fully.
    assert agreement_weight(["m3", "m0", "m9", "m4", "m1", "m2", "x"], meaning) == 1.0
    # The words' first five all near in meaning, but only three of the meaning's first five among the
    # words' first ten: 3/5.
    assert agreement_weight(["m3", "m0", "m9", "m7", "m1", "x"], meaning) == pytest.approx(0.6)
    # Chance matches of common words, none near in meaning: the floor (one the meaning ranks 16th and one
    # 19th are not near: they pushed the meaning's tenth, a right one, out).
    assert agreement_weight(["x1", "m15", "x3", "m18", "x5"], meaning) == WORDS_FLOOR
    # Two of the words' five near in meaning, and only the meaning's first among the words' (a word the
    # description shares with mail the model also puts first, "club" of a book club for a fitness club):
    # 2/5 x 1/5; the meaning's three first among the words': 2/5 x 3/5.
    assert agreement_weight(["x1", "m0", "x3", "m7", "x5"], meaning) == pytest.approx(0.08)
    assert agreement_weight(["m1", "x2", "m2", "x4", "x5", "m0"], meaning) == pytest.approx(0.24)
    # No meaning ranking yet (no vectors): the words alone rank, fully.
    assert agreement_weight(["a", "b"], []) == 1.0
    chance = fuse(["x1", "x2", "x3"], ["m0", "m1", "m2"])
    assert [one.key for one in chance][:3] == ["m0", "m1", "m2"]
    agreed = fuse(["m2", "m1", "m0"], ["m0", "m1", "m2"])
    assert [one.why for one in agreed] == ["both", "both", "both"]


def test_weights_tip_the_balance_between_the_rankings() -> None:
    assert fuse(["w"], ["m"], meaning_weight=2.0)[0].key == "m"
    assert fuse(["w"], ["m"], words_weight=2.0)[0].key == "w"


def test_a_description_is_searched_by_its_words_that_say_something() -> None:
    assert about_words("What the landlord said about the heating in the flat") == [
        "landlord",
        "said",
        "heating",
        "flat",
    ]
    assert about_words("The bill for the Website redesign, the BILL!") == ["bill", "website", "redesign"]
    assert about_words("Ärger mit der Heizung") == ["ärger", "heizung"]
    assert about_words("la facture de la maison") == ["facture", "maison"]
    assert about_words("a I of the") == []
    assert len(about_words(" ".join(f"word{i}" for i in range(40)))) == MAX_WORDS
