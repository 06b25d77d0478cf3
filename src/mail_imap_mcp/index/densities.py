"""Each message's density, found when its vectors are written (issue 90): its mean cosine to its
:data:`~mail_imap_mcp.meaning.hubness.NEIGHBOURS` nearest messages of a reference of up to
:data:`STORED_REFERENCE` messages spread over the index, kept beside its vectors, read by the ranking by
meaning with its rows (``services/search_meaning_hubs.py``), so a question pays nothing for it.

The reference is drawn and recorded in the index (:meth:`~.vectors.VectorStore.draw_density_reference`:
:meth:`~.vectors.VectorStore.vector_sample`'s messages and a generation), so every process of one index
(team mode) ranks against the same one. The pass behind the words (:func:`~.sync_vectors.fill_vectors`)
draws it when none is recorded, and again only where it pays (:func:`redraw_due`): while it holds fewer
than :data:`STORED_REFERENCE` messages, once the messages with vectors have grown by half; once full,
once they have doubled or halved; and at the end of a pass that gave vectors to a quarter or more of
them (:data:`FILLED_SHARE`: a first fill goes newest first). Each batch of new vectors has its densities
against the reference of the moment, written with them; those of an older reference (or none) are found
again after the new messages' vectors, newest first (:meth:`~.vectors.VectorStore.densities_todo`:
resumed wherever the pass stopped). A first fill newest first of 100,000 messages so finds at most two
densities a message (each message's with its vectors, then every one against the reference drawn at
its end).

The reference is held only while the pass runs, as whole numbers (:func:`~mail_imap_mcp.meaning.hubness.
whole_rows`: 10,000 x 512 is 5 MB) and where each member is among them in arrays (:class:`Places`: 120 KB,
its members' list not kept beside them), the C heap given back once it is read (and by the pass after
each batch, :func:`~.heap.give_back_heap`), and by a search only where a candidate has no density of the
reference recorded (just drawn again, not yet found again): then it is read from the store, once per
generation, and dropped once a search finds none missing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mail_imap_mcp.index.heap import give_back_heap
from mail_imap_mcp.index.vectors import Densities, DensityReference, VectorStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The most messages of the reference: 10,000 raised ``about``'s recall over 2,000 (docs/search.md).
STORED_REFERENCE = 10_000
#: While the reference is not full, it is drawn again once the messages with vectors grow by this share.
GROWN_SHARE = 0.5
#: Once full, it is drawn again once they have grown or fallen by this factor.
CHANGED_FACTOR = 2.0
#: A pass that gave vectors to at least this share of the messages that have them (a first fill, newest
#: first) draws the reference again at its end, where it was drawn before the last of them: else the
#: oldest mail, without vectors when it was drawn, would be in no reference. Such a draw finds again at
#: most 1 / this densities a message the pass embedded (4 x 0.16 CPU-ms, against some 2 of embedding);
#: a tenth would allow ten, where a build beside the words runs the pass once per part it stores.
FILLED_SHARE = 0.25
#: Members of a reference made whole numbers at once (:func:`loaded`): 1,000 of 512 dimensions are 2.7
#: MB of float rows at 1.33 passages a message, and :func:`~mail_imap_mcp.meaning.hubness.message_vectors`
#: makes a few copies of them.
LOAD_CHUNK = 1000
#: Densities found and kept per transaction by :func:`fill_densities`.
DENSITY_BATCH = 512

Place = tuple[str, int]


@dataclass(frozen=True)
class Places:
    """Where each member of a reference is among its rows, in arrays: each member's folder (its number
    among ``folders``) and UID as one key (number x 2 ** 32 + UID), sorted, and its row beside it. 10,000
    members take 120 KB, against some 2 MB as a dict of (folder, UID) tuples."""

    folders: dict[str, int]
    keys: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int32]

    @classmethod
    def of(cls, places: Sequence[Place]) -> Places:
        """The places of rows in the order of ``places``."""
        import numpy as np

        folders: dict[str, int] = {}
        keys = np.fromiter(
            ((folders.setdefault(folder, len(folders)) << 32) | uid for folder, uid in places),
            dtype=np.int64,
            count=len(places),
        )
        order = np.argsort(keys, kind="stable")
        return cls(folders, keys[order], order.astype(np.int32))

    def __len__(self) -> int:
        return len(self.keys)

    def rows_of(self, places: Sequence[Place]) -> list[int]:
        """The row of each of ``places`` (-1: not a member)."""
        import numpy as np

        wanted = np.fromiter(
            ((self.folders.get(folder, -1) << 32) | uid for folder, uid in places),
            dtype=np.int64,
            count=len(places),
        )
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        found: list[int] = np.where(self.keys[at] == wanted, self.rows[at], -1).tolist()
        return found


@dataclass(frozen=True)
class Drawn:
    """What the pass keeps of the reference recorded (:class:`~.vectors.DensityReference`) to know when it
    is due again: not its members (10,000 places, 1.5 MB), which its rows' :class:`Places` hold."""

    generation: int
    counted: int
    members: int

    @classmethod
    def of(cls, recorded: DensityReference) -> Drawn:
        return cls(recorded.generation, recorded.counted, len(recorded.members))


