"""A small Sieve checker for the in-memory ManageSieve (tests/support/mail/memory_sieve.py): RFC 5228's
grammar (commands, tests, test lists, blocks, strings, multi-line ``text:``, comments, numbers with
K/M/G, tags), ``require`` of extensions the fake offers, and the commands and tests each extension
brings. Its verdicts are worded as Pigeonhole words them (measured on Dovecot 2.3.19's Pigeonhole), so
the contract suite can hold both to one verdict: ``line N: error: ...`` then ``error: parse failed.`` or
``error: validation failed.``, CRLF-ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+)|(?P<newline>\n)|(?P<hash>\#[^\n]*)|(?P<block>/\*.*?\*/)
    |(?P<text>text:[ \t]*(?:\#[^\n]*)?\r?\n(?:.*?\n)*?\.\r?\n)
    |(?P<string>"(?:[^"\\]|\\.)*")|(?P<number>[0-9]+[KMG]?)|(?P<tag>:[A-Za-z_][A-Za-z0-9_]*)
    |(?P<identifier>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[;,(){}\[\]])""",
    re.VERBOSE | re.DOTALL,
)

#: Commands and tests of the base language (RFC 5228).
_BASE_COMMANDS = {"require", "if", "elsif", "else", "stop", "keep", "discard", "redirect"}
_BASE_TESTS = {"address", "allof", "anyof", "envelope", "exists", "false", "header", "not", "size", "true"}
#: What each extension adds: (commands, tests).
_EXTENSIONS: dict[str, tuple[set[str], set[str]]] = {
    "fileinto": ({"fileinto"}, set()),
    "reject": ({"reject"}, set()),
    "vacation": ({"vacation"}, set()),
    "imap4flags": ({"setflag", "addflag", "removeflag"}, {"hasflag"}),
    "include": ({"include", "return", "global"}, set()),
    "variables": ({"set"}, {"string"}),
    "body": (set(), {"body"}),
    "date": (set(), {"date", "currentdate"}),
    "mailbox": (set(), {"mailboxexists"}),
    "enotify": ({"notify"}, {"valid_notify_method", "notify_method_capability"}),
    "duplicate": (set(), {"duplicate"}),
    "environment": (set(), {"environment"}),
    "ihave": ({"error"}, {"ihave"}),
}


@dataclass
class _Token:
    kind: str
    text: str
    line: int


class _Refused(Exception):
    def __init__(self, line: int, what: str) -> None:
        super().__init__(what)
        self.line = line
        self.what = what


def _tokens(script: str) -> list[_Token]:
    found, pos, line = [], 0, 1
    while pos < len(script):
        match = _TOKEN.match(script, pos)
        if match is None:
            raise _Refused(line, f"unexpected character(s) starting with {script[pos]!r}")
        kind = match.lastgroup or ""
        if kind not in ("space", "newline", "hash", "block"):
            found.append(_Token("string" if kind == "text" else kind, match.group(), line))
        line += match.group().count("\n")
        pos = match.end()
    found.append(_Token("end", "", line))
    return found


class _Parser:
    """RFC 5228 8.2's grammar, noting each command and test used and each ``require``."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens, self.at = tokens, 0
        self.commands: list[_Token] = []
        self.tests: list[_Token] = []
        self.required: list[tuple[str, int]] = []

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def commands_until(self, closing: str) -> None:
        while not (self.peek().kind == "end" if not closing else self.peek().text == closing):
            if self.peek().kind == "end":
                raise _Refused(
                    self.peek().line, f"expected end of compound block '{closing}', but found end of file"
                )
            self.command()

    def command(self) -> None:
        name = self.take()
        if name.kind != "identifier":
            raise _Refused(name.line, f"expected command but found {name.text!r}")
        self.commands.append(name)
        strings = self.arguments()
        if name.text.lower() == "require":
            self.required.extend((value, name.line) for value in strings)
        end = self.take()
        if end.text == "{":
            self.commands_until("}")
            self.take()
        elif end.text != ";":
            found = "end of file" if end.kind == "end" else repr(end.text)
            raise _Refused(
                end.line,
                f"expected end of command ';' or the beginning of a compound block '{{', but found {found}",
            )

    def arguments(self) -> list[str]:
        strings: list[str] = []
        while True:
            token = self.peek()
            if token.kind in ("string", "number", "tag"):
                self.take()
                if token.kind == "string":
                    strings.append(token.text[1:-1])
            elif token.text == "[":
                self.take()
                while self.peek().text != "]":
                    item = self.take()
                    if item.kind != "string":
                        raise _Refused(item.line, "expected a string in a string list")
                    strings.append(item.text[1:-1])
                    if self.peek().text == ",":
                        self.take()
                self.take()
            elif token.kind == "identifier":
                self.test()
                return strings
            elif token.text == "(":
                self.take()
                self.test()
                while self.peek().text == ",":
                    self.take()
                    self.test()
                if self.take().text != ")":
                    raise _Refused(token.line, "expected ')' to end the test list")
                return strings
            else:
                return strings

    def test(self) -> None:
        name = self.take()
        if name.kind != "identifier":
            raise _Refused(name.line, f"expected test but found {name.text!r}")
        self.tests.append(name)
        self.arguments()


def verdict(script: str, offered: frozenset[str]) -> str:
    """``""`` where Pigeonhole would take ``script`` (the extensions ``offered``), else its refusal."""
    try:
        parser = _Parser(_tokens(script))
        parser.commands_until("")
    except _Refused as refused:
        return f"line {refused.line}: error: {refused.what}.\r\nerror: parse failed.\r\n"
    errors: list[str] = []
    commands, tests = set(_BASE_COMMANDS), set(_BASE_TESTS)
    for extension, line in parser.required:
        if extension.lower() not in offered:
            errors.append(f"line {line}: error: require command: unknown Sieve capability `{extension}'.")
            continue
        more_commands, more_tests = _EXTENSIONS.get(extension.lower(), (set(), set()))
        commands |= more_commands
        tests |= more_tests
    reported: set[str] = set()
    for kind, known, used in (("command", commands, parser.commands), ("test", tests, parser.tests)):
        for token in used:
            if token.text.lower() not in known and token.text not in reported:
                reported.add(token.text)
                errors.append(
                    f"line {token.line}: error: unknown {kind} '{token.text}' (only reported once at first occurrence)."
                )
    if not errors:
        return ""
    return "".join(f"{error}\r\n" for error in errors) + "error: validation failed.\r\n"
