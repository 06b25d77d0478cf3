"""The densities' half of the vector store contract (``index/vectors.py``: the reference recorded, each
message's density of it kept and read back), in memory, for the vector stores of tests that keep their
vectors in a dict: held to the same contract as the engines' (tests/pure/test_index_densities.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mail_imap_mcp.index.vectors import Densities, DensityReference

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Place = tuple[str, int]


class DensitiesInMemory:
    """The density methods of :class:`~mail_imap_mcp.index.vectors.VectorStore` over ``self.vectors``
    (each message's rows; the last put is the newest)."""

    vectors: dict[Place, npt.NDArray[np.float32]]

    def __init__(self) -> None:
        self.reference: DensityReference | None = None
        self.densities: dict[Place, tuple[int, float]] = {}
        self._generation = 0

    def density_reference(self) -> DensityReference | None:
        if self.reference is None:
            return None
        return replace(
            self.reference, members=tuple(place for place in self.reference.members if place in self.vectors)
        )

    def vector_sample(self, limit: int) -> dict[Place, npt.NDArray[np.float32]]:
        """The store's sample (its own)."""
        raise NotImplementedError

    def draw_density_reference(self, limit: int, counted: int) -> int | None:
        members = tuple(self.vector_sample(limit))
        if not members:
            return None
        self._generation += 1
        self.reference = DensityReference(self._generation, counted, members)
        return self._generation

    def densities_todo(self, generation: int, limit: int) -> list[Place]:
        newest_first = reversed(list(self.vectors))
        return [place for place in newest_first if self.densities.get(place, (0, 0.0))[0] != generation][
            :limit
        ]

    def put_densities(self, densities: Densities) -> bool:
        if self.reference is None or self.reference.generation != densities.generation:
            return False
        self.densities.update(
            (place, (densities.generation, value))
            for place, value in densities.values.items()
            if place in self.vectors
        )
        return True

    def densities_of(self, places: Sequence[Place]) -> Densities | None:
        if self.reference is None:
            return None
        made = self.reference.generation
        kept = {place: self.densities[place] for place in places if place in self.densities}
        return Densities(made, {place: value for place, (of, value) in kept.items() if of == made})
