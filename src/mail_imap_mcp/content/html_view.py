"""The copy of an HTML part the approval page shows (``services/send_page.py``): the part as it is sent,
byte for byte, but for what would fetch from the network while it is shown or what no browser can load.

- A resource hint only fetches and never draws (``<link rel=preconnect>``, ``dns-prefetch``, ``prefetch``,
  ``preload``, ``modulepreload``, ``prerender``, ``compression-dictionary``), and a browser acts on it
  whatever the view's Content-Security-Policy says: opening the page would tell the draft's author that
  the user read it. Its ``rel`` token is made inert (``x-not-fetched-preconnect``), and so is a
  ``<meta http-equiv=refresh>`` (``x-not-run-refresh``) and the address of an ``<iframe>`` or ``<frame>``
  (``about:blank#https://...``: the policy refuses to load a frame, but Chromium connects to its host first).
- An image the part names by ``cid:`` (another part of the message, as a recipient's program shows it)
  gets that part's bytes as a ``data:`` address.

Nothing is removed or added: every element, every other attribute and all text stay where they are, so a
style that selects on the document's structure (``head > :nth-child(2)``, ``link + p``, ``:has(link)``)
matches the page's copy as it matches the message a recipient opens. Only a selector on the very value
changed (``link[rel~=preconnect]``, ``img[src^="cid:"]``) can tell them apart (docs/security.md). The copy
is checked by a browser's parse (Lexbor) of both: the same nodes, texts and attributes but for the values
changed, and no fetch-only hint left; where that does not hold (a tag written so that this scan and a
browser read it differently), :func:`shown_copy` raises ``ValueError``, and the message cannot be shown.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Mapping

from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["FETCH_ONLY_HINTS", "shown_copy"]

#: The ``rel`` tokens of a ``<link>`` that only fetch (or connect, or look a name up) and draw nothing.
FETCH_ONLY_HINTS = frozenset(
    {
        "preconnect",
        "dns-prefetch",
        "prefetch",
        "preload",
        "modulepreload",
        "prerender",
        "compression-dictionary",
    }
)
_INERT_HINT = "x-not-fetched-"
_INERT_REFRESH = "x-not-run-refresh"
#: A start tag the copy may change, or what holds text a browser does not read as tags (left as it is).
#: Each is read once, left to right: a comment or raw text never closed runs to the end (as a browser
#: reads it), and a tag's attributes end at a ``<`` outside quotes, so no opening scans the rest of the
#: source again for each of its kind (a few hundred thousand of them took hours). A tag written otherwise
#: (a ``<`` between its attributes) is left as it is, and the parse's check refuses the copy where it
#: needed a change.
_START_TAG = re.compile(
    r"""<!--.*?(?:-->|\Z)|<(script|style|textarea|title)\b.*?(?:</\1\s*>|\Z)"""
    r"""|<(link|meta|img|iframe|frame)(?=[\s/>])((?:[^<>"']|"[^"]*"|'[^']*')*)>""",
    re.IGNORECASE | re.DOTALL,
)
_ATTRIBUTE = re.compile(r"""([^\s/>=][^\s/>=]*)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?""")
_TOKEN = re.compile(r"[^ \t\n\f\r]+")
#: The nodes compared by what they hold (an element by its tag and attributes; its children follow).
_LEAVES = frozenset({"-text", "-comment", "!doctype"})
#: The attribute of each tag whose value the copy may change.
_CHANGED = {"link": "rel", "meta": "http-equiv", "img": "src", "iframe": "src", "frame": "src"}
#: What a frame's address is prefixed with: a frame the view's policy refuses to load still connects to
#: its host as it starts (Chromium), so it is kept from starting at all.
_INERT_FRAME = "about:blank#"


def _cid(value: str) -> str | None:
    """The Content-ID a ``cid:`` address names (RFC 2392: URL-encoded, without angle brackets)."""
    stripped = value.strip(" \t\n\f\r")
    return urllib.parse.unquote(stripped[4:]) if stripped[:4].lower() == "cid:" else None


def _changed(tag: str, value: str, images: Mapping[str, str]) -> str:
    """What the copy makes of the value of ``tag``'s attribute of :data:`_CHANGED`."""
    if tag == "link":
        return _TOKEN.sub(
            lambda token: _INERT_HINT + token[0] if token[0].lower() in FETCH_ONLY_HINTS else token[0], value
        )
    if tag == "meta":
        return _INERT_REFRESH if value.strip(" \t\n\f\r").lower() == "refresh" else value
    if tag != "img":
        stripped = value.strip(" \t\n\f\r")
        return _INERT_FRAME + value if stripped and not stripped.lower().startswith("about:") else value
    cid = _cid(value)
    return images.get(cid, value) if cid is not None else value


def _rewrite_tag(match: re.Match[str], images: Mapping[str, str]) -> str:
    if match.group(2) is None:
        return match.group(0)
    tag = match.group(2).lower()
    attributes = match.group(3)
    for found in _ATTRIBUTE.finditer(attributes):
        if found.group(1).lower() != _CHANGED[tag]:
            continue
        raw = found.group(2)
        if raw is None:
            break
        value = html.unescape(raw[1:-1] if raw[:1] in "\"'" else raw)
        new = _changed(tag, value, images)
        if new == value:
            break
        start, end = found.span(2)
        quoted = '"' + new.replace("&", "&amp;").replace('"', "&quot;") + '"'
        return f"<{match.group(2)}{attributes[:start]}{quoted}{attributes[end:]}>"
    return match.group(0)


def _nodes(source: str) -> list[LexborNode]:
    """Every node of ``source`` as a browser parses it (comments and text too), in document order."""
    root = LexborHTMLParser(source).root
    return list((root.parent or root).traverse(include_text=True)) if root is not None else []


def _to_change(node: LexborNode, images: Mapping[str, str]) -> bool:
    tag = (node.tag or "").lower()
    if tag not in _CHANGED:
        return False
    value = str(node.attributes.get(_CHANGED[tag]) or "")
    return _changed(tag, value, images) != value


def _exact(before: list[LexborNode], after: list[LexborNode], images: Mapping[str, str]) -> bool:
    """Whether ``after`` is ``before`` node for node, each value of :data:`_CHANGED` changed as the copy
    changes it and nothing else."""
    if len(before) != len(after):
        return False
    for old, new in zip(before, after, strict=True):
        tag = (old.tag or "").lower()
        if tag != (new.tag or "").lower() or (tag in _LEAVES and old.html != new.html):
            return False
        was, now = dict(old.attributes), dict(new.attributes)
        if tag in _CHANGED and _CHANGED[tag] in was:
            was[_CHANGED[tag]] = _changed(tag, str(was[_CHANGED[tag]] or ""), images)
        if was != now:
            return False
    return True


def shown_copy(source: str, images: Mapping[str, str] | None = None, max_chars: int | None = None) -> str:
    """The copy of the HTML ``source`` the page shows (see the module); ``images`` maps a Content-ID to
    the ``data:`` address of its part. Raises ``ValueError`` where the copy cannot be made exact, or
    would be longer than ``max_chars`` (each ``cid:`` reference holds its image whole: a few thousand of
    a large one would be gigabytes), found before it is made."""
    images = images or {}
    before = _nodes(source)
    if not any(_to_change(node, images) for node in before):
        return source
    grown = [len(source)]

    def rewritten(match: re.Match[str]) -> str:
        tag = _rewrite_tag(match, images)
        grown[0] += len(tag) - len(match.group(0))
        if max_chars is not None and grown[0] > max_chars:
            raise ValueError(
                f"its HTML with its images drawn holds more than the page shows ({max_chars:,} characters)"
            )
        return tag

    copy = _START_TAG.sub(rewritten, source)
    if not _exact(before, _nodes(copy), images):
        raise ValueError(
            "its HTML holds a resource hint, a refresh or an image written so that the page cannot make it "
            "inert without changing what it shows"
        )
    return copy
