"""Recall at 10 of ways to rank by meaning on the meaning set (tests/support/mail/meaning_set, issue 80),
with the shipped model: its plain mean of token vectors, and methods on the meaning side that keep the
model. The English paraphrases are reported as a whole and in two halves (A: the 1st, 3rd, ... English
topic, B: the others): a method's parameter chosen ("tuned on A") is the best on half A, and half B says
what it is worth on queries it was not chosen on. Beside them: the English keywords, the German and French
paraphrases and keywords, and each method fused with words as ``about`` fuses them
(:func:`mail_imap_mcp.meaning.fusion.fuse`, words by the engine's BM25 on a SQLite index of the set).

Methods:

- **sif**: each token's row weighted by ``a / (a + p)``, ``p`` its frequency in the set's passages
  (Arora et al. 2017; ``a`` = 1e-3, theirs), optionally without the first principal component;
- **idf**: each token's row weighted by its inverse document frequency in the set;
- **late**: word-level late interaction over a pool (the first 100 by meaning and 100 by words): each
  query content word's best cosine to the message's words, weighted by the word's vector length, blended
  with the message's cosine;
- **passages**: a message as one passage, or its heading apart from its body;
- **prf**: pseudo-relevance feedback in the vector space (Rocchio): the query's vector plus the mean of
  its first ``k`` messages', searched again;
- **csls**: hubness reduction (:mod:`mail_imap_mcp.meaning.hubness`): a message's cosine less half its
  mean cosine to its 10 nearest messages (among all of the set's, or among a pool of the first 300 by
  meaning for the query alone).

On top of CSLS and alone (scripts/meaning_methods_csls.py): **whitening**, **abtt** (all-but-the-top),
**mp** (mutual proximity), **request** (a description's request words), **feedback** (what ``about``
does: pseudo-relevance feedback after CSLS) and **fusion** (convex combinations against ``about``'s).
The bench (the set, the model's table, words' rankings, recall per group) is scripts/meaning_bench.py.

``scripts/meaning_methods [--only NAME,...]`` prints a Markdown table and the load average.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import meaning_methods_csls
import numpy as np
from meaning_bench import (
    GROUPS,
    Bench,
    Ranking,
    message_vectors,
    tuned_on_a,
    vector_ranking,
    words_rankings,
)
from tests.support.mail.meaning_set import SetQuery, meaning_set
from tests.support.mail.meaning_set.recall import passages

from mail_imap_mcp.meaning.fusion import STOP_WORDS
from mail_imap_mcp.meaning.hubness import densities, locally_scaled, unit_rows

if TYPE_CHECKING:
    import numpy.typing as npt

    Floats = npt.NDArray[np.float32]

#: Each method's rows, made when asked for (``--only``).
Rows = Callable[[], list[tuple[str, Ranking]]]
#: Methods whose rows are fusions already: not fused with words again.
FUSIONS = frozenset({"fusion"})
_WORD = re.compile(r"\w+")


def csls(
    bench: Bench,
    neighbours: int,
    weight: float,
    pool: int | None = None,
    *,
    rerank: int | None = None,
    sample: int | None = None,
) -> Ranking:
    """Hubness reduction: density among all messages (or a ``sample`` of them), every message ranked or
    the first ``rerank`` by meaning re-ranked; or density among the query's ``pool`` first by meaning."""
    _, scores, vectors, owners = vector_ranking(bench)
    messages = message_vectors(bench, vectors, owners)
    reference = messages
    if sample is not None:
        reference = messages[np.random.default_rng(80).choice(len(messages), sample, replace=False)]
    everywhere = None
    if not pool:
        everywhere = densities(messages, reference, neighbours=neighbours, own=sample is None)

    def ranking(query: SetQuery) -> list[str]:
        found = scores(query)
        if everywhere is not None and rerank is not None:
            among = np.argsort(-found, kind="stable")[:rerank]
            scaled = np.full(len(bench.ids), -9.0, dtype=np.float32)
            scaled[among] = locally_scaled(found[among], everywhere[among], weight=weight)
            return bench.ordered(scaled, among)
        if everywhere is not None:
            return bench.ordered(locally_scaled(found, everywhere, weight=weight))
        among = np.argsort(-found, kind="stable")[:pool]
        density = densities(messages[among], messages[among], neighbours=neighbours, own=True)
        scaled = np.full(len(bench.ids), -9.0, dtype=np.float32)
        scaled[among] = locally_scaled(found[among], density, weight=weight)
        return bench.ordered(scaled, among)

    return ranking


def prf(bench: Bench, first: int, beta: float) -> Ranking:
    """Rocchio in the vector space: the query's vector plus ``beta`` times its ``first`` messages' mean."""
    _, scores, vectors, owners = vector_ranking(bench)
    messages = message_vectors(bench, vectors, owners)

    def ranking(query: SetQuery) -> list[str]:
        found = scores(query)
        top = np.argsort(-found, kind="stable")[:first]
        vector = unit_rows(bench.pooled(bench.token_ids([query.text]), bench.ones))[0]
        moved = unit_rows((vector + beta * messages[top].mean(axis=0))[None, :])[0]
        return bench.ordered(bench.best(vectors @ moved, owners))

    return ranking


