"""The query tree and its IMAP compiler, without a server: the keys a flat filter sends (in the order the
tools sent them before the tree existed), negation and OR of ANDs in IMAP's parenthesis-free form, and a
property test that the keys mean what the tree means."""

from __future__ import annotations

import unicodedata
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.imap.wire import search_args
from mail_imap_mcp.query import (
    EVERYTHING,
    AllOf,
    AnyOf,
    Contains,
    DateBound,
    HasFlag,
    HasKeyword,
    Header,
    NeedsReply,
    Not,
    Query,
    QueryTooComplex,
    SizeBound,
    all_of,
    is_everything,
    needs_utf8,
    search_keys,
)
from mail_imap_mcp.query.imap import MAX_CLAUSES

Key = bytes | str | int


def sent(query: Query) -> bytes:
    return b" ".join(search_args(search_keys(query), None))


def test_a_flat_filter_compiles_to_its_keys_in_order() -> None:
    query = all_of(
        Contains("subject", "Gru\u0308\u00dfe"),
        DateBound("since", date(2025, 1, 2)),
        DateBound("before", date(2025, 12, 31)),
        HasFlag("seen", present=False),
        HasFlag("flagged"),
        HasKeyword("$Important"),
        SizeBound("larger", 100),
        SizeBound("smaller", 5000),
    )
    assert search_keys(query) == [
        b"SUBJECT",
        "Grüße",
        b"SINCE",
        b"02-Jan-2025",
        b"BEFORE",
        b"31-Dec-2025",
        b"UNSEEN",
        b"FLAGGED",
        b"KEYWORD",
        b"$Important",
        b"LARGER",
        100,
        b"SMALLER",
        5000,
    ]


def test_everything_compiles_to_no_key_and_nothing_to_not_all() -> None:
    assert search_keys(EVERYTHING) == [] and is_everything(EVERYTHING)
    assert is_everything(all_of()) and not is_everything(all_of(HasFlag("seen")))
    assert search_keys(Not(EVERYTHING)) == [b"NOT", b"ALL"]


def test_all_of_flattens_and_leaves_out_none() -> None:
    seen = HasFlag("seen")
    assert all_of(None, seen) is seen
    assert all_of(all_of(seen, HasFlag("draft")), None, HasFlag("flagged")) == AllOf(
        (seen, HasFlag("draft"), HasFlag("flagged"))
    )


@pytest.mark.parametrize(
    ("query", "keys"),
    [
        (Not(HasFlag("answered")), [b"UNANSWERED"]),
        (Not(HasFlag("seen", present=False)), [b"SEEN"]),
        (HasFlag("deleted", present=False), [b"UNDELETED"]),
        (Not(HasKeyword("$Junk")), [b"UNKEYWORD", b"$Junk"]),
        (Not(Contains("from", "bob")), [b"NOT", b"FROM", "bob"]),
        (Not(Not(Contains("to", "ann"))), [b"TO", "ann"]),
        (Not(DateBound("since", date(2024, 2, 29))), [b"NOT", b"SINCE", b"29-Feb-2024"]),
        (Header("List-Id"), [b"HEADER", b"LIST-ID", ""]),
        (Header("X Odd:Name", "v"), [b"HEADER", "X Odd:Name", "v"]),
    ],
)
def test_single_tests_and_their_negations(query: Query, keys: list[Key]) -> None:
    assert search_keys(query) == keys


def test_a_negated_conjunction_becomes_an_or_of_negations() -> None:
    query = Not(AllOf((Contains("from", "a"), HasFlag("seen"))))
    assert search_keys(query) == [b"OR", b"NOT", b"FROM", "a", b"UNSEEN"]


def test_an_or_of_ands_is_distributed_into_ors_without_parentheses() -> None:
    query = AnyOf((AllOf((Contains("from", "a"), Contains("to", "b"))), HasFlag("flagged")))
    assert sent(query) == b'OR FROM "a" FLAGGED OR TO "b" FLAGGED'


def test_an_or_with_a_part_matching_everything_matches_everything() -> None:
    assert search_keys(AnyOf((EVERYTHING, HasFlag("seen")))) == []


def test_an_or_that_multiplies_out_too_far_is_refused() -> None:
    pairs = [AllOf((Contains("from", f"a{i}"), Contains("to", f"b{i}"))) for i in range(9)]
    assert MAX_CLAUSES < 2**9
    with pytest.raises(QueryTooComplex):
        search_keys(AnyOf(tuple(pairs)))
    assert len(search_keys(AnyOf(tuple(pairs[:8])))) > 0


def test_the_or_tree_is_balanced() -> None:
    leaves = tuple(Header("References", f"<{i}@x>") for i in range(200))
    keys = search_keys(AnyOf(leaves))
    assert keys.count(b"OR") == 199 and or_depth(keys) == 8
    assert search_keys(AnyOf(leaves[:1])) == [b"HEADER", b"REFERENCES", "<0@x>"]


