"""iCalendar text (RFC 5545 section 3.1) read and written as content lines; pure, bounded, no dependency.

Reading unfolds lines, splits each into its name, parameters (quoted values kept whole) and raw value, and
nests ``BEGIN``/``END`` into components; anything unbalanced or beyond the bounds is a ``ValueError``.
Writing escapes TEXT values (backslash, semicolon, comma, newline), quotes parameter values that need it
(control characters and double quotes dropped: they cannot be written, RFC 5545 3.2), and folds each line
at 75 octets without splitting a UTF-8 sequence. The invitation parser of the sandboxed extraction child
(``_calendar.py``, icalendar) only reads; an answer is written here so that no third-party code handles
it in the server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

#: At most this many content lines, this deep nesting and this long an unfolded line.
MAX_LINES = 20_000
MAX_DEPTH = 8
MAX_LINE_CHARS = 20_000
#: Octets of a line before it is folded (RFC 5545 3.1: "SHOULD NOT be longer than 75 octets").
FOLD_OCTETS = 75
_NAME = re.compile(r"[A-Za-z0-9-]+")
_PARAM_UNSAFE = re.compile(r'[\x00-\x08\x0a-\x1f\x7f"]')
_TEXT_ESCAPES = {"\\": "\\\\", ";": "\\;", ",": "\\,", "\n": "\\n"}
_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Line:
    """One content line: its name upper-cased, its parameters (names upper-cased, values without their
    quotes), and its value as written (TEXT values still escaped)."""

    name: str
    params: tuple[tuple[str, tuple[str, ...]], ...] = ()
    value: str = ""

    def param(self, name: str) -> str | None:
        """The first value of parameter ``name``, or None."""
        for key, values in self.params:
            if key == name.upper():
                return values[0] if values else ""
        return None

    def with_param(self, name: str, value: str | None) -> Line:
        """This line with parameter ``name`` set to ``value`` (left out when None), in its place."""
        key = name.upper()
        kept = [(k, v) for k, v in self.params if k != key]
        if value is not None:
            at = next((i for i, (k, _) in enumerate(self.params) if k == key), len(kept))
            kept.insert(min(at, len(kept)), (key, (value,)))
        return Line(self.name, tuple(kept), self.value)


@dataclass
class Component:
    """A ``BEGIN:NAME`` .. ``END:NAME`` block: its own lines and its components, in order."""

    name: str
    lines: list[Line] = field(default_factory=list)
    children: list[Component] = field(default_factory=list)

    def first(self, name: str) -> Line | None:
        return next((line for line in self.lines if line.name == name), None)

    def every(self, name: str) -> list[Line]:
        return [line for line in self.lines if line.name == name]

    def components(self, name: str) -> list[Component]:
        return [child for child in self.children if child.name == name]


def _unfolded(text: str) -> Iterator[str]:
    """The logical lines of ``text``: a line starting with a space or tab continues the one before."""
    current: str | None = None
    count = 0
    for physical in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if physical[:1] in (" ", "\t") and current is not None:
            current += physical[1:]
            if len(current) > MAX_LINE_CHARS:
                raise ValueError(f"a content line is longer than {MAX_LINE_CHARS} characters")
            continue
        if current:
            yield current
        count += 1
        if count > MAX_LINES:
            raise ValueError(f"more than {MAX_LINES} content lines")
        current = physical
    if current:
        yield current


def _split_values(text: str) -> tuple[str, ...]:
    values: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            values.append("".join(current))
            current = []
        else:
            current.append(char)
    values.append("".join(current))
    return tuple(values)


def parse_line(text: str) -> Line:
    """One unfolded content line; ``ValueError`` when it has no name or no ``:``."""
    match = _NAME.match(text)
    if match is None:
        raise ValueError(f"not a content line: {text[:60]!r}")
    name, at = match.group().upper(), match.end()
    params: list[tuple[str, tuple[str, ...]]] = []
    while at < len(text) and text[at] == ";":
        key = _NAME.match(text, at + 1)
        if key is None or key.end() >= len(text) or text[key.end()] != "=":
            raise ValueError(f"a malformed parameter in {name}")
        at = start = key.end() + 1
        quoted = False
        while at < len(text) and (quoted or text[at] not in ";:"):
            quoted = quoted != (text[at] == '"')
            at += 1
        params.append((key.group().upper(), _split_values(text[start:at])))
    if at >= len(text) or text[at] != ":":
        raise ValueError(f"{name} has no value")
    return Line(name, tuple(params), text[at + 1 :])


def parse(text: str) -> list[Component]:
    """The top-level components of ``text`` (usually one VCALENDAR); ``ValueError`` when it is not
    iCalendar text, or nests beyond :data:`MAX_DEPTH`."""
    top: list[Component] = []
    stack: list[Component] = []
    for unfolded in _unfolded(text):
        line = parse_line(unfolded)
        if line.name == "BEGIN":
            if len(stack) == MAX_DEPTH:
                raise ValueError(f"components nest deeper than {MAX_DEPTH}")
            component = Component(line.value.strip().upper())
            (stack[-1].children if stack else top).append(component)
            stack.append(component)
        elif line.name == "END":
            if not stack or stack[-1].name != line.value.strip().upper():
                raise ValueError(f"END:{line.value[:40]} does not close the open component")
            stack.pop()
        elif stack:
            stack[-1].lines.append(line)
        else:
            raise ValueError(f"{line.name} outside any component")
    if stack or not top:
        raise ValueError("the calendar is not closed" if stack else "no calendar component")
    return top


def unescape_text(value: str) -> str:
    """A TEXT value as it reads (RFC 5545 3.3.11)."""
    out, escaped = [], False
    for char in value:
        if escaped:
            out.append("\n" if char in "nN" else char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    return "".join(out)


def escape_text(value: str) -> str:
    """``value`` as a TEXT value: backslash, semicolon, comma and line breaks escaped, other control
    characters left out."""
    value = _TEXT_CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))
    return "".join(_TEXT_ESCAPES.get(char, char) for char in value)


def _param_value(value: str) -> str:
    value = _PARAM_UNSAFE.sub("", value)
    return f'"{value}"' if any(char in value for char in ";:,") else value


def fold(line: str) -> str:
    """``line`` folded into physical lines of at most :data:`FOLD_OCTETS` octets (UTF-8), CRLF-ended;
    a continuation starts with a space."""
    pieces: list[str] = []
    current: list[str] = []
    size, limit = 0, FOLD_OCTETS
    for char in line:
        octets = len(char.encode("utf-8"))
        if size + octets > limit:
            pieces.append("".join(current))
            current, size, limit = [], 0, FOLD_OCTETS - 1
        current.append(char)
        size += octets
    pieces.append("".join(current))
    return "\r\n ".join(pieces) + "\r\n"


def write_line(line: Line) -> str:
    """``line`` as folded text (its value written as it is: escape TEXT with :func:`escape_text`)."""
    params = "".join(
        f";{name}={','.join(_param_value(value) for value in values)}" for name, values in line.params
    )
    return fold(f"{line.name}{params}:{line.value}")


def write(components: Sequence[Component]) -> str:
    """``components`` as iCalendar text, CRLF line ends."""
    out: list[str] = []
    for component in components:
        out.append(write_line(Line("BEGIN", (), component.name)))
        out += [write_line(line) for line in component.lines]
        out.append(write(component.children))
        out.append(write_line(Line("END", (), component.name)))
    return "".join(out)
