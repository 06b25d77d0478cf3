"""The ranking by meaning of ``about`` and ``like`` with hubness reduced (:mod:`mail_imap_mcp.meaning.hubness`):
the messages nearest the query, ordered again by their cosine less half their mean cosine to their
:data:`~mail_imap_mcp.meaning.hubness.NEIGHBOURS` nearest messages of the index, so that mail from a
crowd of look-alikes (notifications, newsletters, bookings) stops standing in for what was described.

A message's neighbours are sought among a reference of up to 10,000 messages spread over the index,
recorded in it, and its density found when its vectors are written and kept beside them
(:mod:`mail_imap_mcp.index.densities`): a search reads the candidates' densities with their rows and pays
nothing more. A candidate without a density of the reference recorded (drawn again, the pass not yet
through) has it found at the search against that reference, read from the store then and held until a
search finds none missing. On the meaning set (scripts/meaning_recall) the English paraphrases' recall at
10 by meaning rises from 0.39 to 0.62, the German and French from 0.15 to 0.80 (against a sample of 2,000
found at query time, issue 80); against the stored reference of 10,000 ``about``'s mean of the six
paraphrase sets rises from 0.832 to 0.842 (tune half), 0.628 to 0.677 with personal mail among the
distractors (docs/search.md)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from mail_imap_mcp.index.densities import LoadedReference, read_reference
from mail_imap_mcp.index.store import Hit
from mail_imap_mcp.index.vectors import Densities, Near, VectorStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The decimals of a score that order messages (:func:`in_one_order`): a single float's cosine holds about 7.
SCORE_DIGITS = 5


#: A message found by meaning: its place and ``rank``, ``1 -`` its cosine.
Found = TypeVar("Found", Hit, Near)
#: Each message's stored rows, as :meth:`~mail_imap_mcp.index.vectors.VectorStore.vectors_of` gives them.
Rows = Mapping[tuple[str, int], "npt.NDArray[np.generic]"]


@dataclass
class _Held:
    """The reference a search read (a candidate had no density of it), and the densities found against it."""

    reference: LoadedReference
    found: dict[tuple[str, int], float] = field(default_factory=dict)


_references: weakref.WeakKeyDictionary[VectorStore, _Held] = weakref.WeakKeyDictionary()
_held = threading.Lock()
#: Densities kept per index while a search needs its reference (about 100 B each).
DENSITIES_KEPT = 50_000


def dehubbed(
    vectors: VectorStore, near: Sequence[Found], stored: Densities | None, rows: Rows | None = None
) -> list[Found]:
    """``near`` (nearest first, ``rank`` = 1 - cosine) in the order of their cosine less half their
    density (``stored``: those the store keeps of its reference, :mod:`mail_imap_mcp.index.densities`);
    as they were where the index records no reference. A candidate without a density of that reference
    (it was just drawn again) has it found against the same reference, read from ``vectors`` then (its
    rows those of ``rows``, else read): one ranking never mixes two references."""
    import numpy as np

    from mail_imap_mcp.meaning.hubness import locally_scaled

    cosines = [1.0 - hit.rank for hit in near]
    if stored is None or len(near) < 2:
        return in_one_order(near, cosines)
    places = [(hit.folder, hit.uid) for hit in near]
    values = stored.values
    if any(place not in values for place in places):
        values = _found(vectors, stored, places, rows or {})
    elif vectors in _references:
        with _held:  # every density stored: the reference is no longer needed in memory
            _references.pop(vectors, None)
    density = np.array([values.get(place, 0.0) for place in places], dtype=np.float32)
    return in_one_order(near, locally_scaled(np.array(cosines, dtype=np.float32), density).tolist())


def in_one_order(near: Sequence[Found], scores: Sequence[float]) -> list[Found]:
    """``near`` by ``scores``, highest first, equal scores newest first, then by folder and UID: one
    order on every engine, whatever order each store gives equal ones in (issue 89). Scores are equal to
    :data:`SCORE_DIGITS` decimals: the copies of one message (INBOX and an archive) have the same vectors,
    but sums taken in another order differ in their last bits."""
    order = sorted(
        range(len(near)),
        key=lambda n: (-round(scores[n], SCORE_DIGITS), -near[n].arrival, near[n].folder, near[n].uid),
    )
    return [near[n] for n in order]


def _found(
    vectors: VectorStore, stored: Densities, places: list[tuple[str, int]], rows: Rows
) -> Mapping[tuple[str, int], float]:
    """The densities of ``places``: ``stored``'s, the others found against the same reference (read once
    per generation); where another reference was drawn since ``stored`` was read, every one against it."""
    with _held:
        held = _references.get(vectors)
    if held is None or held.reference.generation != stored.generation:
        reference = read_reference(vectors)
        if reference is None:
            return {}
        held = _Held(reference)
        with _held:
            _references[vectors] = held
    values = dict(stored.values) if held.reference.generation == stored.generation else {}
    with _held:
        values.update((place, held.found[place]) for place in places if place in held.found)
    unknown = [place for place in places if place not in values]
    if unknown:
        found = held.reference.densities(stored_rows(vectors, unknown, rows)).values
        values.update(found)
        with _held:
            if len(held.found) + len(found) > DENSITIES_KEPT:
                held.found.clear()
            held.found.update(found)
    return values


def stored_rows(
    vectors: VectorStore, places: Sequence[tuple[str, int]], rows: Rows
) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
    """The stored rows of each of ``places`` that has them, as floats: those of ``rows``, the others read
    from ``vectors`` (only where some are not in ``rows``)."""
    import numpy as np

    missing = [place for place in places if place not in rows]
    found = vectors.vectors_of(missing) if missing else {}
    found.update((place, np.asarray(rows[place], dtype=np.float32)) for place in places if place in rows)
    return found


def forget(vectors: VectorStore) -> None:
    """Forget the reference of ``vectors`` held for a search, and the densities found against it."""
    with _held:
        _references.pop(vectors, None)
