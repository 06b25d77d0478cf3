"""The tokenizer under HTML rendering: a tree-less walk that reports only what a reader sees.

The tokenizer is the stdlib :class:`html.parser.HTMLParser` (lenient by design); :class:`Walker` adds a
best-effort stack of open elements (implied end tags, head/body) so that invisible content
(``<script>``, ``<style>``, ``<head>``, ``display:none``, ``hidden``) can be skipped. SVG and MathML
("foreign content") follow the HTML5 tree-construction rules that matter for what is visible: an HTML
start tag such as ``<p>`` or ``<div>`` breaks out of an unclosed ``<svg>``/``<math>``, only SVG
``<text>`` (and ``<foreignObject>``) draws characters, and unrendered SVG/MathML parts (``<defs>``,
``<desc>``, ``<annotation>``...) stay hidden. The writers on top live in :mod:`.html` (the sanitiser)
and :mod:`.html_render` (text and Markdown).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["HEADINGS", "SKIP_CONTENT", "OpenElement", "Walker", "attribute", "safe_url", "tag_set"]


def tag_set(text: str) -> frozenset[str]:
    """The space-separated tag names of ``text`` as a set."""
    return frozenset(text.split())


# Elements whose content is never shown to a reader.
SKIP_CONTENT = tag_set(
    "script style head title template iframe object embed applet frameset noembed noframes select textarea"
)
_VOID = tag_set("area base basefont br col embed hr img input keygen link meta param source track wbr")
# Elements allowed inside <head>; anything else implicitly ends it (as browsers do).
_HEAD_CONTENT = frozenset(
    {"head", "meta", "link", "title", "style", "script", "base", "noscript", "template"}
)
# Start tags that implicitly close an open <p>.
_CLOSES_P = tag_set(
    "address article aside blockquote center details div dl fieldset figcaption figure footer form h1 "
    "h2 h3 h4 h5 h6 header hr main nav ol p pre section table ul"
)
# Inline elements an implicit </p> may be closed "through".
_INLINE = tag_set(
    "a abbr b big cite code del em font i ins kbd mark q s samp small span strike strong sub sup tt u var"
)
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Foreign content (HTML5 parsing, "rules for parsing tokens in foreign content"). Namespaces are
# "" (HTML), "svg" and "math". These start tags (and </br>, </p>) leave SVG/MathML for HTML.
_BREAKOUT = tag_set(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img li "
    "listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul var"
)
_FONT_BREAKOUT_ATTRS = frozenset({"color", "face", "size"})
_MATH_TEXT_POINTS = tag_set("mi mo mn ms mtext")
_SVG_HTML_POINTS = tag_set("foreignobject desc title")
# SVG elements whose content is never drawn, and the ones that draw their character data.
_SVG_UNRENDERED = tag_set(
    "clippath defs desc filter lineargradient marker mask metadata pattern radialgradient script style "
    "symbol title"
)
_SVG_TEXT_CHILDREN = tag_set("tspan textpath a")
_MATH_UNRENDERED = tag_set("annotation annotation-xml mphantom script style")
# Foreign elements that separate words (as an inline box of their own would).
_FOREIGN_GAP = tag_set("svg text foreignobject math mi mn mo ms mtext")
_ZERO_LENGTHS = frozenset({"0", "0px", "0pt", "0em", "0rem", "0%"})
_LINK_SCHEMES = ("http:", "https:", "mailto:")


def safe_url(url: str) -> str | None:
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


def attribute(attrs: list[tuple[str, str | None]], name: str) -> str | None:
    for key, value in attrs:
        if key == name:
            return value
    return None


@dataclass(slots=True)
class OpenElement:
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


class Walker(HTMLParser):
    """Tokenizer plus a best-effort open-element stack (implied end tags, head/body).

    Subclasses receive only visible content through the ``visible_*`` hooks.
    """

    skip_content: frozenset[str] = SKIP_CONTENT

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[OpenElement] = []
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
    def visible_start(self, tag: str, attrs: list[tuple[str, str | None]], element: OpenElement) -> None:
        """A visible element was opened."""

    def visible_end(self, element: OpenElement) -> None:
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
        element = OpenElement(tag, hidden)
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
                element = OpenElement("p", False)
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
            elif tag == "annotation-xml" and (attribute(attrs, "encoding") or "").strip().lower() in (
                "text/html",
                "application/xhtml+xml",
            ):
                point = "html"
        gap = not hidden and tag in _FOREIGN_GAP
        if gap:
            self.visible_gap()
        if self_closing:
            return
        self._push(OpenElement(tag, hidden, namespace=namespace, text=text, point=point))

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

    def _push(self, element: OpenElement) -> None:
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
            tag in HEADINGS and self.stack and self.stack[-1].tag in HEADINGS and not self.stack[-1].namespace
        ):
            self._pop_to(len(self.stack) - 1)
        elif tag == "a":
            self._close_if_open(frozenset({"a"}), frozenset())
