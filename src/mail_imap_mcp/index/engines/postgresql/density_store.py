"""The densities' half of the PostgreSQL store's :class:`~mail_imap_mcp.index.vectors.VectorStore`
(:mod:`mail_imap_mcp.index.densities`; the statements in :mod:`.densities`): the reference recorded, each
message's density kept and read back, under the index's advisory lock where written."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from mail_imap_mcp.index.engines.postgresql import densities as stored_densities
from mail_imap_mcp.index.engines.postgresql.failures import failures_of
from mail_imap_mcp.index.engines.postgresql.vector_reads import sample_ids
from mail_imap_mcp.index.vectors import Densities, DensityReference

if TYPE_CHECKING:
    from mail_imap_mcp.index.engines.postgresql.counts import Scoped

R = TypeVar("R")


class DensityStore:
    """Density methods of a store that reads (``_read``) and writes under its lock (``_write``) the index
    in ``schema``."""

    schema: str
    #: The generation and the message (sent time, row id) after which :meth:`densities_todo` goes on.
    _densities_after: tuple[int, tuple[int, int]] | None = None

    if TYPE_CHECKING:

        def _read(self, work: Callable[[Scoped], R]) -> R: ...

        def _write(self, work: Callable[[Scoped], R]) -> R: ...

    def density_reference(self) -> DensityReference | None:
        with failures_of(self.schema):
            return self._read(stored_densities.reference)

    def draw_density_reference(self, limit: int, counted: int) -> int | None:
        def draw(conn: Scoped) -> int | None:
            messages = sample_ids(conn, limit)
            return stored_densities.put_reference(conn, messages, counted) if messages else None

        with failures_of(self.schema):
            return self._write(draw)

    def densities_todo(self, generation: int, limit: int) -> list[tuple[str, int]]:
        held = self._densities_after
        after = held[1] if held is not None and held[0] == generation else None
        with failures_of(self.schema):
            found = self._read(lambda conn: stored_densities.todo(conn, generation, after, limit))
            if not found and after is not None:  # the oldest reached: again from the newest
                found = self._read(lambda conn: stored_densities.todo(conn, generation, None, limit))
        self._densities_after = (generation, found[-1][0]) if len(found) == limit else None
        return [place for _, place in found]

    def put_densities(self, densities: Densities) -> bool:
        with failures_of(self.schema):
            return self._write(lambda conn: stored_densities.put_values(conn, densities))

    def densities_of(self, places: Sequence[tuple[str, int]]) -> Densities | None:
        with failures_of(self.schema):
            return self._read(lambda conn: stored_densities.stored(conn, places))
