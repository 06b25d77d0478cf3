"""Ways to keep a passage's vector in the SQLite engines' index file, compared on the meaning set
(tests/support/mail/meaning_set, issue 80): the bytes a passage of the shipped model's 256 dimensions, how
far the cosine with a query moves from the float one (root mean square and largest, over every passage
and query of the set), and recall at 10 through an index store of the set (meaning alone by the index's
vectors, hubness reduced, and ``about``), per half of the queries, as ``scripts/meaning_recall`` gives
them.

Ways: ``int8`` (:func:`~mail_imap_mcp.meaning.vectors.quantised`, each row scaled so its largest component
is 127: what the index kept before; and scaled to 120, as fine but rounded elsewhere: how much a
message's place moves with the rounding alone), ``6 bits`` (:mod:`mail_imap_mcp.meaning.packed`: what
it keeps now, 64 equal steps within 3.5 root mean squares of the row; and within 3.0, 3.8, 4.2), and others
measured beside them: four bits at the 16 Lloyd-Max levels of a normal distribution, four and five bits
in equal steps. The
others are stored as the int8 levels they read back as, in the int8 layout: the figures depend on the
levels alone, not on how the bytes are laid out.

``scripts/meaning_storage [--engine sqlite|sqlite+tantivy] [--only NAME,...]`` prints a Markdown table and
the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.support.mail.meaning_set import meaning_set  # noqa: E402
from tests.support.mail.meaning_set.recall import by_about, by_nearest, fill, passages, recall  # noqa: E402

import mail_imap_mcp.index.engines.sqlite.vectors as sqlite_vectors  # noqa: E402  (after the path above)
from mail_imap_mcp.config import AccountConfig, Config, IndexSettings  # noqa: E402
from mail_imap_mcp.index.engines import open_engine  # noqa: E402
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model  # noqa: E402
from mail_imap_mcp.meaning.packed import packed, row_bytes, unpacked  # noqa: E402
from mail_imap_mcp.meaning.vectors import quantised  # noqa: E402

if TYPE_CHECKING:
    import numpy.typing as npt

    from mail_imap_mcp.index.store import IndexStore

    Floats = npt.NDArray[np.float32]
    Int8s = npt.NDArray[np.int8]

#: A way of keeping rows: unit float rows to the int8 rows they read back as.
Levels = Callable[["Floats"], "Int8s"]

_LLOYD_MAX = np.array([0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6181, 2.0690, 2.7326], dtype=np.float32)


def _spread(rows: Floats) -> Floats:
    found: Floats = np.sqrt((rows * rows).mean(axis=1, keepdims=True))
    return np.where(found > 0, found, 1).astype(np.float32)


def lloyd_max_4(rows: Floats) -> Int8s:
    """Four bits: each component at the nearest of the 16 Lloyd-Max levels, in its row's spread."""
    step = np.searchsorted((_LLOYD_MAX[1:] + _LLOYD_MAX[:-1]) / 2, np.abs(rows) / _spread(rows))
    levels = np.round(_LLOYD_MAX * 46).astype(np.int8)[step]
    found: Int8s = np.where(rows > 0, levels, -levels).astype(np.int8)
    return found


