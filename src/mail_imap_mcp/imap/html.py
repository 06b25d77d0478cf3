"""HTML message bodies: allowlist sanitising and conversion to plain text or Markdown.

Pure functions, no I/O. Mail HTML is routinely malformed, so nothing here raises on bad
input: the tokenizer is the stdlib :class:`html.parser.HTMLParser` (lenient by design),
sanitising is done by ``nh3`` (the Ammonia allowlist sanitizer), and both conversion
functions share one tree-less walker that tracks open elements well enough to skip
invisible content (``<script>``, ``<style>``, ``<head>``, ``display:none``, ``hidden``).
SVG and MathML ("foreign content") follow the HTML5 tree-construction rules that matter for
what is visible: an HTML start tag such as ``<p>`` or ``<div>`` breaks out of an unclosed
``<svg>``/``<math>``, only SVG ``<text>`` (and ``<foreignObject>``) draws characters, and
unrendered SVG/MathML parts (``<defs>``, ``<desc>``, ``<annotation>``...) stay hidden.

Content hidden from a human reader is removed everywhere (also from sanitised HTML):
hidden text is a classic vehicle for prompt injection aimed at the agent reading mail.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from html import escape
from html.parser import HTMLParser

import nh3

from ..content.text import INVISIBLE

__all__ = ["html_to_markdown", "html_to_text", "sanitize_html"]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Elements whose content is never shown to a reader.
_SKIP_CONTENT = _names(
    "script style head title template iframe object embed applet frameset noembed noframes select textarea"
)
_VOID = _names("area base basefont br col embed hr img input keygen link meta param source track wbr")
# Elements allowed inside <head>; anything else implicitly ends it (as browsers do).
_HEAD_CONTENT = frozenset(
    {"head", "meta", "link", "title", "style", "script", "base", "noscript", "template"}
)
# Start tags that implicitly close an open <p>.
_CLOSES_P = _names(
    "address article aside blockquote center details div dl fieldset figcaption figure footer form h1 "
    "h2 h3 h4 h5 h6 header hr main nav ol p pre section table ul"
)
# Inline elements an implicit </p> may be closed "through".
_INLINE = _names(
    "a abbr b big cite code del em font i ins kbd mark q s samp small span strike strong sub sup tt u var"
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCK_LINE = _names(
    "address article aside caption center dd details div dl dt fieldset figcaption figure footer form "
    "header main nav section summary table tbody tfoot thead tr"
)
# Foreign content (HTML5 parsing, "rules for parsing tokens in foreign content"). Namespaces are
# "" (HTML), "svg" and "math". These start tags (and </br>, </p>) leave SVG/MathML for HTML.
_BREAKOUT = _names(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img li "
    "listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul var"
)
_FONT_BREAKOUT_ATTRS = frozenset({"color", "face", "size"})
_MATH_TEXT_POINTS = _names("mi mo mn ms mtext")
_SVG_HTML_POINTS = _names("foreignobject desc title")
# SVG elements whose content is never drawn, and the ones that draw their character data.
_SVG_UNRENDERED = _names(
    "clippath defs desc filter lineargradient marker mask metadata pattern radialgradient script style "
    "symbol title"
)
_SVG_TEXT_CHILDREN = _names("tspan textpath a")
_MATH_UNRENDERED = _names("annotation annotation-xml mphantom script style")
# Foreign elements that separate words (as an inline box of their own would).
_FOREIGN_GAP = _names("svg text foreignobject math mi mn mo ms mtext")
_BLOCK_PARAGRAPH = frozenset({"p", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6"})
_ZERO_LENGTHS = frozenset({"0", "0px", "0pt", "0em", "0rem", "0%"})
_LINK_SCHEMES = ("http:", "https:", "mailto:")
_MAX_CAPTURE_PIECES = 2000
_MAX_SANITIZE_DEPTH = 256

_SANITIZE_TAGS = _names(
    "a abbr address article aside center figcaption figure footer header section b blockquote br "
    "caption cite code dd del div dl dt em h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q s "
    "samp small span strike strong sub sup table tbody td tfoot th thead tr tt u ul var"
)
_SANITIZE_CLEAN_CONTENT = _names(
    "applet embed frame frameset head iframe math noembed noframes noscript object script select "
    "style svg template textarea title"
)
_CELL_ATTRS = frozenset({"colspan", "rowspan", "align", "valign"})
# No attribute that can carry a URL is allowed except <a href>, which is checked below;
# in particular <img src> is dropped, so sanitised mail never loads remote resources.
_SANITIZE_ATTRIBUTES: dict[str, set[str]] = {
    "*": {"title", "lang", "dir"},
    "a": {"href"},
    "img": {"alt", "width", "height"},
    "ol": {"start"},
    "td": set(_CELL_ATTRS),
    "th": set(_CELL_ATTRS) | {"scope"},
}


def sanitize_html(html: str) -> str:
    """Return ``html`` reduced to safe formatting markup.

    Scripts, styles, frames, objects, event handlers, ``style``/``class``/``id``
    attributes and every remote resource (``img src`` included) are removed with their
    content; form controls are removed but their text is kept. ``<a href>`` survives
    only with an http/https/mailto URL and gets ``rel="noopener noreferrer nofollow"``.
    Elements hidden from the reader are dropped together with their content.
    """
    text = _clean_input(html)
    if not text:
        return ""
    serializer = _Serializer()
    serializer.run(text)
    try:
        cleaned = nh3.clean(
            "".join(serializer.out),
            tags=set(_SANITIZE_TAGS),
            clean_content_tags=set(_SANITIZE_CLEAN_CONTENT),
            attributes=_SANITIZE_ATTRIBUTES,
            attribute_filter=_filter_attribute,
            strip_comments=True,
            link_rel="noopener noreferrer nofollow",
            url_schemes={"http", "https", "mailto"},
        )
    except Exception:
        # nh3 should not fail on any str; if it ever does, fall back to inert text.
        return escape(html_to_text(text))
    return cleaned.strip()


def html_to_text(html: str) -> str:
    """Render ``html`` as readable plain text.

    Blocks become lines/paragraphs, ``<br>`` a newline, list items ``- `` (``1. `` in
    ordered lists), table rows ``a | b``, links ``text (url)`` when the URL differs from
    the text (http/https/mailto only), quotes ``> ``, images their alt text. Invisible
    content is skipped, entities are decoded, blank-line runs are collapsed.
    """
    return _Renderer(markdown=False).render(_clean_input(html))


def html_to_markdown(html: str) -> str:
    """Render ``html`` as Markdown.

    ``#`` headings, ``**bold**``, ``_italic_``, ``~~strike~~``, `` `code` ``, fenced
    ``<pre>``, ``[text](url)`` links (http/https/mailto only, others become plain text),
    lists, ``> `` quotes; tables as ``a | b`` rows. Invisible content is skipped.
    """
    return _Renderer(markdown=True).render(_clean_input(html))


def _clean_input(html: object) -> str:
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    if not isinstance(html, str):
        return ""
    try:
        html.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates would make nh3 (Rust) and later JSON encoding fail.
        html = html.encode("utf-8", "replace").decode("utf-8")
    return html.replace("\x00", "")


def _filter_attribute(tag: str, attr: str, value: str) -> str | None:
    return _safe_url(value) if attr == "href" else value


def _safe_url(url: str) -> str | None:
    """Return ``url`` without whitespace/control characters if its scheme is allowed."""
    # Browsers ignore embedded tabs/newlines ("java\nscript:"), so judge the compacted form.
    compact = "".join(ch for ch in url if ch > " " and ch != "\x7f")
    return compact if compact.lower().startswith(_LINK_SCHEMES) else None


def _style_hides(style: str) -> bool:
    props: dict[str, str] = {}
    for declaration in style.split(";"):
        name, sep, value = declaration.partition(":")
        if sep:
            props[name.strip().lower()] = "".join(value.lower().replace("!important", "").split())
    if props.get("display") == "none" or props.get("visibility") in ("hidden", "collapse"):
        return True
    if props.get("opacity") in ("0", "0.0", "0%"):
        return True
    # The usual "preheader" trick when display:none is avoided.
    return props.get("max-height") in _ZERO_LENGTHS and props.get("overflow") == "hidden"


def _is_hidden(attrs: list[tuple[str, str | None]]) -> bool:
    for name, value in attrs:
        if name == "hidden":
            return True
        if name == "style" and value and _style_hides(value):
            return True
    return False


def _is_zero(value: str) -> bool:
    number = value.strip().lower().rstrip("%").removesuffix("px").removesuffix("pt").removesuffix("em")
    try:
        return float(number) <= 0
    except ValueError:
        return False


def _foreign_hides(namespace: str, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an SVG/MathML element is not rendered (its presentation attributes included)."""
    if namespace == "math":
        return tag in _MATH_UNRENDERED
    if tag in _SVG_UNRENDERED:
        return True
    for name, value in attrs:
        value = (value or "").strip().lower()
        if name == "display" and value == "none":
            return True
        if name == "visibility" and value in ("hidden", "collapse"):
            return True
        if name == "opacity" and _is_zero(value):
            return True
        if name in ("width", "height") and tag in ("svg", "foreignobject") and _is_zero(value):
            return True
    return False


