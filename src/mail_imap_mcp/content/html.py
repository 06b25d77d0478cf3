"""HTML message bodies: allowlist sanitising and conversion to plain text or Markdown.

Pure functions, no I/O. Mail HTML is routinely malformed, so nothing here raises on bad
input: it is parsed as browsers parse it (an HTML5 parser, see :mod:`.html_walker`) and the tree is
walked by :class:`.html_walker.Walker`; sanitising is done by ``nh3`` (the Ammonia allowlist
sanitizer), and the text and Markdown writers live in :mod:`.html_render`.

Content hidden from a human reader is removed everywhere (also from sanitised HTML):
hidden text is a classic vehicle for prompt injection aimed at the agent reading mail.
"""

from __future__ import annotations

from html import escape

import nh3

from .html_render import TextRenderer
from .html_walker import SKIP_CONTENT, OpenElement, Walker, safe_url, tag_set

__all__ = ["html_to_markdown", "html_to_text", "sanitize_html"]

_MAX_SANITIZE_DEPTH = 256

_SANITIZE_TAGS = tag_set(
    "a abbr address article aside center figcaption figure footer header section b blockquote br "
    "caption cite code dd del div dl dt em h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q s "
    "samp small span strike strong sub sup table tbody td tfoot th thead tr tt u ul var"
)
_SANITIZE_CLEAN_CONTENT = tag_set(
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

    Scripts, styles, frames, event handlers, ``style``/``class``/``id`` attributes and
    every remote resource (``img src`` included) are removed with their content; objects
    and form controls are removed but the text a reader sees is kept (an object's fallback
    content, an input's value). ``<a href>`` survives
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
    return TextRenderer(markdown=False).render(_clean_input(html))


def html_to_markdown(html: str) -> str:
    """Render ``html`` as Markdown.

    ``#`` headings, ``**bold**``, ``_italic_``, ``~~strike~~``, `` `code` ``, fenced
    ``<pre>``, ``[text](url)`` links (http/https/mailto only, others become plain text),
    lists, ``> `` quotes; tables as ``a | b`` rows. Invisible content is skipped.
    """
    return TextRenderer(markdown=True).render(_clean_input(html))


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
    return safe_url(value) if attr == "href" else value


class _Serializer(Walker):
    """Re-serialises the visible part of a document (input for nh3).

    Only allowlisted tags are emitted, so nh3 never sees raw-text elements such as
    ``<xmp>``/``<plaintext>``. Nesting deeper than ``_MAX_SANITIZE_DEPTH`` is flattened
    (content kept, tags dropped): the sanitizer's tree builder is quadratic in depth.
    """

    # The parse is a browser's without scripts: an <object> is not rendered and <noscript> is, so their
    # content is what a reader sees (their tags never reach nh3, which is not allowlisted).
    skip_content = SKIP_CONTENT | (_SANITIZE_CLEAN_CONTENT - {"object", "noscript"})

    def __init__(self) -> None:
        self.out: list[str] = []
        self.depth = 0

    def _tag(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if tag not in _SANITIZE_TAGS or self.depth >= _MAX_SANITIZE_DEPTH:
            return False
        rendered = "".join(
            f' {name}="{escape(value, quote=True)}"' if value is not None else f" {name}"
            for name, value in attrs
            # A value holding markup is the shape of mutation XSS (markup that a differently scripted
            # parse reads as a tag, "<noscript><p title='</noscript><img onerror=...>'>"): dropped.
            if name and name.replace("-", "").replace("_", "").isalnum() and "<" not in (value or "")
        )
        self.out.append(f"<{tag}{rendered}>")
        return True

    def visible_start(self, tag: str, attrs: list[tuple[str, str | None]], element: OpenElement) -> None:
        if self._tag(tag, attrs):
            element.state = True
            self.depth += 1

    def visible_end(self, element: OpenElement) -> None:
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
