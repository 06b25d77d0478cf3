"""How often the signatures' first pass keeps the exact ranking's first ten by meaning (issue 89 item 7):
the meaning set among 3,000 others (4,332 messages, as tests/integration/index/test_meaning_engines_same.py
has it) in a SQLite index with the shipped model's vectors, each of its 40 queries ranked by meaning alone
as ``about`` ranks by it (hubness reduced, fed back), once with every message's codes ranked whole (no
first pass) and once for each ``--rerank`` (passages read back after the first pass) and ``--widen``
(how many times those the Hamming distance picks).

``scripts/meaning_first_pass.py [--rerank 400 600] [--widen 8] [--model english|multilingual]
[--signs-only]`` prints, for each pair, the queries whose first ten are the exact ranking's, with the load
average (the machine may be shared); ``--signs-only`` orders the passages Hamming picks by their signs
alone, as before the sizes were held.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.support.mail.meaning_set import OTHERS, meaning_set  # noqa: E402
from tests.support.mail.meaning_set.recall import by_nearest, labelled_store  # noqa: E402

from mail_imap_mcp.meaning import vectors  # noqa: E402
from mail_imap_mcp.meaning.model import ENGLISH, MULTILINGUAL, shipped_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rerank", type=int, nargs="+", default=[vectors.RERANK])
    parser.add_argument("--widen", type=int, nargs="+", default=[vectors.WIDEN])
    parser.add_argument("--model", choices=(ENGLISH, MULTILINGUAL), default=ENGLISH, help="the shipped model")
    parser.add_argument("--signs-only", action="store_true", help="no sizes: a large component counts as 1")
    args = parser.parse_args()
    labelled = meaning_set(OTHERS + 3000)
    model = shipped_model(args.model)
    sizes = 1.0 if args.signs_only else vectors.LARGE_TIMES
    with (
        tempfile.TemporaryDirectory() as folder,
        labelled_store(Path(folder), "sqlite", None, labelled) as store,
    ):
        ranking = by_nearest(store, labelled, model)

        def first_tens() -> dict[str, list[str]]:
            return {query.id: ranking(query) for query in labelled.queries}

        with mock.patch.object(vectors, "EXACT_MOST", len(labelled.messages) + 1):
            exact = first_tens()
        print("| rerank | widen | first tens as the exact ranking's |")
        print("|---:|---:|---:|")
        for rerank in args.rerank:
            for widen in args.widen:
                with (
                    mock.patch.object(vectors, "RERANK", rerank),
                    mock.patch.object(vectors, "WIDEN", widen),
                    mock.patch.object(vectors, "LARGE_TIMES", sizes),
                ):
                    found = first_tens()
                same = sum(found[query] == ranked for query, ranked in exact.items())
                print(f"| {rerank} | {widen} | {same} of {len(exact)} |")
    print(f"\nload: {', '.join(f'{one:.1f}' for one in os.getloadavg())}")


if __name__ == "__main__":
    main()
