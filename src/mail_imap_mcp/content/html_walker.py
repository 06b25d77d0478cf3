"""The parser under HTML rendering: an HTML5 document tree walked for what a reader sees.

The document is parsed as browsers parse it (the WHATWG tokenizer and tree builder of Lexbor, through
selectolax): comments that end early (``<!-->``, ``--!>``), implied and misnested tags, SVG and MathML
("foreign content") all come out as a browser builds them. :class:`Walker` then visits the tree in
document order and reports only what is displayed: it skips elements that are never rendered
(``<script>``, ``<head>``, ``<template>``...), hidden ones (``hidden``, ``display:none``, near-zero
opacity, the collapsed body of a closed ``<details>``), text under ``visibility:hidden`` unless a
descendant turns it back on, and in SVG/MathML what is not drawn (``<defs>``, ``<desc>``,
``<annotation>``..., characters outside SVG ``<text>``). Styles are read by :mod:`.html_style`. The
writers on top live in :mod:`.html` (the sanitiser) and :mod:`.html_render` (text and Markdown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .html_style import INVISIBLE_OPACITY, NO_STYLE, Style, read_style

__all__ = [
    "HEADINGS",
    "SKIP_CONTENT",
    "OpenElement",
    "Walker",
    "attribute",
    "bounded_depth",
    "safe_url",
    "tag_set",
]

Attributes = list[tuple[str, str | None]]


def tag_set(text: str) -> frozenset[str]:
    """The space-separated tag names of ``text`` as a set."""
    return frozenset(text.split())


# Elements whose content is not shown to a reader. An <object> is never rendered here, so its fallback
# content is (as in a browser that does not render the object). <xmp> and <plaintext> show their
# content as markup source: that is skipped, so markup the rest of this module treats as hidden
# ("<p hidden>...") never reaches the agent as text.
SKIP_CONTENT = tag_set(
    "script style head title template iframe embed applet frameset noembed noframes select textarea "
    "xmp plaintext"
)
_VOID = tag_set("area base basefont br col embed hr img input keygen link meta param source track wbr")
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# <input> types whose box shows the value attribute (a missing or unknown type is "text").
_INPUT_SHOWS_VALUE = tag_set("text search email url tel number submit button reset")
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
_LINK_SCHEMES = ("http:", "https:", "mailto:")
# Lexbor checks element scopes by walking the stack of open elements, so a deep stack makes parsing
# quadratic (20,000 nested <div> take about a second). Browsers cap the depth too (Blink at 512).
_MAX_DEPTH = 1000
_DEPTH_CHECK_TAGS = 4000  # fewer start tags than this cannot be slow, however deep
_TAG = re.compile(r"<(/?)([a-zA-Z][^\s/>]*)[^>]*>?")
_NOT_MARKUP = re.compile(
    r"<!--.*?(?:--!?>|$)|<[!?][^>]*>?"
    r"|<(script|style|textarea|title|xmp|iframe|noembed|noframes)\b.*?(?:</\1\s*>|$)",
    re.DOTALL | re.IGNORECASE,
)
# Elements a later start tag can close without an end tag, so they do not deepen the stack.
_SELF_ENDING = tag_set(
    "p li dt dd td th tr tbody thead tfoot option optgroup rb rt rp rtc colgroup caption html head body"
)


def safe_url(url: str) -> str | None:
    """Return ``url`` without whitespace/control characters if its scheme is allowed."""
    # Browsers ignore embedded tabs/newlines ("java\nscript:"), so judge the compacted form.
    compact = "".join(ch for ch in url if ch > " " and ch != "\x7f")
    return compact if compact.lower().startswith(_LINK_SCHEMES) else None


def attribute(attrs: Attributes, name: str) -> str | None:
    """The value of attribute ``name`` (None when absent or valueless)."""
    for key, value in attrs:
        if key == name:
            return value
    return None


@dataclass(slots=True)
class OpenElement:
    """An element being walked; ``state`` is renderer-specific bookkeeping.

    ``hidden`` says its own text is not shown (``visibility:hidden``, inherited until a descendant
    sets ``visible``); ``namespace`` is "" for HTML, "svg" or "math"; ``text`` says whether character
    data directly inside is drawn (not in SVG outside ``<text>``); ``point`` marks an HTML5
    integration point: "html" (SVG ``foreignObject``/``desc``/``title``, HTML ``annotation-xml``) or
    "text" (``mi``...); ``opacity`` is the product of its own and its ancestors'; ``details`` is 1 for
    a closed ``<details>`` until its first ``<summary>`` child has been shown, 2 after.
    """

    tag: str
    hidden: bool
    state: object = None
    namespace: str = ""
    text: bool = True
    point: str = ""
    opacity: float = 1.0
    details: int = 0


class Walker:
    """An HTML5 parse walked in document order; subclasses receive only visible content.

    Hooks: ``visible_start``/``visible_end`` (paired), ``visible_void``, ``visible_data`` (entities
    decoded) and ``visible_gap``.
    """

    skip_content: frozenset[str] = SKIP_CONTENT

    def run(self, html: str) -> None:
        """Parse ``html`` and report what a reader sees through the hooks."""
        try:
            root = LexborHTMLParser(bounded_depth(html)).root
        except Exception:
            return
        if root is not None:
            self._walk(root)

    # -- hooks -----------------------------------------------------------------
    def visible_start(self, tag: str, attrs: Attributes, element: OpenElement) -> None:
        """A visible element was opened."""

    def visible_end(self, element: OpenElement) -> None:
        """A visible element was closed."""

    def visible_void(self, tag: str, attrs: Attributes) -> None:
        """A visible void element (``<br>``, ``<img>``...)."""

    def visible_data(self, data: str) -> None:
        """Visible character data (entities already decoded)."""

    def visible_gap(self) -> None:
        """A visible inline box (SVG/MathML, a form field) starts or ends: words on either side stay apart."""

    # -- the walk --------------------------------------------------------------
    def _walk(self, root: LexborNode) -> None:
        document = OpenElement("#document", hidden=False)
        parent = document
        # (element whose children are being walked, the next sibling of that element)
        frames: list[tuple[OpenElement, LexborNode | None]] = []
        node: LexborNode | None = root
        while True:
            while node is None:
                if not frames:
                    return
                element, node = frames.pop()
                self._leave(element)
                parent = frames[-1][0] if frames else document
            kind = node.tag or "-"
            if kind == "-text":
                if not parent.hidden and parent.text and not parent.details:
                    self.visible_data(node.text_content or "")
            elif kind[0] not in "-!":
                entered = self._enter(node, kind, parent)
                if entered is not None:
                    child = node.child
                    if child is not None:
                        frames.append((entered, node.next))
                        parent = entered
                        node = child
                        continue
                    self._leave(entered)
            node = node.next

    def _enter(self, node: LexborNode, tag: str, parent: OpenElement) -> OpenElement | None:
        """Open one element: report it and return its record, or None when its subtree is not shown."""
        name = tag.lower()
        if parent.details:
            # A closed <details> shows only its first <summary> child.
            if parent.details == 2 or name != "summary":
                return None
            parent.details = 2
        attrs: Attributes = list(node.attributes.items())
        namespace, point, draws_text = _namespace_of(name, attrs, parent)
        style = NO_STYLE
        for key, value in attrs:
            if key == "style":
                style = read_style(value)
        if _not_rendered(name, namespace, attrs, style, self.skip_content):
            return None
        opacity = parent.opacity
        if style.opacity is not None:
            opacity *= style.opacity
        elif namespace == "svg":
            opacity *= _number(attribute(attrs, "opacity"), 1.0)
        if opacity < INVISIBLE_OPACITY:
            return None
        visibility = style.visibility or (attribute(attrs, "visibility") if namespace == "svg" else None)
        hidden = parent.hidden if visibility is None else visibility.strip().lower() != "visible"
        if namespace:
            return self._enter_foreign(name, hidden, namespace, point, draws_text, opacity)
        if name in _VOID:
            if not hidden:
                if name == "input":
                    self._input(attrs)
                else:
                    self.visible_void(name, attrs)
            return None
        element = OpenElement(name, hidden, opacity=opacity)
        if name == "details" and not any(key == "open" for key, _ in attrs):
            element.details = 1
        if not hidden:
            self.visible_start(name, attrs, element)
        return element

    def _enter_foreign(
        self, name: str, hidden: bool, namespace: str, point: str, draws_text: bool, opacity: float
    ) -> OpenElement:
        element = OpenElement(
            name, hidden, namespace=namespace, text=draws_text, point=point, opacity=opacity
        )
        if not hidden and name in _FOREIGN_GAP:
            self.visible_gap()
        return element

    def _leave(self, element: OpenElement) -> None:
        if element.hidden:
            return
        if element.namespace:
            if element.tag in _FOREIGN_GAP:
                self.visible_gap()
        else:
            self.visible_end(element)

    def _input(self, attrs: Attributes) -> None:
        """An ``<input>`` box shows its value (a password's as dots, a checkbox's not at all)."""
        kind = (attribute(attrs, "type") or "text").strip().lower()
        value = attribute(attrs, "value")
        if value and value.strip() and (kind in _INPUT_SHOWS_VALUE or kind not in _KNOWN_INPUT_TYPES):
            self.visible_gap()
            self.visible_data(value)
            self.visible_gap()


_KNOWN_INPUT_TYPES = _INPUT_SHOWS_VALUE | tag_set(
    "hidden password checkbox radio file image range color date datetime-local month week time"
)


def _namespace_of(name: str, attrs: Attributes, parent: OpenElement) -> tuple[str, str, bool]:
    """(namespace, integration point, draws its character data) of an element, as the parser placed it.

    The tree builder has already decided which start tags leave SVG/MathML; under an HTML parent or an
    integration point only ``<svg>`` and ``<math>`` start foreign content again.
    """
    html_rules = (
        not parent.namespace
        or parent.point == "html"
        or (parent.point == "text" and name not in ("mglyph", "malignmark"))
    )
    if html_rules:
        namespace = name if name in ("svg", "math") else ""
    elif parent.namespace == "math" and parent.tag == "annotation-xml" and name == "svg":
        namespace = "svg"
    else:
        namespace = parent.namespace
    if namespace == "svg":
        # Characters are drawn in <text> (and its <tspan>/<textPath>/<a>), HTML in <foreignObject>.
        draws = name in ("text", "foreignobject") or (
            name in _SVG_TEXT_CHILDREN and parent.namespace == "svg" and parent.text
        )
        return namespace, "html" if name in _SVG_HTML_POINTS else "", draws
    if namespace == "math":
        if name in _MATH_TEXT_POINTS:
            return namespace, "text", True
        encoding = (attribute(attrs, "encoding") or "").strip().lower()
        if name == "annotation-xml" and encoding in ("text/html", "application/xhtml+xml"):
            return namespace, "html", True
        return namespace, "", True
    return "", "", True


def _not_rendered(name: str, namespace: str, attrs: Attributes, style: Style, skip: frozenset[str]) -> bool:
    """Whether an element and everything inside it is not displayed."""
    if style.display_none or style.collapsed:
        return True
    if namespace == "math":
        if name in _MATH_UNRENDERED:
            return True
    elif namespace == "svg":
        if name in _SVG_UNRENDERED:
            return True
        if (attribute(attrs, "display") or "").strip().lower() == "none" and not style.display_shown:
            return True
        if name in ("svg", "foreignobject") and any(
            key in ("width", "height") and _number(value, 1.0) <= 0 for key, value in attrs
        ):
            return True
    elif name in skip:
        return True
    for key, value in attrs:
        if key == "hidden":
            # The user-agent rule is [hidden]{display:none}: an author's display value wins, except
            # for hidden="until-found", which hides the content by other means.
            return (value or "").strip().lower() == "until-found" or not style.display_shown
    return False


def _number(value: str | None, default: float) -> float:
    """A presentation attribute's number (``0``, ``0.5``, ``0px``, ``10%``)."""
    if value is None:
        return default
    text = value.strip().lower()
    scale = 100.0 if text.endswith("%") else 1.0
    text = text.rstrip("%").removesuffix("px").removesuffix("pt").removesuffix("em")
    try:
        return float(text) / scale
    except ValueError:
        return default


def bounded_depth(html: str) -> str:
    """``html`` cut where its elements would nest deeper than ``_MAX_DEPTH`` (rare, hostile input).

    The depth is estimated from the tags outside comments and raw text; cutting (rather than
    flattening) never moves text out of a hidden element.
    """
    if html.count("<") < _DEPTH_CHECK_TAGS:
        return html
    markup = _NOT_MARKUP.sub(lambda match: " " * len(match.group(0)), html)
    if len(_TAG.findall(markup)) < _DEPTH_CHECK_TAGS:
        return html
    open_counts: dict[str, int] = {}
    depth = 0
    for match in _TAG.finditer(markup):
        name = match.group(2).lower()
        if name in _VOID or name in _SELF_ENDING:
            continue
        if match.group(1):
            if open_counts.get(name):
                open_counts[name] -= 1
                depth -= 1
            continue
        open_counts[name] = open_counts.get(name, 0) + 1
        depth += 1
        if depth > _MAX_DEPTH:
            return html[: match.start()]
    return html
