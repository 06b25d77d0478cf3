"""The resident memory of a shipped model for search by meaning (issue 90: a million messages at most
+150 MB): the process's resident size (``VmRSS``, and of it ``RssAnon``, memory of its own, and
``RssFile``, pages of files it maps, ``RssShmem``, shared memory) before the model is read, once read, after one question embedded, and
after the vectors pass's work for ``--messages`` messages of the realistic corpus
(``scripts/bench_embedding.py``'s; ``--texts varied``: each led by made-up words of ten scripts, so that
the multilingual model's caches fill as on real mail, whose vocabulary the corpus lacks), and after the
pass goes idle (the model's ``rest``), in this one fresh process.

Run it with the project's virtualenv (the ``meaning`` extra installed)::

    .venv/bin/python scripts/bench_model_memory.py [--messages N] [--model english|multilingual]
        [--texts realistic|varied]

The messages are made before the first figure, so that only the model's memory is measured. The
multilingual model's token table is read from its cache file (``mail_imap_mcp.meaning.token_table``):
the figures of a first read, which unpacks it, and of a later one differ by what that costs; the cache
file's path and size are printed, the multilingual model's caches (tokens, rows and words kept, and
their MiB) after the pass, and the load average (``/proc/loadavg``) before and after.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_embedding import QUESTIONS, embed_all, loadavg, realistic, varied  # noqa: E402

from mail_imap_mcp.index.heap import give_back_heap  # noqa: E402
from mail_imap_mcp.meaning.model import ENGLISH, MULTILINGUAL, TextModel, shipped_model  # noqa: E402

FIELDS = ("VmRSS", "RssAnon", "RssFile", "RssShmem")


def resident() -> dict[str, float]:
    """The process's resident sizes in MiB."""
    found: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in FIELDS:
            found[name] = int(value.split()[0]) / 1024
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="scripts/bench_model_memory.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--messages", type=int, default=2_000, help="messages embedded after a question (2,000)"
    )
    parser.add_argument("--model", choices=(ENGLISH, MULTILINGUAL), default=MULTILINGUAL)
    parser.add_argument(
        "--texts", choices=("realistic", "varied"), default="realistic", help="varied: made-up words besides"
    )
    args = parser.parse_args(argv)
    before = loadavg()
    messages = (varied if args.texts == "varied" else realistic)(args.messages)
    gc.collect()
    base = resident()
    steps: list[tuple[str, dict[str, float]]] = []
    cpu = time.process_time()
    model = shipped_model(args.model)
    read_cpu = time.process_time() - cpu
    gc.collect()
    steps.append(("model read", resident()))
    model.embed([QUESTIONS[0]])
    steps.append(("a question embedded", resident()))
    cpu = time.process_time()
    passages = embed_all(messages, model)
    gc.collect()
    cpu = time.process_time() - cpu
    steps.append(
        (
            f"{args.messages:,} {args.texts} messages embedded ({passages:,} passages, {cpu:.1f} CPU-s)",
            resident(),
        )
    )
    caches = _caches(model)
    model.rest()
    gc.collect()
    give_back_heap()  # as the pass does once idle
    steps.append(("the pass idle (the model's caches let go)", resident()))
    print(f"{args.model}: read in {read_cpu:.2f} CPU-s; before it " + _sizes(base, None))
    for step, sizes in steps:
        print(f"  {step}: " + _sizes(sizes, base))
    try:  # a release before kept no cache file
        from mail_imap_mcp.meaning.token_table import cache_dir
    except ImportError:
        pass
    else:
        for path in sorted(cache_dir().glob("*.u8")):
            print(f"  cache file {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    if caches:
        print(f"  caches after the pass: {caches}")
    print(f"  load {before} before, {loadavg()} after")


def _caches(model: TextModel) -> str:
    """How full the multilingual model's caches are, and their MiB (none for a model without them)."""
    kept = getattr(model, "_kept", None)
    if kept is None:
        return ""
    rows = getattr(getattr(model, "_table", None), "_kept", None)  # MemoryRows keeps none: it is whole
    words: dict[str, list[int]] = model._kept_words  # type: ignore[attr-defined]
    words_bytes = sys.getsizeof(words) + sum(
        sys.getsizeof(word) + sys.getsizeof(ids) + sum(sys.getsizeof(i) for i in ids if i > 256)
        for word, ids in words.items()
    )
    return (
        f"{kept.count:,} tokens' values {kept.count * kept.values[0].nbytes / 2**20:.1f} MiB, "
        + (
            f"{rows.count:,} rows {rows.count * rows.values[0].nbytes / 2**20:.1f} MiB, "
            if rows is not None
            else ""
        )
        + f"{len(words):,} words {words_bytes / 2**20:.1f} MiB"
    )


def _sizes(sizes: dict[str, float], base: dict[str, float] | None) -> str:
    if base is None:
        return ", ".join(f"{name} {sizes[name]:.1f} MiB" for name in FIELDS)
    return ", ".join(f"{name} {sizes[name] - base[name]:+.1f} MiB" for name in FIELDS)


if __name__ == "__main__":
    main()
