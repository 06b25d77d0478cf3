"""What keeps one tool result within what a client accepts.

Claude Code refuses a tool result over 25,000 tokens (its default ``MAX_MCP_OUTPUT_TOKENS``): a result of
at most :data:`RESULT_MAX_CHARS` characters (about 20,000 tokens) stays within it. Windows (a body, an
attachment's text, raw bytes) are bounded by their arguments' maxima; what a window cannot bound (a page
of a hundred long subjects, a thousand headers) is cut here, the longest texts first and evenly, each cut
marked, so that the answer still lists everything and says where the whole of it is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from mail_imap_mcp.content.text import truncate
from mail_imap_mcp.envelope import ToolResult

#: The most characters of one tool result (the envelope's JSON text): about 20,000 tokens.
RESULT_MAX_CHARS = 80_000
#: What ``data`` and the warnings may take of it; the rest is the envelope's summary and meta.
DATA_MAX_CHARS = RESULT_MAX_CHARS - 2_000
#: The most characters of JSON one window of text takes (60,000 characters of text but for escapes: a
#: text of quotes or backslashes doubles in JSON).
TEXT_WINDOW_JSON_MAX = 70_000
#: The texts of a message summary that a long page shortens, in the order they are cut evenly.
SUMMARY_TEXTS = ("snippet", "subject", "from_", "to", "cc")
ELLIPSIS = "…"
#: Rounds of cutting: JSON escapes (a line break is two characters) can leave a cut short of its aim.
_ROUNDS = 6


@dataclass(frozen=True)
class Cuttable:
    """One text that may be shortened: how to read it and how to put its shorter form back."""

    read: Callable[[], str | None]
    write: Callable[[str], None]


def json_chars(value: Any) -> int:
    """The characters of ``value`` (a model, or plain data that may hold models, e.g. a list of issues)
    as the envelope serializes it."""
    if isinstance(value, BaseModel):  # pydantic's own JSON: the same characters, several times faster
        return len(value.model_dump_json(by_alias=True))
    plain = to_jsonable_python(value, by_alias=True)
    return len(json.dumps(plain, ensure_ascii=False, separators=(",", ":")))


def result_chars(result: ToolResult[Any]) -> int:
    """What ``data`` and the warnings of ``result`` take of the envelope."""
    return json_chars(result.data) + json_chars(result.warnings)


def json_prefix(text: str, most: int) -> str:
    """The longest start of ``text`` (cut as :func:`truncate` cuts) whose JSON takes at most ``most``."""
    while (size := json_chars(text) - 2) > most:
        text = truncate(text, len(text) * most // size)[0]
    return text


def even_cap(lengths: Sequence[int], room: int) -> int:
    """The largest length ``cap`` such that texts of ``lengths``, each cut to ``cap``, take at most ``room``."""
    remaining, count = room, len(lengths)
    for index, length in enumerate(sorted(lengths)):
        if length * (count - index) > remaining:
            return remaining // (count - index)
        remaining -= length
    return max(lengths, default=0)


def fit(size: Callable[[], int], texts: Sequence[Cuttable], limit: int, *, mark: str = "") -> bool:
    """Shorten the longest of ``texts`` evenly until ``size()`` is at most ``limit`` (or nothing is left of
    them); each shortened text ends with ``mark``. True when any was shortened."""
    shortened = False
    for _ in range(_ROUNDS):
        excess = size() - limit
        values = [text.read() or "" for text in texts]
        # Lengths as serialized (escapes included), so that the cut aims at what the result holds.
        lengths = [json_chars(value) - 2 for value in values]
        if excess <= 0 or not any(lengths):
            break
        cap = even_cap(lengths, max(sum(lengths) - excess, 0))
        for text, value, length in zip(texts, values, lengths, strict=True):
            if length > cap:
                kept = truncate(value, max(cap * len(value) // length - len(mark), 0))[0]
                text.write(kept + mark if kept else "")
                shortened = True
    return shortened


def leading_that_fit(items: Sequence[BaseModel], room: int) -> int:
    """How many of ``items``, from the first, take at most ``room`` characters of a result's JSON."""
    taken = 0
    for count, item in enumerate(items):
        taken += json_chars(item) + 1
        if taken > room:
            return count
    return len(items)


def attribute_texts(items: Iterable[object], names: Sequence[str]) -> list[Cuttable]:
    """The string attributes ``names`` of each of ``items`` (where it has them) as texts to cut."""

    def cuttable(item: object, name: str) -> Cuttable:
        return Cuttable(lambda: getattr(item, name), lambda text: setattr(item, name, text))

    return [
        cuttable(item, name) for item in items for name in names if isinstance(getattr(item, name, None), str)
    ]


def mapping_texts(values: dict[str, str]) -> list[Cuttable]:
    """The values of ``values`` (e.g. a message's headers) as texts to cut."""

    def cuttable(key: str) -> Cuttable:
        return Cuttable(lambda: values[key], lambda text: values.__setitem__(key, text))

    return [cuttable(key) for key in values]


def fit_summaries(result: ToolResult[Any], attribute: str) -> None:
    """Keep a page of message summaries (``result.data.<attribute>``) within the result's bound: the
    longest snippets, subjects and addresses are shortened evenly, every message still listed."""
    summaries = getattr(result.data, attribute, None) or []
    texts = attribute_texts(summaries, SUMMARY_TEXTS)
    if fit(lambda: result_chars(result), texts, DATA_MAX_CHARS - 300, mark=ELLIPSIS):
        result.warnings.append(
            f"Long snippets, subjects and addresses were shortened ({ELLIPSIS}) to keep this answer within "
            f"{RESULT_MAX_CHARS:,} characters; imap_get_message reads a message whole."
        )
