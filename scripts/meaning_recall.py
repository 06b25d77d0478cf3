"""Recall at 10 on the meaning set (tests/support/mail/meaning_set, issue 80 item 5), per half of its
queries: words alone (the engine's BM25 on an index store of the set), meaning alone (the shipped model,
exact cosine over the messages' passages). The figures of docs/search.md.

``scripts/meaning_recall [--engine sqlite|sqlite+tantivy]`` builds the set's index in a temporary
directory and prints a Markdown table with the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("sqlite", "sqlite+tantivy"), default="sqlite")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    from tests.support.mail.meaning_set import meaning_set
    from tests.support.mail.meaning_set.recall import by_meaning, by_words, fill, recall, table

    from mail_imap_mcp.config import AccountConfig, Config, IndexSettings
    from mail_imap_mcp.index.engines import open_engine
    from mail_imap_mcp.meaning.model import shipped_model

    labelled = meaning_set()
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    with tempfile.TemporaryDirectory(prefix="meaning-recall-") as scratch:
        config = Config.model_validate(
            {"server": {"index_dir": scratch}, "index": IndexSettings(index_engine=args.engine).model_dump()}
        )
        engine = open_engine(config)
        store = engine.location("meaning", account).open().store
        try:
            fill(store, labelled)
            columns = {
                f"words only ({args.engine})": recall(by_words(store, labelled), labelled),
                f"meaning only ({shipped_model().name})": recall(
                    by_meaning(shipped_model(), labelled), labelled
                ),
            }
        finally:
            store.close()
            engine.close()
    relevant = len(set().union(*(query.relevant for query in labelled.queries)))
    print(
        f"recall@10 on the meaning set: {len(labelled.queries)} queries, {relevant} relevant messages among "
        f"{len(labelled.messages):,}; load {', '.join(f'{n:.1f}' for n in os.getloadavg())}"
    )
    print(table(columns, labelled))


if __name__ == "__main__":
    main()
