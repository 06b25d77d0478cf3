"""The rules written here as Sieve text (RFC 5228), and back: pure functions, no server.

Rules live in a script of their own (:data:`OWN_SCRIPT`), which the user's active script includes
(``include``, RFC 6609) through one marked section (:data:`BEGIN` ... :data:`END`) put after its
``require`` lines; where the server has no ``include``, the rules themselves are that section, and the rest
of the user's script is kept byte for byte. Each rule is a comment line holding its settings as JSON
(:data:`RULE_LINE`) and its block, the block of a rule turned off commented out line by line
(:data:`OFF`); a script's text is read back into its rules, and one that does not render back to itself
was changed by hand (:class:`RulesEdited`): a conflict, never overwritten.

The versions before a change are kept in :data:`UNDO_SCRIPT`, a script of comments only (base64 of
compressed JSON), so that any server stores it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

from mail_imap_mcp.query.sieve import SieveCondition, quoted

#: The script holding the rules written here.
OWN_SCRIPT = "mail-imap-mcp"
#: The script keeping the versions before the last change (undo).
UNDO_SCRIPT = "mail-imap-mcp-undo"
HEADER = "# Rules of mail-imap-mcp: change them with its imap_manage_rules (a change by hand is refused).\n"
BEGIN = "# BEGIN mail-imap-mcp rules: kept by imap_manage_rules, the rest of this script is yours\n"
END = "# END mail-imap-mcp rules\n"
RULE_LINE = "# rule "
OFF = "#- "
UNDO_HEADER = (
    "# mail-imap-mcp: the scripts before the last change of imap_manage_rules (undo restores them)\n"
)
INCLUDE_SECTION = f'{BEGIN}require "include";\ninclude :personal {quoted(OWN_SCRIPT)};\n{END}'
_INDENT = "  "


class RulesEdited(ValueError):
    """The rules' script (or section) is not as written here: someone changed it by hand."""


#: An entry of ``senders`` that lets a vacation rule reply to anyone (allowed_recipients' ``*``).
ANYONE = "*"


@dataclass(frozen=True)
class Vacation:
    """A rule's auto-reply (RFC 5230): at most one reply in ``days`` days to a sender, and only to a sender
    among ``senders``, the account's allowed_recipients when the user approved it (``bob@example.org``,
    ``@example.org``, ``*.example.org``, or ``*``)."""

    subject: str
    text: str
    days: int
    senders: tuple[str, ...]

    def words(self) -> str:
        """What it does, in words."""
        whom = "anyone" if ANYONE in self.senders else ", ".join(self.senders)
        every = "a day" if self.days == 1 else f"in {self.days} days"
        return f"reply to mail from {whom} with {self.subject!r} (once {every} to each sender)"

    def statement(self) -> tuple[str, tuple[str, ...]]:
        """Its Sieve, inside a rule's block: ``vacation``, within a test that the sender, by the From
        header and by the envelope (where the reply goes), is one of :attr:`senders`; and the extensions
        that needs."""
        reply = f"vacation :days {self.days} :subject {quoted(self.subject)} {quoted(self.text)};"
        if ANYONE in self.senders:
            return reply, ("vacation",)
        test = f"allof(\n{_INDENT * 2}{_sender_test('address', self.senders)},\n"
        test += f"{_INDENT * 2}{_sender_test('envelope', self.senders)}\n{_INDENT})"
        return f"if {test} {{\n{_INDENT * 2}{reply}\n{_INDENT}}}", ("envelope", "vacation")


def _sender_test(kind: str, senders: tuple[str, ...]) -> str:
    """``kind`` (``address``: the From header; ``envelope``: the return path) is one of ``senders``."""
    addresses = [entry for entry in senders if not entry.startswith(("@", "*."))]
    domains = [entry[1:] for entry in senders if entry.startswith("@")]
    parents = [entry for entry in senders if entry.startswith("*.")]  # :matches' pattern, as written
    tests = [
        f'{kind}{part} "from" [{", ".join(quoted(value) for value in values)}]'
        for part, values in ((" :is", addresses), (" :domain :is", domains), (" :domain :matches", parents))
        if values
    ]
    return tests[0] if len(tests) == 1 else f"anyof({', '.join(tests)})"


