"""What an index store keeps for search by meaning (:mod:`mail_imap_mcp.meaning`): each message's vectors
(one per passage of it, :func:`mail_imap_mcp.index.passages.passages`), made by one text model, kept
with the message and removed with it. The sync fills them in a pass behind the words (:class:`VectorTodo`:
what still has none); a search by meaning asks the store for the messages nearest a vector among those a
query tree matches (:meth:`VectorStore.nearest`). Every engine implements :class:`VectorStore` beside
:class:`~.store.IndexStore`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mail_imap_mcp.index.store import Hit
from mail_imap_mcp.query.tree import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True)
class VectorTodo:
    """A message indexed without vectors (or with another model's): its place and its text columns
    (:data:`~.store.TEXT_COLUMNS`), from which its passages are made."""

    folder: str
    uid: int
    texts: tuple[str, ...]


@dataclass(frozen=True)
class VectorCounts:
    """How far the vectors are: messages that have them (made by the store's model), of those indexed."""

    with_vectors: int
    indexed: int

    @property
    def partial(self) -> bool:
        return self.with_vectors < self.indexed


@dataclass(frozen=True)
class DensityReference:
    """The messages each message's density is reckoned against (:mod:`mail_imap_mcp.index.densities`):
    recorded in the index, so every process of it (team mode) ranks against the same ones. ``generation``
    is raised each time it is drawn again; ``counted``, the messages with vectors when it was drawn;
    ``members``, its messages still indexed."""

    generation: int
    counted: int
    members: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Densities:
    """Some messages' densities (``values``, by folder and UID) against the reference of ``generation``."""

    generation: int
    values: Mapping[tuple[str, int], float]


class VectorStore(Protocol):
    """One account's vectors, in the engine of its index."""

    def vector_model(self) -> str | None:
        """The name of the model the stored vectors were made with (None: none stored yet)."""
        ...

    def vectors_todo(self, model: str, limit: int) -> list[VectorTodo]:
        """Up to ``limit`` messages without vectors of ``model``, newest first."""
        ...

    def put_vectors(
        self,
        model: str,
        vectors: Mapping[tuple[str, int], npt.NDArray[np.float32]],
        densities: Densities | None = None,
    ) -> None:
        """Keep each message's vectors (``(folder, uid)``: its passages' rows, unit length), made by
        ``model``, in one transaction; vectors of another model are dropped first (with the densities and
        their reference). A message no longer indexed is skipped. Their ``densities`` are kept in the same
        transaction where their generation is the reference's; else a message given vectors has none."""
        ...

    def vector_counts(self, model: str, folders: Sequence[str] | None = None) -> VectorCounts:
        """How many indexed messages (of ``folders``; None: every folder) have vectors of ``model``."""
        ...

    def vectors_of(self, places: Sequence[tuple[str, int]]) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        """The stored vectors of each of ``places`` (folder, UID) that has them: its passages' rows, in the
        directions stored (not of length 1 where the store keeps them quantised)."""
        ...

    def vector_sample(self, limit: int) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        """The stored vectors (as :meth:`vectors_of` gives them) of up to ``limit`` messages spread over
        the index: every message's where it has no more."""
        ...

    def density_reference(self) -> DensityReference | None:
        """The reference recorded (None: none drawn yet, or the vectors were made again since)."""
        ...

    def draw_density_reference(self, limit: int, counted: int) -> int | None:
        """Draw the reference, :meth:`vector_sample`'s messages of ``limit`` (their vectors not read),
        when ``counted`` messages have vectors, and record it in one transaction; its generation (one
        more than the last; None: no message has vectors). Every density stored is now of an older one."""
        ...

    def densities_todo(self, generation: int, limit: int) -> list[tuple[str, int]]:
        """Up to ``limit`` messages with vectors whose density is not of ``generation``, newest first."""
        ...

    def put_densities(self, densities: Densities) -> bool:
        """Keep ``densities`` in one transaction, where their generation is the reference's still;
        whether it was (else nothing is written: another process drew a reference since)."""
        ...

    def densities_of(self, places: Sequence[tuple[str, int]]) -> Densities | None:
        """The densities of those of ``places`` that have one of the reference's generation (None: no
        reference is recorded)."""
        ...

    def nearest(
        self, vector: npt.NDArray[np.float32], query: Query | None, folders: Sequence[str], limit: int
    ) -> list[Hit]:
        """The ``limit`` messages of ``folders`` that ``query`` matches (None: every one) and that have
        vectors, nearest ``vector`` first (a message by its nearest passage); ``Hit.rank`` is ``1 -``
        cosine similarity (lower is better)."""
        ...


@dataclass(frozen=True)
class Near:
    """A message near a vector (:meth:`Nearness.near`): its place, ``rank`` as :class:`~.store.Hit`'s (``1 -``
    cosine), its arrival and size (a page's kept place), its stored rows as :meth:`VectorStore.vectors_of`
    gives them (None: not read) and the store's own key for it."""

    folder: str
    uid: int
    rank: float
    arrival: int
    size: int
    rows: npt.NDArray[np.generic] | None
    key: int


class Nearness(Protocol):
    """The nearest messages of one page's search, asked more than once (``about``'s vector and the vector
    fed back) on one snapshot of the store: what depends on the search alone (the messages its filters
    match, the freshness of the copy in memory) found once."""

    def near(self, vector: npt.NDArray[np.float32], limit: int) -> list[Near]:
        """:meth:`VectorStore.nearest` as places, their rows read back by the way, the texts not read."""
        ...

    def hits(self, near: Sequence[Near]) -> list[Hit]:
        """The hits of ``near`` (of this snapshot), in that order, ranked as they are."""
        ...

    def densities(self, near: Sequence[Near]) -> Densities | None:
        """:meth:`VectorStore.densities_of` ``near``, on this snapshot."""
        ...


class NearnessStore(Protocol):
    """A vector store that answers a page's nearest messages on one snapshot (the SQLite engines)."""

    def nearness(self, query: Query | None, folders: Sequence[str]) -> AbstractContextManager[Nearness]:
        """The nearest messages of ``folders`` that ``query`` matches (None: every one), on one snapshot
        held until the block ends."""
        ...
