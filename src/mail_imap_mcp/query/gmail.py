"""A query as Gmail's own search (``X-GM-RAW``, Google's "IMAP Extensions" of the Gmail developer
documentation), with ordinary SEARCH keys beside it for what Gmail's language cannot say.

Every top-level conjunct that Gmail's operators express goes into one ``X-GM-RAW`` string (``from:``,
``to:``, ``cc:``, ``bcc:``, ``subject:``, words and "phrases", ``is:read``/``is:unread``/``is:starred``,
``after:``/``before:``, ``larger:``/``smaller:``, ``has:attachment``, ``filename:``, ``label:``,
``is:important``, ``category:``, and their ``OR``, ``-`` and parentheses); the others (``\\Answered``,
keywords, headers, a body-only text) go out as IMAP keys in the same ``UID SEARCH``, which ANDs them. Gmail
answers ``has:attachment`` and ``label:`` itself, where IMAP SEARCH has no key for them.

Gmail matches words where IMAP SEARCH matches substrings; on Gmail both are answered by the same engine.
"""

from __future__ import annotations

from mail_imap_mcp.query.imap import Key, search_keys
from mail_imap_mcp.query.tree import (
    AllOf,
    AnyOf,
    Category,
    Contains,
    DateBound,
    Filename,
    HasAttachment,
    HasFlag,
    Label,
    NeedsReply,
    Not,
    Query,
    SizeBound,
)

#: System labels as Gmail's search names them.
_SYSTEM_LABELS = {
    "\\inbox": "in:inbox",
    "\\important": "is:important",
    "\\starred": "is:starred",
    "\\sent": "in:sent",
    "\\draft": "in:drafts",
}
_FLAG_WORDS = {("seen", True): "is:read", ("seen", False): "is:unread", ("flagged", True): "is:starred"}


#: Words Gmail's search reads as operators where they stand bare (``OR``, ``AND``, ``AROUND``: Gmail's
#: "Search operators you can use with Gmail" help page), in any case: such a word is sent in quotes.
_OPERATOR_WORDS = frozenset({"or", "and", "around"})


def quoted(text: str) -> str:
    """A value of Gmail's search: itself where it is one plain word, else a phrase in double quotes (a
    quote inside cannot be written and is dropped, as Gmail's own search box does). A word Gmail would
    read as an operator (``OR``; ``-a``: not a; ``+a``) is a phrase too."""
    clean = text.replace('"', " ").strip()
    plain = all(c.isalnum() or c in "@._-+'" for c in clean) and clean[:1] not in ("-", "+")
    if clean and plain and clean.casefold() not in _OPERATOR_WORDS:
        return clean
    return f'"{" ".join(clean.split())}"'


def label_term(name: str) -> str:
    """``label:`` of a label (Gmail writes a label's spaces and slashes as ``-``); a system label's own
    operator (``\\Inbox``: ``in:inbox``)."""
    system = _SYSTEM_LABELS.get(name.casefold())
    if system is not None:
        return system
    return "label:" + quoted(name.replace("/", "-").replace(" ", "-"))


def raw_of(node: Query) -> str | None:
    """``node`` in Gmail's search language; None where Gmail's operators cannot say it."""
    if isinstance(node, Contains):
        if node.field == "body":
            return None
        value = quoted(node.value)
        return value if node.field == "text" else f"{node.field}:{value}"
    if isinstance(node, HasFlag):
        word = _FLAG_WORDS.get((node.flag, node.present))
        if word is None and node.flag == "flagged":
            return "-is:starred"
        return word
    if isinstance(node, DateBound):
        day = node.day.strftime("%Y/%m/%d")
        return f"after:{day}" if node.bound == "since" else f"before:{day}"
    if isinstance(node, SizeBound):
        return f"{node.bound}:{node.octets}"
    if isinstance(node, HasAttachment):
        return "has:attachment"
    if isinstance(node, Filename):
        return "filename:" + quoted(node.value)
    if isinstance(node, Label):
        return label_term(node.name)
    if isinstance(node, Category):
        return "category:" + quoted(node.name.lower())
    if isinstance(node, Not):
        inner = raw_of(node.part)
        return None if inner is None else f"-{inner}" if " " not in inner else f"-({inner})"
    if isinstance(node, AllOf | AnyOf):
        parts = [raw_of(part) for part in node.parts]
        if any(part is None for part in parts) or not parts:
            return None
        joined = (" " if isinstance(node, AllOf) else " OR ").join(p for p in parts if p is not None)
        return f"({joined})" if len(parts) > 1 else joined
    return None


def gmail_search_keys(query: Query) -> list[Key]:
    """The ``UID SEARCH`` keys of ``query`` on Gmail: ``X-GM-RAW`` with what Gmail says, then the IMAP keys
    of the rest (:func:`mail_imap_mcp.query.search_keys`, which refuses a Gmail-only test it cannot send)."""
    conjuncts = list(query.parts) if isinstance(query, AllOf) else [query]
    if any(isinstance(part, NeedsReply) for part in conjuncts):
        expanded = [p.expanded() if isinstance(p, NeedsReply) else p for p in conjuncts]
        conjuncts = [q for p in expanded for q in (p.parts if isinstance(p, AllOf) else (p,))]
    raw: list[str] = []
    rest: list[Query] = []
    for part in conjuncts:
        said = raw_of(part)
        if said is None:
            rest.append(part)
        else:
            raw.append(said)
    keys: list[Key] = [b"X-GM-RAW", " ".join(raw)] if raw else []
    if rest:
        keys += search_keys(AllOf(tuple(rest)) if len(rest) > 1 else rest[0])
    return keys