@dataclass(frozen=True)
class LoadedReference:
    """A reference read into memory: its generation, its messages' vectors as whole numbers, and where
    each message is among them."""

    generation: int
    rows: npt.NDArray[np.int8]
    places: Places

    def densities(self, rows: Mapping[Place, npt.NDArray[np.float32]]) -> Densities:
        """The densities of the messages whose stored rows are ``rows`` (a message without any: 0)."""
        from mail_imap_mcp.meaning.hubness import whole_densities, whole_rows

        places = list(rows)
        mine = whole_rows([rows[place] for place in places], self.rows.shape[1])
        found = whole_densities(mine, self.rows, self.places.rows_of(places))
        return Densities(self.generation, dict(zip(places, found.tolist(), strict=True)))


def loaded(
    generation: int,
    places: Sequence[Place],
    read: Callable[[Sequence[Place]], Mapping[Place, npt.NDArray[np.float32]]],
) -> LoadedReference | None:
    """The reference of ``generation`` whose members are ``places``, their stored rows ``read`` and made
    whole numbers :data:`LOAD_CHUNK` at a time (a member without rows read back, gone meanwhile: left
    out); None: no member."""
    import numpy as np

    from mail_imap_mcp.meaning.hubness import whole_rows

    parts: list[npt.NDArray[np.int8]] = []
    kept: list[Place] = []
    for start in range(0, len(places), LOAD_CHUNK):
        rows = read(places[start : start + LOAD_CHUNK])
        chunk = [place for place in places[start : start + LOAD_CHUNK] if place in rows]
        if chunk:
            parts.append(whole_rows([rows[place] for place in chunk], int(rows[chunk[0]].shape[-1])))
            kept += chunk
    if not kept:
        return None
    return LoadedReference(generation, np.concatenate(parts), Places.of(kept))


def read_reference(store: VectorStore, recorded: DensityReference | None = None) -> LoadedReference | None:
    """The reference recorded in ``store`` (``recorded``: as read already), its rows read from it."""
    recorded = recorded if recorded is not None else store.density_reference()
    if recorded is None:
        return None
    return loaded(recorded.generation, recorded.members, store.vectors_of)


def redraw_due(drawn: Drawn | None, with_vectors: int, filled: int = 0) -> bool:
    """Whether the reference ``drawn`` (None: none) is to be drawn (again) now that ``with_vectors``
    messages have vectors, at the end of a pass that gave ``filled`` of them vectors (0: not at its end)."""
    if with_vectors <= 0:
        return False
    if drawn is None or not drawn.members:
        return True
    if filled >= FILLED_SHARE * with_vectors and drawn.counted < with_vectors:
        return True
    if drawn.members < STORED_REFERENCE:
        return with_vectors >= (1 + GROWN_SHARE) * drawn.counted
    return with_vectors >= CHANGED_FACTOR * drawn.counted or with_vectors * CHANGED_FACTOR <= drawn.counted


