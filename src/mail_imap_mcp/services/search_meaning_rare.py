"""The messages of ``about``'s search by words that hold a word few messages hold (an invoice number, a
name, "Wohnung"): the fusion keeps their words' full weight whatever the meaning ranks
(:func:`~mail_imap_mcp.meaning.fusion.fuse`'s ``rare``). Where the two rankings disagree the words weigh
little, which is right for a description's chance matches of common words ("get", "new") but made the
only two messages holding "Wohnung" lose to a parcel note and a dunning letter the model guessed.

A word is rare where at most :data:`RARE_MESSAGES` of the messages searched (their folders, the other
filters) hold it, as the engine matches it: asked of the store one word at a time (at most
:data:`~mail_imap_mcp.meaning.fusion.MAX_WORDS` short pages), unless the words' own search found so few
messages that every word of it is rare."""

from __future__ import annotations

from collections.abc import Sequence

from mail_imap_mcp.index.store import HitPage, IndexStore
from mail_imap_mcp.query.tree import Contains, Query, all_of

#: The most messages a rare word is held by (of those searched).
RARE_MESSAGES = 5


def rare_word_holders(
    store: IndexStore, query: Query, folders: Sequence[str], words: Sequence[str], found: HitPage
) -> set[tuple[str, int]]:
    """The places of the messages ``query`` matches in ``folders`` that hold one of ``words`` held by at
    most :data:`RARE_MESSAGES` of them; ``found``: the search of any of ``words``, which answers alone
    where it counted so few (a total not counted, :data:`~mail_imap_mcp.index.store.UNCOUNTED`, says
    nothing of it)."""
    if 0 <= found.total <= RARE_MESSAGES:
        return {(hit.folder, hit.uid) for hit in found.hits}
    holders: set[tuple[str, int]] = set()
    for word in words:
        page = store.search(
            all_of(query, Contains("text", word)),
            folders=folders,
            order="uid",
            limit=RARE_MESSAGES,
            offset=0,
            bounded=True,
        )
        if page.total <= RARE_MESSAGES:
            holders.update((hit.folder, hit.uid) for hit in page.hits)
    return holders
