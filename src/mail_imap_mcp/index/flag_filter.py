"""A filter of flags alone as the values of ``flag_bits`` it passes: what the engines' counts of each
value answer a page's ``total`` from, for every folder searched, instead of counting its matches."""

from __future__ import annotations

from collections.abc import Callable

from mail_imap_mcp.index.store import FLAG_BITS
from mail_imap_mcp.query.tree import AllOf, AnyOf, HasFlag, Not, Query

#: Every value ``flag_bits`` may hold (each combination of the system flags' bits is at most their sum).
FLAG_VALUES = range(sum(FLAG_BITS.values()) + 1)

_Test = Callable[[int], bool]


def flag_values(query: Query) -> frozenset[int] | None:
    """The values of ``flag_bits`` that ``query`` passes where it tests system flags alone (under AND,
    OR and NOT; no parts: every value); None where it tests anything else (words, dates, keywords...)."""
    test = _test(query)
    return None if test is None else frozenset(value for value in FLAG_VALUES if test(value))


def _test(node: Query) -> _Test | None:
    if isinstance(node, HasFlag):
        bit, present = FLAG_BITS[node.flag], node.present
        return lambda value: bool(value & bit) is present
    if isinstance(node, Not):
        inner = _test(node.part)
        return None if inner is None else lambda value: not inner(value)
    if isinstance(node, AllOf | AnyOf):
        parts = [_test(part) for part in node.parts]
        tests = [test for test in parts if test is not None]
        if len(tests) < len(parts):
            return None
        every = isinstance(node, AllOf)
        return lambda value: (all if every else any)(test(value) for test in tests)
    return None
