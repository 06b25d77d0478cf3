"""Whether text is drawn in the order it is written: what a question that shows text in its written order
(``services/send_review.py``) may hold, and what only a page that draws it may show.

Two things draw text in another order than it is written. A character of the Unicode bidirectional
algorithm's controls (:data:`REORDERING`: the marks, embeddings, overrides and isolates) reverses or
moves what follows it: ``Pay \\u202e0089\\u202c EUR`` is drawn "Pay 9800 EUR". And a table's parts are
drawn by their kind, not their place (CSS 2.1 section 17.2): its first ``<thead>`` above every row, its
first ``<tfoot>`` below every row, a ``<caption>`` above the table, wherever each is written. The HTML is
parsed as browsers parse it (Lexbor), so rows written without a ``<tbody>`` are in the one it implies.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .html_walker import bounded_depth

__all__ = ["REORDERING", "reordering_character", "table_out_of_order"]

#: The bidirectional controls: ALM, LRM and RLM, the embeddings, overrides and their end (LRE, RLE, PDF,
#: LRO, RLO), and the isolates (LRI, RLI, FSI, PDI).
REORDERING = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})
_ROW_GROUPS = frozenset({"thead", "tbody", "tfoot", "tr"})


def reordering_character(text: str) -> str | None:
    """The first character of ``text`` that reorders how it is drawn, as ``U+202E``; None when none does."""
    for char in text:
        if ord(char) in REORDERING:
            return f"U+{ord(char):04X}"
    return None


def _parts(table: LexborNode) -> list[str]:
    """The tag names of ``table``'s element children, in the order they are written."""
    parts = []
    child = table.child
    while child is not None:
        tag = (child.tag or "").lower()
        if tag and not tag.startswith("-"):
            parts.append(tag)
        child = child.next
    return parts


def _table_out_of_order(parts: list[str]) -> str | None:
    if any(tag == "caption" for tag in parts[1:]):
        return "a <caption> after the start of its table, which a browser draws above the table"
    groups = [tag for tag in parts if tag in _ROW_GROUPS]
    if "thead" in groups and groups.index("thead") > 0:
        return "a <thead> after rows of its table, which a browser draws above them"
    if "tfoot" in groups and groups.index("tfoot") < len(groups) - 1:
        return "a <tfoot> before rows of its table, which a browser draws below them"
    return None


def table_out_of_order(html: str) -> str | None:
    """What of a table in ``html`` a browser draws in another place than it is written ("a <tfoot> before
    rows of its table, which a browser draws below them"); None when every table is drawn as written."""
    try:
        tables = LexborHTMLParser(bounded_depth(html)).css("table")
    except Exception:  # markup that cannot be read is not plain either (content/html_plain.py)
        return "markup that cannot be read"
    for table in tables:
        what = _table_out_of_order(_parts(table))
        if what is not None:
            return what
    return None
