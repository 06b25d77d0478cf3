"""What the user is asked to approve, as one generic request (:class:`Review`): a title, every field on its
own line, the full content, and the question text a client shows (MCP elicitation), which the approval is
bound to. It knows no mail: a renderer (``services/send_review.py`` for a message to send) fills it in.

The question is plain text meant to read the same whether a client shows it as it is or as Markdown: the
fields, and each content whole, are shown between code fences (inside, Markdown means nothing and every
line stays a line),
and every character that changes how text reads without being seen (control, bidirectional and zero-width
characters, invisible fillers) is written out as ``\\xNN`` or ``\\uNNNN``, so what the user reads is what
goes out. Field values are one line each; content keeps its lines and tabs.
"""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["QUESTION_MAX_CHARS", "Review", "ReviewContent", "ReviewField", "ReviewWords", "visible"]

#: The most characters of content a client's question is trusted to show whole (MCP elicitation has no
#: size field; a longer content is approved on the page, or not at all).
QUESTION_MAX_CHARS = 4_000
#: Letters that draw nothing (Hangul fillers, the braille blank): a word of them reads as a blank.
_INVISIBLE = frozenset({0x115F, 0x1160, 0x2800, 0x3164, 0xFFA0})
_FENCE = re.compile(r"`{3,}")


def _fenced(lines: list[str]) -> list[str]:
    """``lines`` between code fences longer than any run of backticks in them: Markdown means nothing
    inside, and each line stays a line."""
    longest = max((len(run) for line in lines for run in _FENCE.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence]


def _hidden(char: str, keep_lines: bool) -> bool:
    if keep_lines and char in "\n\t":
        return False
    category = unicodedata.category(char)
    return category in ("Cc", "Cf", "Zl", "Zp") or ord(char) in _INVISIBLE


def visible(text: str, *, keep_lines: bool = False) -> str:
    """``text`` with every invisible or reordering character written out (``\\x0a``, ``\\u202e``); line
    breaks (CRLF, CR or LF) kept as ``\\n`` when ``keep_lines``, else escaped like the rest."""
    if keep_lines:
        text = text.replace("\r\n", "\n")
    out = []
    for char in text:
        if _hidden(char, keep_lines):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


class ReviewField(BaseModel):
    """One field the user must see (a recipient list, the subject): each value on a line of its own."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    values: list[str] = Field(default=[], description="Each shown on its own line, after the label.")
    empty: str = Field(default="-", description="What is shown when there is no value.")
    listed: bool = Field(
        default=False,
        description="The label on a line of its own, once, and each value below it, indented (a list of "
        "rows, not each a value of the label: a recipient's line says To: on each).",
    )

    def lines(self) -> list[str]:
        if not self.values:
            return [f"{self.label}: {self.empty}"]
        if self.listed:
            return [f"{self.label}:", *(f"  {visible(value)}" for value in self.values)]
        return [f"{self.label}: {visible(value)}" for value in self.values]


class ReviewContent(BaseModel):
    """One content shown whole, with its lines (a message's text, an HTML part as a reader sees it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    text: str

    def lines(self) -> list[str]:
        shown = visible(self.text, keep_lines=True).splitlines()
        count, lines = len(self.text), len(shown)
        fenced = _fenced(shown)
        return [
            f"{self.label} ({count:,} characters, {lines:,} line{'' if lines == 1 else 's'}), whole between "
            f"the {fenced[0]} lines:",
            *fenced,
        ]


class ReviewWords(BaseModel):
    """What the agent is told of each way a request can end without the user's approval (a failure's
    message), in the request's terms; ``{decision}`` and ``{reason}`` are filled in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    asking: str = "The user is asked to approve this."
    declined: str = "The user did not approve it ({decision}); nothing was done."
    #: What a decline is called in the failure's ``details.approval`` (and its ``{decision}``).
    declined_as: str = "declined"
    cancelled: str = (
        "It was cancelled (imap_cancel_operation) before the user decided; the approval page was closed and "
        "nothing was done."
    )
    opened_twice: str = (
        "The approval page was opened a second time (a reload, a restored tab, or someone else with its "
        "address), which cancels it: the user did not decline, and nothing was done. Call again to show the "
        "user a new page."
    )
    unavailable: str = (
        "This needs the user's approval, and this client cannot ask the user (it does not support MCP "
        "elicitation) and no approval page could be shown: nothing was done."
    )
    page_only_unavailable: str = (
        "This needs the user's approval of all of it, shown whole: {reason}, so only the approval page can "
        "show it, and no approval page could be shown (it opens only for a stdio server, in the browser of "
        "the user's desktop): nothing was done."
    )


class Review(BaseModel):
    """A request for the user's approval: what is asked, every field and the full content, the route
    rule's answer (``page_only``: why the client's question cannot show it, so only a page may ask) and
    what the agent is told when it is not approved (``words``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(description="What will happen, as the question's first line (ends with ':').")
    fields: list[ReviewField] = []
    contents: list[ReviewContent] = []
    closing: str = Field(description="The question's last line, without its question mark.")
    page_only: str | None = Field(
        default=None, description="Why this cannot be asked in the client's question; None when it can."
    )
    words: ReviewWords = ReviewWords()

    def question(self) -> str:
        """The text the user reads and approves (the approval is bound to exactly it)."""
        lines = [visible(self.title), *_fenced([line for field in self.fields for line in field.lines()])]
        for content in self.contents:
            lines += content.lines()
        lines.append(visible(self.closing))
        return "\n".join(lines)