def _attr(attrs: list[tuple[str, str | None]], name: str) -> str | None:
    for key, value in attrs:
        if key == name:
            return value
    return None


@dataclass(slots=True)
class _Open:
    """An open element; ``state`` is renderer-specific bookkeeping.

    ``namespace`` is "" for HTML, "svg" or "math"; ``text`` says whether character data directly
    inside is drawn (not in SVG outside ``<text>``); ``point`` marks an HTML5 integration point:
    "html" (SVG ``foreignObject``/``desc``/``title``, HTML ``annotation-xml``) or "text" (``mi``...).
    """

    tag: str
    hidden: bool
    state: object = None
    namespace: str = ""
    text: bool = True
    point: str = ""


class _Walker(HTMLParser):
    """Tokenizer plus a best-effort open-element stack (implied end tags, head/body).

    Subclasses receive only visible content through the ``visible_*`` hooks.
    """

    skip_content: frozenset[str] = _SKIP_CONTENT

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[_Open] = []
        # Open elements per tag: lets most stack searches be skipped (deep or hostile markup).
        self.open_counts: Counter[str] = Counter()
        self.foreign = 0  # SVG/MathML elements on the stack
        self.cdata_sections = False

    def run(self, html: str) -> None:
        try:
            self.feed(html)
            # An unfinished construct at EOF ("<a hre" from a truncated body) is not text.
            if self.rawdata.lstrip().startswith("<"):
                self.rawdata = ""
            self.close()
        except Exception:
            # HTMLParser can still assert on some pathological markup; keep what we have.
            pass
        self._pop_to(0)

    # -- hooks -----------------------------------------------------------------
    def visible_start(self, tag: str, attrs: list[tuple[str, str | None]], element: _Open) -> None:
        """A visible element was opened."""

    def visible_end(self, element: _Open) -> None:
        """A visible element was closed (explicitly, implicitly or at EOF)."""

    def visible_void(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """A visible void element (``<br>``, ``<img>``...)."""

    def visible_data(self, data: str) -> None:
        """Visible character data (entities already decoded)."""

    def visible_gap(self) -> None:
        """A visible SVG/MathML box starts or ends: words on either side stay apart."""

    # -- HTMLParser callbacks --------------------------------------------------
    @property
    def hidden(self) -> bool:
        return bool(self.stack) and self.stack[-1].hidden

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, self_closing=False)
        if self.foreign or self.cdata_sections:
            self._sync_cdata_sections()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # Like browsers, ignore the self-closing slash on HTML elements (not on SVG/MathML ones).
        self._start(tag, attrs, self_closing=True)
        if self.foreign or self.cdata_sections:
            self._sync_cdata_sections()

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], *, self_closing: bool) -> None:
        if self.foreign and not self._html_rules_for(tag):
            if tag not in _BREAKOUT and not (
                tag == "font" and any(name in _FONT_BREAKOUT_ATTRS for name, _ in attrs)
            ):
                self._open_foreign(tag, attrs, self.stack[-1].namespace, self_closing=self_closing)
                return
            # An HTML start tag ends the SVG/MathML it appears in (HTML5 "foreign content").
            while self.stack and self.stack[-1].namespace and not self.stack[-1].point:
                self._pop_to(len(self.stack) - 1)
        self._implicit_close(tag)
        if tag in ("svg", "math"):
            self._open_foreign(tag, attrs, tag, self_closing=self_closing)
            return
        hidden = self.hidden or tag in self.skip_content or _is_hidden(attrs)
        if tag in _VOID:
            if not hidden:
                self.visible_void(tag, attrs)
            return
        element = _Open(tag, hidden)
        self._push(element)
        if not hidden:
            self.visible_start(tag, attrs, element)

    def handle_endtag(self, tag: str) -> None:
        self._end(tag)
        if self.foreign or self.cdata_sections:
            self._sync_cdata_sections()

    def _end(self, tag: str) -> None:
        if self.foreign and self.stack[-1].namespace:
            if tag in ("br", "p"):
                while self.stack and self.stack[-1].namespace and not self.stack[-1].point:
                    self._pop_to(len(self.stack) - 1)
            else:
                for depth in range(len(self.stack) - 1, -1, -1):
                    if self.stack[depth].tag == tag:
                        self._pop_to(depth)
                        return
                    if depth and not self.stack[depth - 1].namespace:
                        break  # the HTML rules below decide
                else:
                    return
        if tag in _VOID:
            if tag == "br" and self._shows_text():
                self.visible_void("br", [])
            return
        index = self._find_end(tag) if self.foreign else self._find(tag)
        if index is None:
            if tag == "p" and self._shows_text():
                # A stray </p> makes an empty paragraph in browsers.
                element = _Open("p", False)
                self.visible_start("p", [], element)
                self.visible_end(element)
            return
        self._pop_to(index)

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1].tag == "head" and data.strip():
            self._pop_to(self._find("head") or 0)
        if self._shows_text():
            self.visible_data(data)

    def unknown_decl(self, data: str) -> None:
        # <![CDATA[...]]> is text inside SVG/MathML (and a comment in HTML).
        if data.startswith("CDATA[") and self.stack and self.stack[-1].namespace:
            self.handle_data(data[len("CDATA[") :])

    def set_cdata_mode(self, elem: str, *args: object, **kwargs: object) -> None:
        # <style>/<script> (and <title>... on newer Pythons) are not raw text inside SVG/MathML.
        if self.stack and self.stack[-1].namespace:
            return
        super().set_cdata_mode(elem, *args, **kwargs)  # type: ignore[arg-type]

    # -- foreign content (SVG, MathML) -----------------------------------------
    def _shows_text(self) -> bool:
        return not self.stack or (not self.stack[-1].hidden and self.stack[-1].text)

    def _html_rules_for(self, tag: str) -> bool:
        """Whether a start tag is handled as HTML (HTML5 "tree construction dispatcher")."""
        current = self.stack[-1]
        if not current.namespace or current.point == "html":
            return True
        if current.point == "text":
            return tag not in ("mglyph", "malignmark")
        return current.namespace == "math" and current.tag == "annotation-xml" and tag == "svg"

    def _open_foreign(
        self, tag: str, attrs: list[tuple[str, str | None]], namespace: str, *, self_closing: bool
    ) -> None:
        parent = self.stack[-1] if self.stack else None
        hidden = self.hidden or _is_hidden(attrs) or _foreign_hides(namespace, tag, attrs)
        point = ""
        if namespace == "svg":
            # Characters are drawn in <text> (and its <tspan>/<textPath>/<a>), HTML in <foreignObject>.
            text = tag in ("text", "foreignobject") or (
                tag in _SVG_TEXT_CHILDREN and parent is not None and parent.namespace == "svg" and parent.text
            )
            if tag in _SVG_HTML_POINTS:
                point = "html"
        else:
            text = True
            if tag in _MATH_TEXT_POINTS:
                point = "text"
            elif tag == "annotation-xml" and (_attr(attrs, "encoding") or "").strip().lower() in (
                "text/html",
                "application/xhtml+xml",
            ):
                point = "html"
        gap = not hidden and tag in _FOREIGN_GAP
        if gap:
            self.visible_gap()
        if self_closing:
            return
        self._push(_Open(tag, hidden, namespace=namespace, text=text, point=point))

    def _find_end(self, tag: str) -> int | None:
        """Like :meth:`_find` for an HTML end tag, stopping at an SVG/MathML integration point."""
        if not self.open_counts[tag]:
            return None
        for index in range(len(self.stack) - 1, -1, -1):
            element = self.stack[index]
            if not element.namespace and element.tag == tag:
                return index
            if element.point:
                return None
        return None

    def _sync_cdata_sections(self) -> None:
        # Newer HTMLParsers read "<![CDATA[" as a section (not a comment) only when told that the
        # current node is SVG/MathML; older ones always report it through unknown_decl.
        wanted = bool(self.stack) and bool(self.stack[-1].namespace)
        if wanted != self.cdata_sections:
            self.cdata_sections = wanted
            setter = getattr(self, "_set_support_cdata", None)
            if setter is not None:
                setter(wanted)

    # -- stack helpers ---------------------------------------------------------
    def _find(self, tag: str) -> int | None:
        if not self.open_counts[tag]:
            return None
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index].tag == tag:
                return index
        return None

    def _push(self, element: _Open) -> None:
        self.stack.append(element)
        self.open_counts[element.tag] += 1
        if element.namespace:
            self.foreign += 1

    def _pop_to(self, index: int) -> None:
        while len(self.stack) > index:
            element = self.stack.pop()
            self.open_counts[element.tag] -= 1
            if element.namespace:
                self.foreign -= 1
                if not element.hidden and element.tag in _FOREIGN_GAP:
                    self.visible_gap()
            elif not element.hidden:
                self.visible_end(element)

    def _close_if_open(self, tags: frozenset[str], stop: frozenset[str]) -> None:
        if not any(self.open_counts[tag] for tag in tags):
            return
        for index in range(len(self.stack) - 1, -1, -1):
            current = self.stack[index].tag
            if self.stack[index].namespace:
                return  # an SVG/MathML integration point bounds the search
            if current in tags:
                self._pop_to(index)
                return
            if current in stop:
                return

    def _implicit_close(self, tag: str) -> None:
        if tag not in _HEAD_CONTENT:
            head = self._find("head")
            if head is not None:
                self._pop_to(head)
        if tag in _CLOSES_P and self.open_counts["p"]:
            for index in range(len(self.stack) - 1, -1, -1):
                current = self.stack[index].tag
                if self.stack[index].namespace:
                    break
                if current == "p":
                    self._pop_to(index)
                    break
                if current not in _INLINE:
                    break
        if tag == "li":
            self._close_if_open(frozenset({"li"}), frozenset({"ul", "ol", "menu", "table"}))
        elif tag in ("dt", "dd"):
            self._close_if_open(frozenset({"dt", "dd"}), frozenset({"dl", "table"}))
        elif tag in ("td", "th"):
            self._close_if_open(frozenset({"td", "th"}), frozenset({"tr", "table"}))
        elif tag == "tr":
            self._close_if_open(frozenset({"tr"}), frozenset({"table"}))
        elif tag in ("thead", "tbody", "tfoot"):
            self._close_if_open(frozenset({"thead", "tbody", "tfoot"}), frozenset({"table"}))
        elif (
            tag in _HEADINGS
            and self.stack
            and self.stack[-1].tag in _HEADINGS
            and not self.stack[-1].namespace
        ):
            self._pop_to(len(self.stack) - 1)
        elif tag == "a":
            self._close_if_open(frozenset({"a"}), frozenset())


