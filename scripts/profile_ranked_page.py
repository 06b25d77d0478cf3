"""Where a ranked first page of the index spends its time in the store, on a built index file (issue 51
item 3): the page of 20 alone, and the page that also keeps its first 2,000 matches' places for its cursor
(as ``imap_search_messages`` asks a first page), those ranked with the page and ranked again after it
(``sqlite_pages.RANK_KEPT_AFTER``): when the page is handed over, when its places are found (after the
page, on its snapshot), and the time spent ranking (the page's and the places') and looking the places
up. On a checkout that keeps the places inside the page, the page's time is both.

``scripts/profile_ranked_page INDEX_FILE [--runs N]`` (e.g. ``.bench/index-run/ix/default.<tag>.sqlite3`` after
``scripts/bench --index-only --index-messages 1000000``). Read only; prints the load average with the
figures (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import mail_imap_mcp.index.engines.sqlite.pages as pages  # noqa: E402  (after the path above)
import mail_imap_mcp.index.engines.sqlite.ranking as ranking  # noqa: E402
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore  # noqa: E402
from mail_imap_mcp.index.store import HitPage  # noqa: E402
from mail_imap_mcp.query import Contains  # noqa: E402
from mail_imap_mcp.services.index_places import KEPT_PLACES  # noqa: E402

QUERIES = (("from", "dvolkov"), ("subject", "itinerary"))
_spent: dict[str, float] = {}


def _timed(module: Any, name: str) -> None:
    """Add the time of every call of ``module.name`` to :data:`_spent`."""
    function: Callable[..., Any] = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _spent[name] = _spent.get(name, 0.0) + time.perf_counter() - started

    setattr(module, name, timed)


def _ms(samples: list[float]) -> str:
    """The median of ``samples`` (seconds) and, in brackets, the least (the machine's load adds to the rest)."""
    return f"{statistics.median(samples) * 1000:.1f} ({min(samples) * 1000:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index", type=Path)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    _timed(ranking, "_ranked")
    _timed(pages, "_places_of")
    store = SqliteStore(args.index)
    folders = list(store.folders())
    switchable = hasattr(pages, "RANK_KEPT_AFTER")
    print(f"load {os.getloadavg()}")
    print(
        "| query (matches) | kept places | page, ms (least) | places found, ms (least) | ranking, ms | look-up, ms |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    try:
        for field, word in QUERIES:
            query = Contains(field, word)  # type: ignore[arg-type]
            for keep, after in ((0, False), (KEPT_PLACES, False), (KEPT_PLACES, True)):
                if after and not switchable:
                    continue  # a checkout that keeps the places inside the page
                if switchable:
                    pages.RANK_KEPT_AFTER = after

                def page(keep: int = keep, query: Any = query) -> HitPage:
                    return store.search(
                        query, folders=folders, order="relevance", limit=20, offset=0, keep=keep
                    )

                warm = page()
                matches = warm.total
                if isinstance(warm.places, Future):
                    warm.places.result()
                samples, found, ranked, looked = [], [], [], []
                for _ in range(args.runs):
                    _spent.clear()
                    started = time.perf_counter()
                    answer = page()
                    samples.append(time.perf_counter() - started)
                    if isinstance(answer.places, Future):
                        answer.places.result()  # the next run does not compete with it
                    found.append(time.perf_counter() - started)
                    ranked.append(_spent.get("_ranked", 0.0))
                    looked.append(_spent.get("_places_of", 0.0))
                print(
                    f"| {field}:{word} ({matches:,}) | {keep:,}{' ranked after' if after else ''} | "
                    f"{_ms(samples)} | {_ms(found) if keep else '-'} | "
                    f"{statistics.median(ranked) * 1000:.1f} | {statistics.median(looked) * 1000:.1f} |"
                )
    finally:
        store.close()
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
