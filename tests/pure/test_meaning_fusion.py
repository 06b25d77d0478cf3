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
    # Each ranking's first five are the other's first five: the words count fully.
    assert agreement_weight(["m3", "m0", "m2", "m4", "m1", "x"], meaning) == 1.0
    # Four of the words' first five among the meaning's first five, and four of the meaning's first five
    # among the words' first five: 4/5 x 4/5.
    assert agreement_weight(["m3", "m0", "m9", "m4", "m1", "m2"], meaning) == pytest.approx(0.64)
    # Chance matches of common words, none among the meaning's first five: the floor (two the meaning
    # ranks 8th and 10th are not near: with its ranking fed back, such messages pushed out right ones it
    # alone ranked 7th).
    assert agreement_weight(["x1", "m7", "x3", "m9", "x5"], meaning) == WORDS_FLOOR
    # One of the words' five near in meaning, the meaning's first (a word the description shares with
    # mail the model also puts first, "club" of a book club for a fitness club): 1/5 x 1/5, the floor;
    # two of them: 2/5 x 2/5.
    assert agreement_weight(["x1", "m0", "x3", "m7", "x5"], meaning) == WORDS_FLOOR
    assert agreement_weight(["m1", "x2", "m2", "x4", "x5", "m0"], meaning) == pytest.approx(0.16)
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