def or_depth(keys: list[Key]) -> int:
    """How deep the OR tree of ``keys`` nests (prefix notation, every leaf three tokens)."""
    position = 0

    def walk() -> int:
        nonlocal position
        if keys[position] == b"OR":
            position += 1
            return 1 + max(walk(), walk())
        position += 3
        return 0

    found = walk()
    assert position == len(keys)
    return found


def test_text_is_kept_in_nfc_and_judged_for_utf8_after_it() -> None:
    decomposed = unicodedata.normalize("NFD", "Jürgen")
    assert Contains("from", decomposed).value == "Jürgen"
    assert Header("Subject", decomposed).value == "Jürgen"
    # U+212A KELVIN SIGN is canonically "K": after NFC the search is plain ASCII.
    assert not needs_utf8(Contains("subject", "\u212aelvin"))
    assert needs_utf8(AnyOf((HasFlag("seen"), Not(Contains("body", "é")))))
    assert needs_utf8(NeedsReply(frozenset({"zoë@exämple.org"})))
    assert not needs_utf8(NeedsReply(frozenset({"me@example.org"})))


def test_needs_reply_leaves_out_answered_automated_and_own_mail() -> None:
    assert sent(NeedsReply(frozenset({"me@example.org"}))) == (
        b'UNANSWERED NOT HEADER LIST-ID "" NOT HEADER AUTO-SUBMITTED "auto-" '
        b'NOT HEADER PRECEDENCE "bulk" NOT HEADER PRECEDENCE "list" NOT HEADER PRECEDENCE "junk" '
        b'NOT FROM "noreply" NOT FROM "no-reply" NOT FROM "mailer-daemon" NOT FROM "me@example.org"'
    )
    query = all_of(Contains("from", "alice"), NeedsReply(frozenset({"me@example.org"})))
    assert search_keys(query)[:3] == [b"FROM", "alice", b"UNANSWERED"]


def test_an_empty_or_is_not_a_query() -> None:
    with pytest.raises(ValueError):
        AnyOf(())


# The property: evaluate the tree directly, and the compiled keys as an IMAP server would, over the same
# truth of every single test; they must agree for every tree and every truth.
LEAVES: list[Query] = [
    Contains("from", "a"),
    Contains("subject", "b"),
    HasFlag("seen"),
    HasFlag("flagged", present=False),
    HasKeyword("$k"),
    SizeBound("larger", 10),
]
LEAF_KEYS = {tuple(search_keys(leaf)): index for index, leaf in enumerate(LEAVES)}
_FLAG_WORDS = {b"SEEN": (2, False), b"UNSEEN": (2, True), b"FLAGGED": (3, True), b"UNFLAGGED": (3, False)}


def trees() -> st.SearchStrategy[Query]:
    leaf = st.sampled_from(LEAVES)
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, min_size=0, max_size=3).map(lambda parts: AllOf(tuple(parts))),
            st.lists(inner, min_size=1, max_size=3).map(lambda parts: AnyOf(tuple(parts))),
            inner.map(Not),
        ),
        max_leaves=8,
    )


def holds(query: Query, truth: tuple[bool, ...]) -> bool:
    if isinstance(query, AllOf):
        return all(holds(part, truth) for part in query.parts)
    if isinstance(query, AnyOf):
        return any(holds(part, truth) for part in query.parts)
    if isinstance(query, Not):
        return not holds(query.part, truth)
    return truth[LEAVES.index(query)]


def imap_holds(keys: list[Key], truth: tuple[bool, ...]) -> bool:
    """What a server answers for one message: the keys ANDed, OR and NOT each taking one key."""
    position = 0

    def key() -> bool:
        nonlocal position
        word = keys[position]
        if word == b"OR":
            position += 1
            left, right = key(), key()
            return left or right
        if word == b"NOT":
            position += 1
            return not key()
        if word == b"ALL":
            position += 1
            return True
        if word in _FLAG_WORDS:
            position += 1
            index, inverted = _FLAG_WORDS[word]
            return truth[index] != inverted
        if word == b"UNKEYWORD":
            position += 2
            return not truth[4]
        leaf = tuple(keys[position : position + 2])
        if leaf in LEAF_KEYS:
            position += 2
            return truth[LEAF_KEYS[leaf]]
        raise AssertionError(f"unexpected key at {position}: {keys}")

    result = True
    while position < len(keys):
        result = key() and result
    return result


@settings(max_examples=400, deadline=None)
@given(trees(), st.tuples(*[st.booleans() for _ in LEAVES]))
def test_the_keys_mean_what_the_tree_means(query: Query, truth: tuple[bool, ...]) -> None:
    try:
        keys = search_keys(query)
    except QueryTooComplex:
        return
    assert imap_holds(keys, truth) == holds(query, truth)