def equal_steps(bits: int, clip: float) -> Levels:
    """``bits`` bits: each component at the middle of one of ``2 ** bits`` equal steps between ``-clip``
    and ``clip`` times its row's spread."""
    half = 1 << (bits - 1)

    def levels(rows: Floats) -> Int8s:
        codes = np.clip(np.ceil(rows * (half / clip) / _spread(rows)) - 1, -half, half - 1)
        found: Int8s = ((2 * codes + 1) * (64 // half)).astype(np.int8)
        return found

    return levels


def int8_to(top: int) -> Levels:
    """int8 rows scaled so their largest component is ``top`` (:func:`quantised`: 127): as fine, rounded
    elsewhere."""

    def levels(rows: Floats) -> Int8s:
        largest = np.abs(rows).max(axis=1, keepdims=True)
        found: Int8s = np.rint(rows * (top / np.where(largest > 0, largest, 1))).astype(np.int8)
        return found

    return levels


WAYS: dict[str, tuple[int, Levels]] = {
    "int8": (256, quantised),
    "int8, largest 120": (256, int8_to(120)),
    "6 bits (kept)": (row_bytes(256), lambda rows: unpacked(packed(rows), rows.shape[1])),
    "6 bits, equal steps (3.0 spreads)": (192, equal_steps(6, 3.0)),
    "6 bits, equal steps (3.8 spreads)": (192, equal_steps(6, 3.8)),
    "6 bits, equal steps (4.2 spreads)": (192, equal_steps(6, 4.2)),
    "4 bits, Lloyd-Max": (128, lloyd_max_4),
    "4 bits, equal steps (3 spreads)": (128, equal_steps(4, 3.0)),
    "5 bits, equal steps (3.2 spreads)": (160, equal_steps(5, 3.2)),
}


def moved(levels: Levels) -> tuple[float, float]:
    """How far the cosine of each of the set's queries with each of its passages moves when the passage
    is kept so: root mean square and largest."""
    labelled = meaning_set()
    model = shipped_model(ENGLISH)
    rows = model.embed([text for message in labelled.messages for text in passages(message)])
    rows = rows[np.linalg.norm(rows, axis=1) > 0]
    questions = model.embed([query.text for query in labelled.queries])
    kept = levels(rows).astype(np.float32)
    kept /= np.linalg.norm(kept, axis=1, keepdims=True)
    change = kept @ questions.T - rows @ questions.T
    return float(np.sqrt(np.mean(change**2))), float(np.abs(change).max())


@contextmanager
def kept_as(name: str) -> Iterator[None]:
    """The SQLite engines' vectors kept the way ``name`` says while inside (the kept way: as they are)."""
    if name == "6 bits (kept)":
        yield
        return
    levels = WAYS[name][1]

    def blobs(rows: Floats, counts: Sequence[int]) -> list[bytes]:
        ends = np.cumsum(counts)[:-1]
        return [part.tobytes() for part in np.split(levels(rows), ends)]

    with (
        mock.patch.object(sqlite_vectors, "blobs", blobs),
        mock.patch.object(sqlite_vectors, "PACKED", "NULL"),
    ):
        yield


def recalls(engine: str, name: str) -> dict[str, dict[str, float]]:
    """Recall at 10 by the index's vectors and of ``about`` on an index store of the set, kept as ``name``."""
    labelled = meaning_set()
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    with tempfile.TemporaryDirectory(prefix="meaning-storage-") as scratch, kept_as(name):
        config = Config.model_validate(
            {"server": {"index_dir": scratch}, "index": IndexSettings(index_engine=engine).model_dump()}
        )
        opened = open_engine(config)
        store: IndexStore = opened.location("meaning", account).open().store
        try:
            fill(store, labelled)
            model = shipped_model(ENGLISH)
            return {
                "nearest": recall(by_nearest(store, labelled, model), labelled),
                "about": recall(by_about(store, labelled, model), labelled),
            }
        finally:
            store.close()
            opened.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("sqlite", "sqlite+tantivy"), default="sqlite")
    parser.add_argument("--only", default="", help="the ways to measure, by name, comma-separated")
    args = parser.parse_args()
    names = [name for name in WAYS if not args.only or name in args.only.split(",")]
    halves = list(meaning_set().halves())
    print(f"{args.engine}; load {', '.join(f'{n:.1f}' for n in os.getloadavg())}\n")
    heads = " | ".join(f"{half}: vectors / about" for half in halves)
    print(f"| way | bytes a passage (256 dimensions) | cosine moved: rms / largest | {heads} |")
    print(f"|---|---:|---:|{'---:|' * len(halves)}")
    for name in names:
        rms, largest = moved(WAYS[name][1])
        found = recalls(args.engine, name)
        cells = " | ".join(f"{found['nearest'][half]:.3f} / {found['about'][half]:.3f}" for half in halves)
        print(f"| {name} | {WAYS[name][0]} | {rms:.4f} / {largest:.3f} | {cells} |", flush=True)
    print(f"\nload {', '.join(f'{n:.1f}' for n in os.getloadavg())}")


if __name__ == "__main__":
    main()