@dataclass(frozen=True)
class Rule:
    """One rule: its ``query`` (the search tool's language) and what it does to a matching message."""

    name: str
    query: str
    mailbox: str | None = None
    add_flags: tuple[str, ...] = ()
    remove_flags: tuple[str, ...] = ()
    #: Filed into the account's Trash (``mailbox`` then names it): a discard that can be undone.
    discard: bool = False
    stop: bool = True
    enabled: bool = True
    #: Where a copy of each matching message is forwarded (a standing send: the user approved its text).
    redirect: tuple[str, ...] = ()
    #: Its auto-reply to allowed senders (a standing send: the user approved its text).
    vacation: Vacation | None = None
    #: The extensions its block needs.
    requires: tuple[str, ...] = ()

    def settings(self) -> dict[str, Any]:
        data = asdict(self)
        data["add_flags"], data["remove_flags"] = list(self.add_flags), list(self.remove_flags)
        data["requires"] = list(self.requires)
        data["redirect"] = list(self.redirect)
        if not self.redirect:
            del data["redirect"]
        if self.vacation is None:
            del data["vacation"]
        else:
            data["vacation"]["senders"] = list(self.vacation.senders)
        return data

    @classmethod
    def of(cls, data: dict[str, Any]) -> Rule:
        """The rule of its settings (as :meth:`settings` wrote them; other keys are left)."""
        try:
            return cls(
                name=str(data["name"]),
                query=str(data["query"]),
                mailbox=None if data.get("mailbox") is None else str(data["mailbox"]),
                add_flags=tuple(str(flag) for flag in data.get("add_flags", ())),
                remove_flags=tuple(str(flag) for flag in data.get("remove_flags", ())),
                discard=bool(data.get("discard", False)),
                stop=bool(data.get("stop", True)),
                enabled=bool(data.get("enabled", True)),
                requires=tuple(str(name) for name in data.get("requires", ())),
                redirect=tuple(str(address) for address in data.get("redirect", ())),
                vacation=_vacation_of(data.get("vacation")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RulesEdited(f"a rule's settings cannot be read ({exc})") from None

    def actions(self) -> list[str]:
        """What it does, in words."""
        done = []
        if self.add_flags:
            done.append(f"add flags {', '.join(self.add_flags)}")
        if self.remove_flags:
            done.append(f"remove flags {', '.join(self.remove_flags)}")
        if self.redirect:
            done.append(f"forward a copy to {', '.join(self.redirect)}")
        if self.vacation is not None:
            done.append(self.vacation.words())
        if self.mailbox is not None:
            done.append(f"move to Trash ({self.mailbox})" if self.discard else f"file into {self.mailbox}")
        if self.stop:
            done.append("stop")
        return done


def _vacation_of(data: Any) -> Vacation | None:
    if data is None:
        return None
    return Vacation(
        str(data["subject"]),
        str(data["text"]),
        int(data["days"]),
        tuple(str(entry) for entry in data["senders"]),
    )


@dataclass(frozen=True)
class WrittenRule:
    """A rule and its Sieve block, as the script holds it (the block as compiled when it was saved)."""

    rule: Rule
    block: str


def compile_rule(rule: Rule, condition: SieveCondition) -> WrittenRule:
    """``rule`` with its block: ``if <condition> { flags; fileinto; stop; }``."""
    requires = set(condition.requires)
    lines = []
    if rule.add_flags:
        requires.add("imap4flags")
        lines.append(f"addflag [{', '.join(quoted(flag) for flag in rule.add_flags)}];")
    if rule.remove_flags:
        requires.add("imap4flags")
        lines.append(f"removeflag [{', '.join(quoted(flag) for flag in rule.remove_flags)}];")
    for address in rule.redirect:
        requires.add("copy")
        lines.append(f"redirect :copy {quoted(address)};")
    if rule.vacation is not None:
        statement, needs = rule.vacation.statement()
        requires.update(needs)
        lines.append(statement)
    if rule.mailbox is not None:
        requires.add("fileinto")
        lines.append(f"fileinto {quoted(rule.mailbox)};")
    if rule.stop:
        lines.append("stop;")
    body = "".join(f"{_INDENT}{line}\n" for line in lines)
    kept = Rule(**{**rule.__dict__, "requires": tuple(sorted(requires))})
    return WrittenRule(kept, f"if {condition.test} {{\n{body}}}\n")


def _rules_text(rules: list[WrittenRule]) -> str:
    requires = sorted({name for written in rules if written.rule.enabled for name in written.rule.requires})
    text = f"require [{', '.join(quoted(name) for name in requires)}];\n" if requires else ""
    for written in rules:
        settings = {**written.rule.settings(), "digest": digest(written.block)}
        text += RULE_LINE + json.dumps(settings, ensure_ascii=True, sort_keys=True) + "\n"
        if written.rule.enabled:
            text += written.block
        else:
            text += "".join(OFF + line for line in written.block.splitlines(keepends=True))
    return text


def own_script(rules: list[WrittenRule]) -> str:
    """The text of :data:`OWN_SCRIPT` holding ``rules``."""
    return HEADER + _rules_text(rules)


def section(rules: list[WrittenRule]) -> str:
    """The marked section holding ``rules`` in the user's script (a server without ``include``)."""
    return BEGIN + _rules_text(rules) + END


def _read_rules(text: str) -> list[WrittenRule]:
    lines = text.splitlines(keepends=True)
    if lines and lines[0].startswith("require "):
        lines = lines[1:]
    rules: list[tuple[Rule, list[str], object]] = []
    for line in lines:
        if line.startswith(RULE_LINE):
            try:
                settings = json.loads(line[len(RULE_LINE) :])
            except ValueError:
                raise RulesEdited("a rule's settings line is not JSON") from None
            if not isinstance(settings, dict):
                raise RulesEdited("a rule's settings line is not an object")
            rules.append((Rule.of(settings), [], settings.get("digest")))
        elif rules:
            off = not rules[-1][0].enabled
            if off and not line.startswith(OFF):
                raise RulesEdited("a line of a rule turned off is not commented out")
            rules[-1][1].append(line[len(OFF) :] if off else line)
        else:
            raise RulesEdited("a line before the first rule")
    written = [WrittenRule(rule, "".join(block)) for rule, block, _ in rules]
    if any(digest(rule.block) != kept for rule, (_, _, kept) in zip(written, rules, strict=True)):
        raise RulesEdited("a rule's Sieve was changed by hand")
    return written


def read_own_script(text: str) -> list[WrittenRule]:
    """The rules of :data:`OWN_SCRIPT`; :class:`RulesEdited` where it is not as written here."""
    if not text.startswith(HEADER):
        raise RulesEdited(f"the script {OWN_SCRIPT!r} does not start with its header")
    rules = _read_rules(text[len(HEADER) :])
    if own_script(rules) != text:
        raise RulesEdited(f"the script {OWN_SCRIPT!r} was changed by hand")
    return rules


def find_section(script: str) -> tuple[int, int] | None:
    """Where the marked section is in ``script`` (start, end), or None."""
    start = script.find(BEGIN)
    if start < 0 or (start > 0 and script[start - 1] != "\n"):
        return None
    end = script.find(END, start)
    if end < 0:
        raise RulesEdited("the marked section of the rules has no end line")
    return start, end + len(END)


def read_section(script: str) -> list[WrittenRule] | None:
    """The rules of the marked section of ``script`` (None: it has none; [] with the include only)."""
    where = find_section(script)
    if where is None:
        return None
    text = script[where[0] : where[1]]
    if text == INCLUDE_SECTION:
        return []
    rules = _read_rules(text[len(BEGIN) : -len(END)])
    if section(rules) != text:
        raise RulesEdited("the marked section of the rules was changed by hand")
    return rules


def with_section(script: str, new: str) -> str:
    """``script`` with its marked section replaced by ``new``, or ``new`` put after its ``require``
    commands; every other byte of it kept as it was."""
    where = find_section(script)
    if where is not None:
        return script[: where[0]] + new + script[where[1] :]
    at = after_requires(script)
    head = script[:at]
    if head and not head.endswith("\n"):
        return head + "\n" + new + script[at:]
    return head + new + script[at:]


def after_requires(script: str) -> int:
    """Where the script's leading ``require`` commands (and the comments between them) end: after the line
    of the last one, or 0 where it has none."""
    pos, end, found = 0, 0, False
    size = len(script)
    while pos < size:
        char = script[pos]
        if char.isspace():
            pos += 1
        elif char == "#":
            newline = script.find("\n", pos)
            pos = size if newline < 0 else newline + 1
        elif script.startswith("/*", pos):
            close = script.find("*/", pos + 2)
            pos = size if close < 0 else close + 2
        elif script[pos : pos + 7].lower() == "require" and (
            pos + 7 >= size or not script[pos + 7].isalnum()
        ):
            pos = _statement_end(script, pos + 7)
            found, end = True, pos
            rest = script.find("\n", pos)
            if rest >= 0 and not script[pos:rest].strip():
                end = pos = rest + 1
        else:
            break
    return end if found else 0


def _statement_end(script: str, pos: int) -> int:
    """The position after the ``;`` ending the statement from ``pos`` (quoted strings skipped)."""
    quoted_string = False
    while pos < len(script):
        char = script[pos]
        if quoted_string:
            if char == "\\":
                pos += 1
            elif char == '"':
                quoted_string = False
        elif char == '"':
            quoted_string = True
        elif char == ";":
            return pos + 1
        pos += 1
    return pos


def digest(text: str | None) -> str | None:
    """A script's fingerprint (None: no such script)."""
    return None if text is None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class UndoRecord:
    """The scripts before a change (``before``: name -> text, None where none was), which was active,
    and each changed script's fingerprint after it (``after``): undo restores ``before`` while the
    scripts are still as ``after`` says."""

    before: dict[str, str | None]
    active: str | None
    after: dict[str, str | None] = field(default_factory=dict)
    change: str = ""

    def text(self) -> str:
        data = json.dumps(
            {"before": self.before, "active": self.active, "after": self.after, "change": self.change},
            ensure_ascii=True,
            sort_keys=True,
        )
        encoded = base64.b64encode(zlib.compress(data.encode(), 9)).decode()
        return UNDO_HEADER + "".join(f"# {encoded[i : i + 76]}\n" for i in range(0, len(encoded), 76))

    @classmethod
    def of(cls, text: str) -> UndoRecord:
        if not text.startswith(UNDO_HEADER):
            raise RulesEdited(f"the script {UNDO_SCRIPT!r} does not start with its header")
        encoded = "".join(line.removeprefix("# ") for line in text[len(UNDO_HEADER) :].splitlines())
        try:
            data = json.loads(zlib.decompress(base64.b64decode(encoded, validate=True)))
            return cls(data["before"], data["active"], data["after"], data.get("change", ""))
        except (ValueError, KeyError, TypeError, zlib.error):
            raise RulesEdited(f"the script {UNDO_SCRIPT!r} cannot be read") from None


__all__ = [
    "ANYONE",
    "BEGIN",
    "END",
    "INCLUDE_SECTION",
    "OWN_SCRIPT",
    "UNDO_SCRIPT",
    "Rule",
    "RulesEdited",
    "UndoRecord",
    "Vacation",
    "WrittenRule",
    "after_requires",
    "compile_rule",
    "digest",
    "find_section",
    "own_script",
    "read_own_script",
    "read_section",
    "section",
    "with_section",
]
