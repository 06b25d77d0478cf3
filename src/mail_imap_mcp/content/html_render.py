"""HTML written out as readable plain text or Markdown (line-oriented, on top of :class:`.html_walker.Walker`)."""

from __future__ import annotations

from dataclasses import dataclass

from .html_walker import HEADINGS, OpenElement, Walker, attribute, safe_url, tag_set
from .text import INVISIBLE

__all__ = ["TextRenderer"]

_BLOCK_LINE = tag_set(
    "address article aside caption center dd details div dl dt fieldset figcaption figure footer form "
    "header main nav section summary table tbody tfoot thead tr"
)
_BLOCK_PARAGRAPH = frozenset({"p", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6"})
_MAX_CAPTURE_PIECES = 2000


@dataclass(slots=True)
class _Capture:
    """Start of an inline span whose output is rewritten when it closes (links, emphasis)."""

    start: int
    href: str | None = None
    marker: str = ""


@dataclass(slots=True)
class _ListState:
    ordered: bool
    counter: int


class TextRenderer(Walker):
    """Line-oriented text/Markdown writer driven by the walker."""

    def __init__(self, *, markdown: bool) -> None:
        self.markdown = markdown
        self.pieces: list[str] = []
        self.started = False
        self.at_line_start = True
        self.line_dirty = False
        self.pending_breaks = 0
        self.pending_space = False
        self.pending_separator = False
        self.pending_marker = ""
        self.marker_is_bullet = False
        self.quote_depth = 0
        self.pre_depth = 0
        self.lists: list[_ListState] = []

    def render(self, html: str) -> str:
        if not html:
            return ""
        self.run(html)
        return _finish("".join(self.pieces))

    # -- writer primitives -----------------------------------------------------
    def _break(self, count: int) -> None:
        self.pending_breaks = max(self.pending_breaks, count)

    def _line_prefix(self) -> str:
        prefix = "> " * self.quote_depth
        depth = len(self.lists)
        if self.pending_marker and self.marker_is_bullet:
            prefix += "  " * max(depth - 1, 0) + self.pending_marker
        else:
            prefix += "  " * depth + self.pending_marker
        self.pending_marker = ""
        return prefix

    def _flush(self) -> None:
        """Emit pending line breaks, line prefix and inter-word spacing before content."""
        if self.pending_breaks and self.started:
            self.pieces.append("\n" * min(self.pending_breaks, 2))
            self.at_line_start = True
        self.pending_breaks = 0
        if self.at_line_start:
            prefix = self._line_prefix()
            if prefix:
                self.pieces.append(prefix)
            self.at_line_start = self.line_dirty = False
            self.pending_space = self.pending_separator = False
        elif self.line_dirty:
            if self.pending_separator:
                self.pieces.append(" | ")
                self.pending_space = self.pending_separator = False
            if self.pending_space:
                self.pieces.append(" ")
                self.pending_space = False
        self.started = True

    def _write(self, text: str) -> None:
        self._flush()
        self.pieces.append(text)
        self.line_dirty = True

    def _inline_text(self, data: str) -> None:
        data = data.translate(INVISIBLE)
        if not data:
            return
        words = [word for word in data.split() if word.strip("\u200c\u200d")]
        if not words:
            if data[0].isspace() or data[-1].isspace():
                self.pending_space = True
            return
        if data[0].isspace():
            self.pending_space = True
        self._write(" ".join(words))
        if data[-1].isspace():
            self.pending_space = True

    def _pre_text(self, data: str) -> None:
        # (The parser has already dropped the newline that directly follows <pre>, as browsers do.)
        data = data.replace("\r\n", "\n").replace("\r", "\n")
        for index, line in enumerate(data.split("\n")):
            if index and self.started:
                self.pending_breaks = min(self.pending_breaks + 1, 2)
            if line:
                self._write(line.translate(INVISIBLE))

    def _capture(self, element: OpenElement, capture: _Capture) -> None:
        self._flush()
        capture.start = len(self.pieces)
        element.state = capture

    # -- walker hooks ----------------------------------------------------------
    def visible_gap(self) -> None:
        self.pending_space = True

    def visible_data(self, data: str) -> None:
        if self.pre_depth:
            self._pre_text(data)
        else:
            self._inline_text(data)

    def visible_void(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.pending_breaks = min(self.pending_breaks + 1, 2) if self.started else 0
            self.pending_space = False
        elif tag == "hr":
            self._break(2)
            self._write("---")
            self._break(2)
        elif tag == "img":
            alt = (attribute(attrs, "alt") or "").strip()
            if alt:
                self._inline_text(alt)

    def visible_start(self, tag: str, attrs: list[tuple[str, str | None]], element: OpenElement) -> None:
        if tag in _BLOCK_PARAGRAPH:
            self._break(2)
        elif tag in _BLOCK_LINE:
            self._break(1)
        if tag == "blockquote":
            self.quote_depth += 1
        elif tag == "pre":
            self.pre_depth += 1
            if self.markdown and self.pre_depth == 1:
                self._write("```")
                self._break(1)
        elif tag in HEADINGS and self.markdown:
            self.pending_marker = "#" * int(tag[1]) + " "
            self.marker_is_bullet = False
        elif tag in ("ul", "ol", "menu"):
            self._break(1 if self.lists else 2)
            start = (attribute(attrs, "start") or "1").strip()
            # ASCII digits, as a browser reads them (int() takes other scripts' digits, and refuses "²")
            number = start.isascii() and start.isdigit() and len(start) < 10
            self.lists.append(_ListState(tag == "ol", int(start) if number else 1))
        elif tag == "li":
            self._break(1)
            state = self.lists[-1] if self.lists else None
            if state is not None and state.ordered:
                self.pending_marker = f"{state.counter}. "
                state.counter += 1
            else:
                self.pending_marker = "- "
            self.marker_is_bullet = True
        elif tag in ("td", "th"):
            if self.line_dirty and not self.at_line_start and not self.pending_breaks:
                self.pending_separator = True
        elif tag == "a":
            href = safe_url(attribute(attrs, "href") or "")
            self._capture(element, _Capture(0, href=href))
        elif self.markdown:
            marker = _md_marker(tag, self.pre_depth)
            if marker:
                self._capture(element, _Capture(0, marker=marker))

    def visible_end(self, element: OpenElement) -> None:
        tag = element.tag
        if isinstance(element.state, _Capture):
            self._close_capture(element.state)
        if tag == "pre":
            self.pre_depth = max(self.pre_depth - 1, 0)
            if self.markdown and self.pre_depth == 0:
                self._break(1)
                self._write("```")
        if tag in _BLOCK_PARAGRAPH or tag in ("ul", "ol", "menu"):
            self._break(2 if not (tag in ("ul", "ol", "menu") and len(self.lists) > 1) else 1)
        elif tag in _BLOCK_LINE or tag == "li":
            self._break(1)
        if tag == "blockquote":
            self.quote_depth = max(self.quote_depth - 1, 0)
        elif tag in ("ul", "ol", "menu") and self.lists:
            self.lists.pop()
        if tag == "li" or tag in HEADINGS:
            self.pending_marker = ""

    def _close_capture(self, capture: _Capture) -> None:
        if len(self.pieces) - capture.start > _MAX_CAPTURE_PIECES:
            # Rewriting huge or deeply nested spans would be quadratic; leave them plain.
            if capture.href and not self.markdown:
                self.pieces.append(f" ({capture.href})")
            return
        inner = "".join(self.pieces[capture.start :])
        label = inner.strip()
        lead = inner[: len(inner) - len(inner.lstrip())]
        trail = inner[len(inner.rstrip()) :]
        if capture.marker:
            if label and "\n" not in inner:
                self.pieces[capture.start :] = [lead, capture.marker, label, capture.marker, trail]
            return
        url = capture.href
        if not url:
            return
        if self.markdown:
            if "\n" in inner:
                return
            target = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
            if not label or _same_link(label, url):
                if target.lower().startswith("mailto:"):
                    target = target[len("mailto:") :]
                self.pieces[capture.start :] = [lead, f"<{target}>", trail]
            else:
                text = label.replace("[", "\\[").replace("]", "\\]")
                self.pieces[capture.start :] = [lead, f"[{text}]({target})", trail]
        elif not label:
            self._write(url)
        elif not _same_link(label, url):
            self.pieces.append(f" ({url})")


def _md_marker(tag: str, pre_depth: int) -> str:
    if tag in ("b", "strong"):
        return "**"
    if tag in ("i", "em"):
        return "_"
    if tag in ("s", "strike", "del"):
        return "~~"
    if tag in ("code", "kbd", "tt", "samp") and not pre_depth:
        return "`"
    return ""


def _same_link(label: str, url: str) -> bool:
    def norm(value: str) -> str:
        value = value.strip().lower()
        for prefix in ("mailto:", "https://", "http://", "www."):
            if value.startswith(prefix):
                value = value[len(prefix) :]
        return value.rstrip("/")

    return norm(label) == norm(url)


def _finish(text: str) -> str:
    lines: list[str] = []
    for line in text.split("\n"):
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)