class _Serializer(_Walker):
    """Re-serialises the visible part of a document (input for nh3).

    Only allowlisted tags are emitted, so nh3 never sees raw-text elements such as
    ``<xmp>``/``<plaintext>``. Nesting deeper than ``_MAX_SANITIZE_DEPTH`` is flattened
    (content kept, tags dropped): the sanitizer's tree builder is quadratic in depth.
    """

    skip_content = _SKIP_CONTENT | _SANITIZE_CLEAN_CONTENT

    def __init__(self) -> None:
        super().__init__()
        self.out: list[str] = []
        self.depth = 0

    def _tag(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if tag not in _SANITIZE_TAGS or self.depth >= _MAX_SANITIZE_DEPTH:
            return False
        rendered = "".join(
            f' {name}="{escape(value, quote=True)}"' if value is not None else f" {name}"
            for name, value in attrs
            if name and name.replace("-", "").replace("_", "").isalnum()
        )
        self.out.append(f"<{tag}{rendered}>")
        return True

    def visible_start(self, tag: str, attrs: list[tuple[str, str | None]], element: _Open) -> None:
        if self._tag(tag, attrs):
            element.state = True
            self.depth += 1

    def visible_end(self, element: _Open) -> None:
        if element.state is True:
            self.out.append(f"</{element.tag}>")
            self.depth -= 1

    def visible_void(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag(tag, attrs)

    def visible_data(self, data: str) -> None:
        self.out.append(escape(data, quote=False))

    def visible_gap(self) -> None:
        if self.out and not self.out[-1].endswith(" "):
            self.out.append(" ")


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


class _Renderer(_Walker):
    """Line-oriented text/Markdown writer driven by the walker."""

    def __init__(self, *, markdown: bool) -> None:
        super().__init__()
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
        self.pre_fresh = False
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
        data = data.replace("\r\n", "\n").replace("\r", "\n")
        if self.pre_fresh and data.startswith("\n"):
            # Browsers drop the newline that directly follows <pre>.
            data = data[1:]
        self.pre_fresh = False
        for index, line in enumerate(data.split("\n")):
            if index and self.started:
                self.pending_breaks = min(self.pending_breaks + 1, 2)
            if line:
                self._write(line.translate(INVISIBLE))

    def _capture(self, element: _Open, capture: _Capture) -> None:
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
            alt = (_attr(attrs, "alt") or "").strip()
            if alt:
                self._inline_text(alt)

    def visible_start(self, tag: str, attrs: list[tuple[str, str | None]], element: _Open) -> None:
        if tag in _BLOCK_PARAGRAPH:
            self._break(2)
        elif tag in _BLOCK_LINE:
            self._break(1)
        if tag == "blockquote":
            self.quote_depth += 1
        elif tag == "pre":
            self.pre_depth += 1
            self.pre_fresh = True
            if self.markdown and self.pre_depth == 1:
                self._write("```")
                self._break(1)
        elif tag in _HEADINGS and self.markdown:
            self.pending_marker = "#" * int(tag[1]) + " "
            self.marker_is_bullet = False
        elif tag in ("ul", "ol", "menu"):
            self._break(1 if self.lists else 2)
            start = _attr(attrs, "start") or "1"
            self.lists.append(_ListState(tag == "ol", int(start) if start.strip().isdigit() else 1))
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
            href = _safe_url(_attr(attrs, "href") or "")
            self._capture(element, _Capture(0, href=href))
        elif self.markdown:
            marker = _md_marker(tag, self.pre_depth)
            if marker:
                self._capture(element, _Capture(0, marker=marker))

    def visible_end(self, element: _Open) -> None:
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
        if tag == "li" or tag in _HEADINGS:
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