class DensityKeeper:
    """The reference of one pass (:func:`~.sync_vectors.fill_vectors`): read or drawn when it is due,
    held until the pass ends."""

    def __init__(self, store: VectorStore, model: str) -> None:
        self._store = store
        self._model = model
        self.reference: LoadedReference | None = None
        #: Densities found this pass (the pass's cost).
        self.found = 0
        #: The reference recorded as last read (not its members: its rows' places hold them).
        self._drawn: Drawn | None = None
        #: The messages with vectors of the model: counted once (a ``count(*)`` of a million rows on
        #: PostgreSQL during a first fill), then what this pass gives vectors added (:meth:`gave`).
        self._with_vectors: int | None = None

    def _read(self) -> tuple[Drawn | None, DensityReference | None]:
        """The reference recorded: as last read while its generation is the store's (asked alone, each
        batch; its members not read again), else read again (with its members)."""
        held = self._drawn
        if held is not None:
            now = self._store.densities_of([])
            if now is not None and now.generation == held.generation:
                return held, None
        recorded = self._store.density_reference()
        self._drawn = None if recorded is None else Drawn.of(recorded)
        return self._drawn, recorded

    def _load(self, recorded: DensityReference | None) -> None:
        """Hold the reference ``recorded`` (None: the one recorded now), its rows read, and give back the
        C heap its reading used (a thousand members' float rows at a time)."""
        recorded = recorded if recorded is not None else self._store.density_reference()
        self._drawn = None if recorded is None else Drawn.of(recorded)
        self.reference = None  # the one before let go first: never two held at once
        self.reference = None if recorded is None else read_reference(self._store, recorded)
        give_back_heap()

    def refresh(self, filled: int = 0) -> LoadedReference | None:
        """The reference, drawn again where it is due (:func:`redraw_due`; ``filled``: as at the end of a
        pass that gave so many messages vectors), else the one recorded (read again where another process
        drew it since). The messages with vectors are counted on the first call of a pass and at its end
        (:meth:`fill`), those it gives vectors added between (:meth:`gave`)."""
        store = self._store
        drawn, recorded = self._read()
        if self._with_vectors is None:
            self._with_vectors = store.vector_counts(self._model).with_vectors
        with_vectors = self._with_vectors
        if redraw_due(drawn, with_vectors, filled):
            # Its members drawn in the store; their rows read a chunk at a time (10,000 of 512 dimensions
            # are 27 MB of float rows at 1.33 passages a message, 5 MB as whole numbers).
            if store.draw_density_reference(STORED_REFERENCE, with_vectors) is not None:
                self._load(None)
            else:
                self._drawn, self.reference = None, None
        elif drawn is None or with_vectors <= 0:  # none, or of the model before (dropped with its vectors)
            self.reference = None
        elif self.reference is None or self.reference.generation != drawn.generation:
            self._load(recorded)
        return self.reference

    def gave(self, count: int) -> None:
        """This pass gave ``count`` more messages vectors of the model (kept since the count: what other
        processes give them is counted at the pass's end, :meth:`fill`, so a redraw timed by growth may
        wait until then)."""
        if self._with_vectors is not None:
            self._with_vectors += count

    def of(self, vectors: Mapping[Place, npt.NDArray[np.float32]]) -> Densities | None:
        """The densities of newly made ``vectors`` against the reference held (None: none). Their products
        (chunks of 4 MB) raise glibc's thresholds, so the pass gives the C heap back after each batch
        (:func:`~.heap.give_back_heap`, :func:`~.sync_vectors.fill_vectors`)."""
        if self.reference is None or not vectors:
            return None
        if any(rows.shape[-1] != self.reference.rows.shape[1] for rows in vectors.values()):
            return None  # another model's (its first vectors drop the reference with the vectors before)
        self.found += len(vectors)
        return self.reference.densities(vectors)

    def fill(
        self,
        stop: Callable[[], bool],
        pause: Callable[[], object],
        filled: int = 0,
        batch: int = DENSITY_BATCH,
    ) -> int:
        """Find the density of every message that has none of the reference's generation (drawn first
        where due, at the end of a pass that gave ``filled`` messages vectors), newest first, a batch per
        transaction, until none is left or ``stop`` says so; how many were found. A reference drawn
        meanwhile by another process is read and gone on with."""
        import numpy as np

        done = 0
        self._with_vectors = None  # counted again at the pass's end: what another process gave is seen
        reference = self.refresh(filled)
        while reference is not None and not stop():
            todo = self._store.densities_todo(reference.generation, batch)
            if not todo:
                break
            rows = self._store.vectors_of(todo)
            nothing = np.zeros((0, reference.rows.shape[1]), dtype=np.float32)  # a message of no passages
            found = reference.densities({place: rows.get(place, nothing) for place in todo})
            self.found += len(found.values)
            if self._store.put_densities(found):
                done += len(found.values)
            else:
                reference = self.refresh()
            pause()
        return done
