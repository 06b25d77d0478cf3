"""needs_reply's search keys (imap.replies) without a server: what the server is asked to leave out, and
the OR tree of the Sent search (balanced, each id once per header)."""

from __future__ import annotations

from mail_imap_mcp.imap.replies import any_of, needs_reply_criteria
from mail_imap_mcp.imap.search import SearchFilter
from mail_imap_mcp.imap.wire import search_args


def test_the_candidates_leave_out_answered_automated_and_own_mail() -> None:
    keys = b" ".join(search_args(list(needs_reply_criteria({"me@example.org"})), None))
    assert keys == (
        b'UNANSWERED NOT HEADER LIST-ID "" NOT HEADER AUTO-SUBMITTED "auto-" '
        b'NOT HEADER PRECEDENCE "bulk" NOT HEADER PRECEDENCE "list" NOT HEADER PRECEDENCE "junk" '
        b'NOT FROM "noreply" NOT FROM "no-reply" NOT FROM "mailer-daemon" NOT FROM "me@example.org"'
    )


def test_the_keys_follow_the_other_filters_and_non_ascii_ones_ask_for_utf8() -> None:
    search = SearchFilter(from_="alice", extra=needs_reply_criteria({"me@example.org"}))
    assert search.criteria()[:3] == [b"FROM", "alice", b"UNANSWERED"]
    assert not search.needs_utf8
    assert SearchFilter(extra=needs_reply_criteria({"zoë@exämple.org"})).needs_utf8


def depth(keys: list[bytes | str | int]) -> int:
    """How deep the OR tree of ``keys`` nests (prefix notation, every key three tokens)."""
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


def test_the_or_tree_is_balanced() -> None:
    leaves: list[list[bytes | str | int]] = [[b"HEADER", b"REFERENCES", f"<{i}@x>"] for i in range(200)]
    tree = any_of(leaves)
    assert tree.count(b"OR") == 199 and depth(tree) == 8
    assert any_of(leaves[:1]) == leaves[0]
