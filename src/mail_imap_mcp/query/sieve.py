"""A query as a Sieve test (RFC 5228), the condition of a rule the server runs as mail arrives: a third
compiler of the tree beside IMAP SEARCH (:mod:`.imap`) and Gmail's (:mod:`.gmail`).

A rule tests a message once, as it is delivered, so what a search asks of a message's later life cannot
be said: its flags and keywords (a new message has none; ``imap4flags``' ``hasflag`` tests the script's
own variable), Gmail's labels and categories, and, here, its attachments. Each is
:class:`NotSayableInSieve` naming the part. The rest compiles so that it matches what a search of the
same condition matches on arrival:

* ``from:``, ``to:``, ``cc:``, ``bcc:``, ``subject:`` and a header test: ``header :contains`` (a
  substring of the header's decoded text, display names included, as IMAP's FROM matches), a header
  that only must exist: ``exists``;
* a bare word: IMAP's TEXT looks in every header, which Sieve cannot name; a rule's word is the
  subject, the senders and recipients, or the text of the body (:func:`rule_condition` is the same
  condition as a tree, for a search that must match exactly what the rule will: a dry run);
* ``body`` text: ``body :text :contains`` (extension ``body``); ``larger:``/``smaller:``: ``size
  :over``/``:under``; ``after:``/``before:``: the day it arrives, ``currentdate :value "ge"``/``"lt"``
  (``date``, ``relational``);
* AND, OR and NOT: ``allof``, ``anyof``, ``not``; the empty conjunction: ``true``.

Matching is ``i;ascii-casemap`` (Sieve's default): case-insensitive for ASCII letters only, where IMAP
servers fold other letters too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mail_imap_mcp.query import tree
from mail_imap_mcp.query.tree import Query, TextField

#: The headers a rule's bare word looks in, beside the body's text.
WORD_HEADERS: tuple[TextField, ...] = ("subject", "from", "to", "cc")
#: RFC 5322 3.6.8: a field name is printable ASCII but the colon.
_FIELD_NAME = re.compile(r"[!-9;-~]+")
_INDENT = "  "


class NotSayableInSieve(ValueError):
    """A part of the query a Sieve rule cannot test: ``part`` as the query writes it, ``reason`` why."""

    def __init__(self, part: str, reason: str) -> None:
        super().__init__(f"{part}: {reason}")
        self.part = part
        self.reason = reason


@dataclass(frozen=True)
class SieveCondition:
    """A rule's condition: the Sieve ``test`` and the extensions it ``require``\\ s (sorted)."""

    test: str
    requires: tuple[str, ...] = ()

    def require_line(self) -> str:
        """The script's ``require`` line for the test, or ``""``."""
        if not self.requires:
            return ""
        return f"require [{', '.join(quoted(name) for name in self.requires)}];\n"


def quoted(text: str) -> str:
    """``text`` as a Sieve quoted string (RFC 5228 2.4.2: ``\\`` and ``"`` escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rule_condition(query: Query) -> Query:
    """``query`` as the rule compiled from it tests it: each bare word looks in :data:`WORD_HEADERS`
    and the body's text (see the module). A search of this tree matches what the rule matches."""
    if isinstance(query, tree.Contains) and query.field == "text":
        fields: tuple[TextField, ...] = (*WORD_HEADERS, "body")
        return tree.AnyOf(tuple(tree.Contains(field, query.value) for field in fields))
    if isinstance(query, tree.AllOf):
        return tree.AllOf(tuple(rule_condition(part) for part in query.parts))
    if isinstance(query, tree.AnyOf):
        return tree.AnyOf(tuple(rule_condition(part) for part in query.parts))
    if isinstance(query, tree.Not):
        return tree.Not(rule_condition(query.part))
    return query


def sieve_condition(query: Query, offered: frozenset[str] | None = None) -> SieveCondition:
    """The Sieve test of ``query``; :class:`NotSayableInSieve` naming the first part it cannot say, or a
    part needing an extension the server does not offer (``offered``: its ``SIEVE`` capability; None:
    any extension)."""
    requires: set[str] = set()
    test = _test(rule_condition(query), requires, 0)
    for extension in sorted(requires):
        if offered is not None and extension not in offered:
            raise NotSayableInSieve(
                _needing(query, extension), f"the server's Sieve lacks the {extension!r} extension it needs"
            )
    return SieveCondition(test, tuple(sorted(requires)))


