"""A ranked first page of the ``sqlite+tantivy`` store, asked again and again back to back (issue 56 item
20): each call's page, and the time until the places it keeps for its cursor (its first 2,000 matches,
ranked again after the page is handed over) are found. The first call finds them; a call of the same
search on the same snapshot reuses them (``tantivy_store.KeptPlaces``), so what the first call's places
take is what every call paid before.

``scripts/profile_kept_places [--messages N] [--calls C]`` seeds a throwaway Dovecot with the bench's
corpus (as ``scripts/profile_mcp_page`` does), builds the index with ``mail-imap-mcp index``, and prints
per query the first call and the median of the others, with the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ("itinerary", "dvolkov", "team")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "src"), str(ROOT)]
    from benchmark.index import _build_ours, _config, _folder_names, _seed
    from tests.support.servers.dovecot import Dovecot

    from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
    from mail_imap_mcp.query import Contains
    from mail_imap_mcp.services.index_places import KEPT_PLACES

    with tempfile.TemporaryDirectory(prefix="profile-kept-places-") as scratch, Dovecot() as dovecot:
        work, user = Path(scratch), dovecot.new_user()
        _seed(dovecot, user, args.messages, _folder_names(40), None)
        config = _config(work / "config.toml", dovecot, user, work / "ix", "sqlite+tantivy")
        build = _build_ours(config, dovecot.password, work / "index.log")
        (path,) = sorted((work / "ix").rglob("*.sqlite3"))
        store = TantivyStore(path)
        try:
            folders = list(store.folders())
            print(f"{args.messages:,} messages in sqlite+tantivy, built in {build['seconds']:.1f} s")
            print(
                "| query | matches | first call: page / places found | later calls (median): page / places found | load |"
            )
            print("|---|---:|---:|---:|---|")
            for word in QUERIES:
                pages, places = [], []
                for _ in range(args.calls):
                    started = time.perf_counter()
                    page = store.search(
                        Contains("text", word),
                        folders=folders,
                        order="relevance",
                        limit=20,
                        offset=0,
                        keep=KEPT_PLACES,
                    )
                    handed = time.perf_counter()
                    if page.places is not None:
                        page.places.result()
                    pages.append((handed - started) * 1000)
                    places.append((time.perf_counter() - started) * 1000)
                load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
                print(
                    f"| `{word}` | {page.total:,} | {pages[0]:.1f} / {places[0]:.1f} ms | "
                    f"{statistics.median(pages[1:]):.1f} / {statistics.median(places[1:]):.1f} ms | {load} |"
                )
        finally:
            store.close()


if __name__ == "__main__":
    main()
