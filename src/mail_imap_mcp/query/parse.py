"""The query language of ``imap_search_messages``: Gmail-style text read into a query tree and a scope.

Grammar (OR binds tighter than the implicit AND, as in Gmail; ``-`` binds tightest)::

    query    := conjunct ( [AND] conjunct )*
    conjunct := negated ( OR negated )*
    negated  := "-" negated | primary
    primary  := "(" query ")" | "{" negated+ "}" | term
    term     := word | "phrase" | name ":" value
    value    := word | "phrase" | "(" words, phrases, OR, "-" and parentheses ")"

A word or phrase alone matches the message's headers or body (IMAP ``TEXT``: a substring, case-insensitive);
several match when each does. ``{a b}`` is Gmail's shorthand for ``(a OR b)``. ``OR`` and ``AND`` are
operators only in capitals. Dates are calendar days (``2024/01/31`` or ``2024-01-31``); ``after:`` is on or
after the day, ``before:`` before it. ``older_than:`` and ``newer_than:`` (``7d``, ``3m``, ``1y``) are
resolved to such days against ``today`` when the query is parsed, so the tree holds only absolute dates.
``in:`` is not a test of a message but the search's scope (:data:`Scope`): it stands at the top level of the
query (not under ``OR``, ``-`` or parentheses), at most once.

Everything is bounded (:data:`MAX_QUERY_CHARS`, :data:`MAX_TERMS`, :data:`MAX_DEPTH`) and every mistake is a
:class:`QuerySyntaxError` that names the character where it was found and what was expected there.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date

from mail_imap_mcp.query.operands import OPERANDS, QuerySyntaxError
from mail_imap_mcp.query.tree import (
    EVERYTHING,
    AnyOf,
    Contains,
    Filename,
    Not,
    Query,
    TextField,
    all_of,
)

#: The longest query accepted, in characters.
MAX_QUERY_CHARS = 500
#: The most terms (words, phrases and operators) in one query.
MAX_TERMS = 50
#: The deepest nesting of parentheses, braces and ``-``.
MAX_DEPTH = 8


@dataclass(frozen=True)
class InMailbox:
    """``in:<name>``: search this mailbox only. The name is as written: a mailbox's name, or a role the
    search resolves to the account's mailbox (``inbox``, ``sent``, ``drafts``, ``trash``, ``spam``,
    ``junk``, ``archive``, ``all``)."""

    name: str


@dataclass(frozen=True)
class Anywhere:
    """``in:anywhere``: every mailbox, Trash and Junk included."""


Scope = InMailbox | Anywhere


@dataclass(frozen=True)
class ParsedQuery:
    """A query as parsed: what a message must match, and where to search (None: not said)."""

    tree: Query
    scope: Scope | None = None
    #: The tree's parts by the argument each came from (the search tool's filters; empty elsewhere).
    arguments: tuple[tuple[str, Query], ...] = ()


_TEXT_OPERATORS: dict[str, TextField] = {
    "from": "from",
    "to": "to",
    "cc": "cc",
    "bcc": "bcc",
    "subject": "subject",
}
#: Every operator the language knows (what an unknown one is told).
OPERATORS = (
    *_TEXT_OPERATORS,
    "filename",
    "has",
    "in",
    "is",
    "before",
    "after",
    "older_than",
    "newer_than",
    "larger",
    "smaller",
    "label",
    "category",
)
_OPERATOR = re.compile(r"([A-Za-z_]+):")
_DELIMITERS = '(){}"'


@dataclass(frozen=True)
class _Token:
    #: word, phrase, op (an operator's name, its colon read), (, ), {, }, -, OR or AND
    kind: str
    text: str
    position: int


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    value_next = False  # right after an operator's colon: a value, read as written
    while index < len(text):
        char = text[index]
        literal, value_next = value_next, False
        if char.isspace():
            index += 1
        elif char in "(){}":
            tokens.append(_Token(char, char, index))
            index += 1
        elif char == '"':
            end = text.find('"', index + 1)
            if end < 0:
                raise QuerySyntaxError(
                    len(text), f"a closing quote for the phrase opened at character {index + 1}"
                )
            if not text[index + 1 : end].strip():
                raise QuerySyntaxError(index, "text between the quotes", '""')
            tokens.append(_Token("phrase", " ".join(text[index + 1 : end].split()), index))
            index = end + 1
        elif char == "-" and not literal:
            if index + 1 == len(text) or text[index + 1].isspace():
                # Not a word: read as text, it matched nearly every message (IMAP's TEXT "-").
                raise QuerySyntaxError(index, "a search term right after '-' (to leave it out)", "-")
            tokens.append(_Token("-", "-", index))
            index += 1
        else:
            end = index
            while end < len(text) and not text[end].isspace() and text[end] not in _DELIMITERS:
                end += 1
            word = text[index:end]
            operator = None if literal else _OPERATOR.match(word)
            if operator:
                tokens.append(_Token("op", operator.group(1).lower(), index))
                end = index + operator.end()
                value_next = True
            elif word in ("OR", "AND") and not literal:
                tokens.append(_Token(word, word, index))
            else:
                tokens.append(_Token("word", word, index))
            index = end
    return tokens


def _check_characters(text: str) -> None:
    if len(text) > MAX_QUERY_CHARS:
        raise QuerySyntaxError(
            MAX_QUERY_CHARS,
            f"the end of the query (at most {MAX_QUERY_CHARS} characters)",
            text[MAX_QUERY_CHARS : MAX_QUERY_CHARS + 20],
        )
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cc" and char not in "\t\n\r":
            raise QuerySyntaxError(index, "text without control characters", char)


def parse(text: str, *, today: date) -> ParsedQuery:
    """The query ``text`` as a tree and a scope; ``today`` anchors ``older_than:`` and ``newer_than:``.
    Raises :class:`QuerySyntaxError` for anything malformed, unknown or beyond the bounds."""
    _check_characters(text)
    parser = _Parser(_tokens(text), today, len(text))
    tree = parser.query(closing=None)
    return ParsedQuery(tree, parser.scope())


class _Parser:
    def __init__(self, tokens: list[_Token], today: date, length: int) -> None:
        self.tokens = tokens
        self.length = length
        self.index = 0
        self.today = today
        self.terms = 0
        self.depth = 0
        #: Each ``in:`` seen: its scope, position, and whether it stands at the top level.
        self.scopes: list[tuple[Scope, int, bool]] = []

    # -- the token stream

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def fail(self, expected: str) -> QuerySyntaxError:
        token = self.peek()
        return (
            QuerySyntaxError(token.position, expected, token.text)
            if token
            else QuerySyntaxError(self.length, expected)
        )

    # -- the grammar

    def query(self, closing: str | None, field: TextField | None = None) -> Query:
        """Conjuncts up to ``closing`` (None: the end of the query)."""
        parts: list[Query] = []
        while True:
            token = self.peek()
            if token is None or token.kind == closing:
                break
            if token.kind in (")", "}"):
                raise self.fail(f"a search term ({token.text!r} closes nothing here)")
            if token.kind == "AND" and parts:
                self.take()
            parts.append(self.conjunct(closing, field))
        if not parts:
            raise self.fail("a search term" if closing is None else f"a search term before {closing!r}")
        return all_of(*parts)

    def conjunct(self, closing: str | None, field: TextField | None) -> Query:
        first_scope = len(self.scopes)
        options = [self.negated(closing, field)]
        while (token := self.peek()) is not None and token.kind == "OR":
            self.take()
            options.append(self.negated(closing, field))
        if len(options) == 1:
            return options[0]
        self.nest_scopes(first_scope)
        return AnyOf(tuple(options))

    def negated(self, closing: str | None, field: TextField | None) -> Query:
        token = self.peek()
        if token is None or token.kind in (")", "}", "OR", "AND"):
            raise self.fail("a search term")
        if token.kind != "-":
            return self.primary(closing, field)
        self.take()
        first_scope = len(self.scopes)
        with self.deeper(token):
            part = self.negated(closing, field)
        self.nest_scopes(first_scope)
        return Not(part)

    def primary(self, closing: str | None, field: TextField | None) -> Query:
        token = self.take()
        if token.kind in ("(", "{"):
            first_scope = len(self.scopes)
            with self.deeper(token):
                inner = self.query(")", field) if token.kind == "(" else self.any_of(field)
            if self.peek() is None:
                closing = ")" if token.kind == "(" else "}"
                raise self.fail(f"{closing!r} to close the {token.text!r} at character {token.position + 1}")
            self.take()
            self.nest_scopes(first_scope)
            return inner
        self.count(token)
        if token.kind in ("word", "phrase"):
            return Contains(field or "text", token.text)
        if field is not None:
            raise QuerySyntaxError(token.position, f"words or phrases inside {field}:(...)", token.text + ":")
        return self.operator(token)

    def any_of(self, field: TextField | None) -> Query:
        options: list[Query] = []
        while (token := self.peek()) is not None and token.kind != "}":
            if token.kind == "OR":  # {a OR b} says the same as {a b}
                self.take()
                continue
            options.append(self.negated("}", field))
        if not options:
            raise self.fail("a search term before '}'")
        return options[0] if len(options) == 1 else AnyOf(tuple(options))

    # -- operators

    def operator(self, token: _Token) -> Query:
        name = token.text
        if name not in OPERATORS:
            known = ", ".join(f"{op}:" for op in OPERATORS)
            raise QuerySyntaxError(
                token.position,
                f"a known operator ({known}); put text with a colon in quotes to search for it",
                name + ":",
            )
        if name in _TEXT_OPERATORS and (group := self.peek()) is not None and group.kind in ("(", "{"):
            if group.position != token.position + len(name) + 1:
                raise self.value_missing(token)
            return self.primary(None, _TEXT_OPERATORS[name])
        value = self.peek()
        if (
            value is None
            or value.kind not in ("word", "phrase")
            or value.position != token.position + len(name) + 1
        ):
            raise self.value_missing(token)
        self.take()
        return self.operand(name, value)

    def value_missing(self, token: _Token) -> QuerySyntaxError:
        return QuerySyntaxError(
            token.position + len(token.text) + 1,
            f"a value right after {token.text}:",
            self.found_after(token),
        )

    def found_after(self, token: _Token) -> str | None:
        after = self.peek()
        return None if after is None else after.text

    def operand(self, name: str, value: _Token) -> Query:
        text, position = value.text, value.position
        reader = OPERANDS.get(name)
        if reader is not None:
            return reader(text, position, self.today)
        if name in _TEXT_OPERATORS:
            return Contains(_TEXT_OPERATORS[name], text)
        if name == "filename":
            return Filename(text)
        return self.scoped(text, position)

    def scoped(self, text: str, position: int) -> Query:
        scope: Scope = Anywhere() if text.lower() == "anywhere" else InMailbox(text)
        self.scopes.append((scope, position, self.depth == 0))
        return EVERYTHING

    def nest_scopes(self, first: int) -> None:
        """The ``in:`` seen since ``first`` stand under OR, ``-`` or parentheses."""
        self.scopes[first:] = [(scope, position, False) for scope, position, _ in self.scopes[first:]]

    def scope(self) -> Scope | None:
        for _, position, top in self.scopes:
            if not top:
                raise QuerySyntaxError(
                    position - 3,
                    "a test of the message (in: is the search's scope: only at the top level, "
                    "not under OR, - or parentheses)",
                    "in:",
                )
        if len(self.scopes) > 1:
            raise QuerySyntaxError(
                self.scopes[1][1] - 3, "no second in: (a message is in one mailbox)", "in:"
            )
        return self.scopes[0][0] if self.scopes else None

    # -- bounds

    def count(self, token: _Token) -> None:
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise QuerySyntaxError(
                token.position, f"the end of the query (at most {MAX_TERMS} terms)", token.text
            )

    @contextmanager
    def deeper(self, token: _Token) -> Iterator[None]:
        """One more level of nesting (refused past :data:`MAX_DEPTH`)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise QuerySyntaxError(token.position, f"at most {MAX_DEPTH} levels of nesting", token.text)
        try:
            yield
        finally:
            self.depth -= 1


__all__ = [
    "MAX_DEPTH",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "OPERATORS",
    "Anywhere",
    "InMailbox",
    "ParsedQuery",
    "QuerySyntaxError",
    "Scope",
    "parse",
]