def _test(node: Query, requires: set[str], depth: int) -> str:
    if isinstance(node, tree.Contains):
        if node.field == "body":
            requires.add("body")
            return f"body :text :contains {quoted(node.value)}"
        return f"header :contains {quoted(node.field)} {quoted(node.value)}"
    if isinstance(node, tree.Header):
        if not _FIELD_NAME.fullmatch(node.name):
            raise NotSayableInSieve(f"header {node.name!r}", "not a header field's name")
        if not node.value:
            return f"exists {quoted(node.name)}"
        return f"header :contains {quoted(node.name)} {quoted(node.value)}"
    if isinstance(node, tree.SizeBound):
        return f"size {':over' if node.bound == 'larger' else ':under'} {node.octets}"
    if isinstance(node, tree.DateBound):
        requires.update(("date", "relational"))
        relation = "ge" if node.bound == "since" else "lt"
        return f'currentdate :value "{relation}" "date" "{node.day.isoformat()}"'
    if isinstance(node, tree.AllOf | tree.AnyOf):
        if not node.parts:
            return "true"
        if len(node.parts) == 1:
            return _test(node.parts[0], requires, depth)
        inner = _INDENT * (depth + 1)
        parts = f",\n{inner}".join(_test(part, requires, depth + 1) for part in node.parts)
        return f"{'allof' if isinstance(node, tree.AllOf) else 'anyof'}(\n{inner}{parts}\n{_INDENT * depth})"
    if isinstance(node, tree.Not):
        return f"not {_test(node.part, requires, depth)}"
    raise NotSayableInSieve(describe(node), _UNSAYABLE[type(node)])


_ARRIVES = "a rule tests a message as it arrives, when it has none yet"
_UNSAYABLE: dict[type, str] = {
    tree.HasFlag: f"flags cannot be tested in a rule: {_ARRIVES}",
    tree.HasKeyword: f"keywords cannot be tested in a rule: {_ARRIVES}",
    tree.NeedsReply: f"whether mail was answered cannot be tested in a rule: {_ARRIVES}",
    tree.Label: "labels are Gmail's, which runs no Sieve",
    tree.Category: "categories are Gmail's, which runs no Sieve",
    tree.HasAttachment: "attachments are not tested by rules yet",
    tree.Filename: "attachments' names are not tested by rules yet",
}


def describe(node: Query) -> str:
    """The part of a query ``node`` is, as the query language writes it (near enough to find it)."""
    if isinstance(node, tree.HasFlag):
        words = {"seen": ("read", "unread"), "flagged": ("starred", "unstarred")}
        present, absent = words.get(node.flag, (node.flag, f"un{node.flag}"))
        return f"is:{present if node.present else absent}"
    if isinstance(node, tree.HasKeyword):
        return f"keyword {node.keyword}" if node.present else f"-keyword {node.keyword}"
    if isinstance(node, tree.Label):
        return f"label:{node.name}"
    if isinstance(node, tree.Category):
        return f"category:{node.name}"
    if isinstance(node, tree.Filename):
        return f"filename:{node.value}"
    if isinstance(node, tree.HasAttachment):
        return "has:attachment"
    if isinstance(node, tree.NeedsReply):
        return "is:needs_reply"
    if isinstance(node, tree.DateBound):
        return f"{'after' if node.bound == 'since' else 'before'}:{node.day.strftime('%Y/%m/%d')}"
    if isinstance(node, tree.Contains):
        return node.value if node.field == "text" else f"{node.field}:{node.value}"
    return type(node).__name__


def _needing(query: Query, extension: str) -> str:
    """The first part of ``query`` that needs ``extension``."""
    stack = [query]
    while stack:
        node = stack.pop(0)
        if isinstance(node, tree.AllOf | tree.AnyOf):
            stack[:0] = node.parts
        elif isinstance(node, tree.Not):
            stack.insert(0, node.part)
        elif (extension == "body" and isinstance(node, tree.Contains) and node.field in ("body", "text")) or (
            extension in ("date", "relational") and isinstance(node, tree.DateBound)
        ):
            return describe(node)
    return extension


__all__ = [
    "WORD_HEADERS",
    "NotSayableInSieve",
    "SieveCondition",
    "describe",
    "quoted",
    "rule_condition",
    "sieve_condition",
]
