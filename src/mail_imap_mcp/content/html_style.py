"""Inline ``style`` attributes read with a CSS tokenizer (tinycss2), as far as they decide what a reader sees.

A browser tokenizes a declaration before it reads it: comments (``display:/**/none``) vanish, escapes
(``display:\\6e one``) are decoded, an invalid value is dropped without undoing an earlier valid one, and
a later declaration wins unless an earlier one is ``!important``. Reading the same way keeps a sender
from hiding text from the reader while showing it to the agent, or the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import tinycss2
from tinycss2.ast import Declaration, DimensionToken, IdentToken, Node, NumberToken, PercentageToken

__all__ = ["Style", "read_style"]

# Below this opacity (after multiplying those of the ancestors) text is treated as invisible.
INVISIBLE_OPACITY = 0.1

# Values of ``display`` that replace the user-agent ``display:none`` of ``[hidden]``; ``revert`` and
# ``revert-layer`` fall back to it, and an unknown keyword makes the declaration invalid.
_SHOWING_DISPLAY_WORDS = """block inline run-in flow flow-root table flex grid ruby list-item contents inline-block
    inline-table inline-flex inline-grid inline-list-item table-row-group table-header-group
    table-footer-group table-row table-cell table-column-group table-column table-caption ruby-base
    ruby-text ruby-base-container ruby-text-container math -webkit-box -webkit-inline-box -moz-box
    initial inherit unset"""
_SHOWING_DISPLAY = frozenset(_SHOWING_DISPLAY_WORDS.split())
_VISIBILITY = frozenset({"visible", "hidden", "collapse"})
_CLIPPING_OVERFLOW = frozenset({"hidden", "clip"})
# Properties read here; a style without any of them (or an escape that could spell one) is skipped.
_WATCHED = ("display", "visibility", "opacity", "max-height", "\\")


@dataclass(frozen=True, slots=True)
class Style:
    """What one element's ``style`` attribute says about visibility (None: not set)."""

    display_none: bool = False
    #: An explicit display value that shows the element (it overrides the ``hidden`` attribute).
    display_shown: bool = False
    visibility: str | None = None
    opacity: float | None = None
    #: ``max-height:0`` with ``overflow:hidden`` (the usual "preheader" trick).
    collapsed: bool = False


NO_STYLE = Style()


def read_style(css: str | None) -> Style:
    """The visibility-relevant properties of an inline style declaration list."""
    if not css:
        return NO_STYLE
    lowered = css.lower()
    if not any(name in lowered for name in _WATCHED):
        return NO_STYLE
    return _read(css)


@lru_cache(maxsize=2048)
def _read(css: str) -> Style:
    values: dict[str, tuple[str | float, bool]] = {}
    for item in tinycss2.parse_blocks_contents(css, skip_comments=True, skip_whitespace=True):
        if not isinstance(item, Declaration):
            continue
        value = _value(item.lower_name, [t for t in item.value if t.type not in ("whitespace", "comment")])
        if value is None:
            continue  # invalid: the declaration is dropped, an earlier one stays
        earlier = values.get(item.lower_name)
        if earlier is None or item.important or not earlier[1]:
            values[item.lower_name] = (value, item.important)
    display = values.get("display", ("", False))[0]
    visibility = values.get("visibility", (None, False))[0]
    opacity = values.get("opacity", (None, False))[0]
    max_height = values.get("max-height", (None, False))[0]
    overflow = values.get("overflow", values.get("overflow-y", ("", False)))[0]
    return Style(
        display_none=display == "none",
        display_shown=display not in ("", "none"),
        visibility=visibility if isinstance(visibility, str) else None,
        opacity=opacity if isinstance(opacity, float) else None,
        collapsed=max_height == 0.0 and overflow == "clip",
    )


def _value(name: str, tokens: list[Node]) -> str | float | None:
    """The normalised value of a watched property, or None when absent or invalid."""
    if name == "display":
        keywords = _keywords(tokens)
        if keywords == ["none"]:
            return "none"
        if keywords and all(word in _SHOWING_DISPLAY for word in keywords):
            return "shown"
        return None
    if name == "visibility":
        keywords = _keywords(tokens)
        return keywords[0] if len(keywords) == 1 and keywords[0] in _VISIBILITY else None
    if name in ("overflow", "overflow-y"):
        keywords = _keywords(tokens)
        return "clip" if any(word in _CLIPPING_OVERFLOW for word in keywords) else ("" if keywords else None)
    if len(tokens) != 1:
        return None
    token = tokens[0]
    if name == "opacity":
        if isinstance(token, NumberToken):
            return min(max(float(token.value), 0.0), 1.0)
        if isinstance(token, PercentageToken):
            return min(max(float(token.value) / 100, 0.0), 1.0)
        return None
    if name == "max-height" and isinstance(token, NumberToken | DimensionToken | PercentageToken):
        return 0.0 if token.value == 0 else 1.0
    return None


def _keywords(tokens: list[Node]) -> list[str]:
    """The lower-cased identifiers of a value; empty if anything else is in it."""
    if not all(isinstance(token, IdentToken) for token in tokens):
        return []
    return [token.lower_value for token in tokens if isinstance(token, IdentToken)]
