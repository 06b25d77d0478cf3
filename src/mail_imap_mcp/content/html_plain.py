"""Whether an HTML part is plain: its text rendering (:func:`.html.html_to_text`) is all a reader's mail
program shows of it, and all it sends. And the resources an HTML part would load.

Plain is an allow-list: the elements of text and its structure (paragraphs, line breaks, emphasis,
headings, lists, tables, quotes, preformatted text, links to http, https or mailto addresses), with no
attribute but a link's ``href``, and a ``<meta>`` naming the charset. Anything else may show a reader what
the text rendering does not (a style's ``::before`` text, an image, a struck-through amount) or send what
nobody reads (a comment, a title, a hidden element), so only a page that renders it can show it whole
(``services/send_review.py`` routes it there). The document is parsed as browsers parse it (Lexbor).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .html_walker import bounded_depth, safe_url, tag_set

__all__ = ["not_plain", "resources"]

_PLAIN_TAGS = tag_set(
    "html head body p br div span b strong i em u small code kbd samp tt pre blockquote h1 h2 h3 h4 h5 h6 "
    "ul ol li dl dt dd table thead tbody tfoot tr td th caption hr a center address cite var"
)
#: Attributes that name a resource a browser loads (``href`` only on the elements that load it).
_RESOURCE_ATTRIBUTES = frozenset(
    {
        "src",
        "srcset",
        "background",
        "poster",
        "data",
        "action",
        "formaction",
        "lowsrc",
        "dynsrc",
        "xlink:href",
    }
)
_RESOURCE_HREF = tag_set("link image use feimage")
_CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)|@import\s+(['"])(.*?)\3""", re.IGNORECASE | re.DOTALL)
_REFRESH_URL = re.compile(r"url\s*=\s*['\"]?([^'\"\s]+)", re.IGNORECASE)


def _document(html: str) -> LexborNode | None:
    """``html`` parsed as a browser parses it (its document node); None where it cannot be."""
    try:
        root = LexborHTMLParser(html).root
    except Exception:
        return None
    return root.parent if root is not None and root.parent is not None else root


def _nodes(document: LexborNode | None) -> Iterator[LexborNode]:
    """Every node of ``document``, comments and those outside ``<html>`` too, in document order."""
    node = document
    stack: list[LexborNode] = []
    while node is not None or stack:
        if node is None:
            node = stack.pop().next
            continue
        yield node
        if node.child is not None:
            stack.append(node)
            node = node.child
        else:
            node = node.next


def _charset_meta(attributes: dict[str, str | None]) -> bool:
    names = set(attributes)
    if names == {"charset"}:
        return True
    equiv = (attributes.get("http-equiv") or "").strip().lower()
    return names == {"http-equiv", "content"} and equiv == "content-type"


def _article(tag: str) -> str:
    return f"an <{tag}>" if tag[0] in "aeiou" else f"a <{tag}>"


def not_plain(html: str) -> str | None:
    """What in ``html`` its text rendering does not show a reader as a browser would ("a <style>
    element", "a comment", "a style attribute"); None when it is plain (see the module)."""
    if bounded_depth(html) != html:
        return "elements nested deeper than a browser shows"
    document = _document(html)
    if document is None:
        return "markup that cannot be read"
    for node in _nodes(document):
        tag = (node.tag or "").lower()
        if tag == "-comment":
            return "a comment"
        if tag in ("-text", "-document", "!doctype", "") or tag.startswith("-"):
            continue
        attributes = dict(node.attributes)
        if tag == "meta":
            if _charset_meta(attributes):
                continue
            return "a <meta> element other than its charset"
        if tag not in _PLAIN_TAGS:
            return f"{_article(tag)} element"
        for name, value in attributes.items():
            if tag == "a" and name == "href":
                if safe_url(value or "") is None:
                    return "a link to an address that is not http, https or mailto"
                continue
            return f"an attribute {name}= on <{tag}>"
    return None


def resources(html: str) -> list[str]:
    """Every address ``html`` would load from (an image's ``src``, a stylesheet, a CSS ``url()`` or
    ``@import``, a refresh's target...), each once, in order; ``data:`` addresses are the HTML's own and
    are left out."""
    found: dict[str, None] = {}

    def add(url: str | None) -> None:
        url = (url or "").strip()
        if url and not url.lower().startswith("data:"):
            found.setdefault(url, None)

    for node in _nodes(_document(bounded_depth(html))):
        tag = (node.tag or "").lower()
        if tag.startswith("-") or not tag:
            continue
        for name, value in node.attributes.items():
            name = name.lower()
            if name == "srcset":
                for candidate in (value or "").split(","):
                    add(candidate.strip().split(" ")[0])
            elif name in _RESOURCE_ATTRIBUTES or (name == "href" and tag in _RESOURCE_HREF):
                add(value)
            elif name == "style":
                _css_urls(value or "", add)
            elif tag == "meta" and name == "content" and _refresh(node):
                match = _REFRESH_URL.search(value or "")
                add(match.group(1) if match else None)
        if tag == "style":
            _css_urls(node.text(deep=True) or "", add)
    return list(found)


def _refresh(meta: LexborNode) -> bool:
    return str(meta.attributes.get("http-equiv") or "").strip().lower() == "refresh"


def _css_urls(css: str, add: Callable[[str | None], None]) -> None:
    for match in _CSS_URL.finditer(css):
        add(match.group(2) if match.group(2) is not None else match.group(4))