def late(bench: Bench, blend: float) -> Ranking:
    """Word-level late interaction over a pool of the first 100 by meaning and by words."""
    _, scores, _, _ = vector_ranking(bench)
    message_words = []
    for message in bench.labelled.messages:
        words = [w.casefold() for w in _WORD.findall(" ".join(passages(message)))]
        message_words.append(list(dict.fromkeys(w for w in words if len(w) > 1 and w not in STOP_WORDS)))
    vocabulary = sorted(set(itertools.chain.from_iterable(message_words)))
    row = {word: n for n, word in enumerate(vocabulary)}
    raw = word_rows(bench, vocabulary)
    unit = unit_rows(raw)
    rows_of = [np.array([row[w] for w in words], dtype=np.int64) for words in message_words]

    def ranking(query: SetQuery) -> list[str]:
        words = [w.casefold() for w in _WORD.findall(query.text)]
        words = list(dict.fromkeys(w for w in words if len(w) > 1 and w not in STOP_WORDS))
        found = scores(query)
        by_meaning = np.argsort(-found, kind="stable")[:100].tolist()
        pool = list(dict.fromkeys(by_meaning + [bench.place[m] for m in bench.words[query.id][:100]]))
        if not words:
            return bench.ordered(found, pool)
        query_raw = word_rows(bench, words)
        query_unit, lengths = unit_rows(query_raw), np.linalg.norm(query_raw, axis=1)
        interaction = np.zeros(len(bench.ids), dtype=np.float32)
        for message in pool:
            if len(rows_of[message]):
                best = (query_unit @ unit[rows_of[message]].T).max(axis=1)
                interaction[message] = (lengths * best).sum() / lengths.sum()
        return bench.ordered(blend * interaction + (1 - blend) * found, pool)

    return ranking


def word_rows(bench: Bench, words: list[str]) -> Floats:
    """The sum of each word's token rows (its leading space token left out)."""
    out = np.zeros((len(words), bench.table.shape[1]), dtype=np.float32)
    space = bench.tokenizer.token_to_id("▁")
    for n, ids in enumerate(bench.token_ids([f" {word}" for word in words])):
        kept = ids[ids != space] if len(ids) > 1 else ids
        out[n] = bench.table[kept].sum(axis=0)
    return out


def methods(bench: Bench) -> dict[str, Rows]:
    """Each method's rows, made when asked for."""
    ranking, *_ = vector_ranking(bench)
    sif = {f"a={a:g}": bench.frequency for a in (1e-4, 3e-4, 1e-3, 3e-3)}
    return {
        "baseline": lambda: [("mean of token vectors (shipped)", ranking)],
        "sif": lambda: tuned_on_a(
            bench,
            "sif",
            {
                **{
                    label: vector_ranking(
                        bench, (float(label[2:]) / (float(label[2:]) + p)).astype(np.float32)
                    )[0]
                    for label, p in sif.items()
                },
                "a=1e-3 less pc1": vector_ranking(
                    bench, (1e-3 / (1e-3 + bench.frequency)).astype(np.float32), remove=1
                )[0],
            },
        ),
        "idf": lambda: [
            (
                "idf",
                vector_ranking(
                    bench, np.log((len(bench.ids) + 1) / (bench.document_frequency + 1)).astype(np.float32)
                )[0],
            )
        ],
        "late": lambda: tuned_on_a(
            bench, "late", {f"blend {b}": late(bench, b) for b in (1.0, 0.7, 0.5, 0.3)}
        ),
        "passages": lambda: [
            ("passages: one per message", vector_ranking(bench, shape=lambda found: [" ".join(found)])[0]),
        ],
        "prf": lambda: tuned_on_a(
            bench, "prf", {f"k={k} beta={b}": prf(bench, k, b) for k in (3, 5, 10) for b in (0.5, 1.0)}
        ),
        "csls": lambda: [
            ("csls k=10 weight 0.5 (CSLS's own)", csls(bench, 10, 0.5)),
            *tuned_on_a(
                bench,
                "csls",
                {
                    f"k={k} weight {w}": csls(bench, k, w)
                    for k in (5, 10, 20, 50)
                    for w in (0.25, 0.5, 0.75, 1.0)
                },
            ),
            *[
                (f"csls k=10 weight 0.5, the first {n} by meaning re-ranked", csls(bench, 10, 0.5, rerank=n))
                for n in (100, 200, 300)
            ],
            *[
                (f"csls k=10 weight 0.5, density among a sample of {n:,}", csls(bench, 10, 0.5, sample=n))
                for n in (250, 500, 1000)
            ],
            ("csls in the query's pool of 300, k=10 weight 0.5", csls(bench, 10, 0.5, pool=300)),
            ("csls in the query's pool of 100, k=10 weight 0.5", csls(bench, 10, 0.5, pool=100)),
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="the methods to run, by name, comma-separated")
    args = parser.parse_args()
    labelled = meaning_set()
    bench = Bench(labelled, words_rankings(labelled))
    found = {**methods(bench), **meaning_methods_csls.methods(bench)}
    chosen = args.only.split(",") if args.only else list(found)
    print(f"recall@10, meaning set; load {', '.join(f'{n:.1f}' for n in os.getloadavg())}\n")
    print("| method | para en | A | B | keyword en | para de/fr | keyword de/fr |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    def row(label: str, ranking: Ranking) -> None:
        got = bench.recall(ranking)
        both = (got["para A"] + got["para B"]) / 2
        print(f"| {label} | {both:.2f} | " + " | ".join(f"{got[g]:.2f}" for g in GROUPS) + " |", flush=True)

    row("words only (BM25)", lambda query: bench.words[query.id])
    for name in chosen:
        for label, ranking in found[name]():
            row(label, ranking)
            if name not in FUSIONS:
                row(f"{label}, fused with words", bench.fused(ranking))


if __name__ == "__main__":
    main()
