"""Small text models on the disk, in the layouts ``[index] meaning_model_dir`` reads: a word-level tokenizer
of a few words (lower-cased, split at spaces and punctuation, ``[UNK]`` for any other word) and a table of
their vectors, written by the same safetensors and tokenizers libraries the models of the hub are."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import WordLevel

UNKNOWN = "[UNK]"
#: The unknown token's row: far from every word's, so a mean that took it in would show.
UNKNOWN_ROW = (0.0, 0.0, 0.0, 9.0)

#: Four-dimensional vectors of a few words: heating near radiator, invoice near bill, apart from each other.
WORDS: dict[str, tuple[float, ...]] = {
    "heating": (1.0, 0.1, 0.0, 0.0),
    "radiator": (0.9, 0.2, 0.0, 0.0),
    "landlord": (0.7, 0.0, 0.3, 0.0),
    "invoice": (0.0, 1.0, 0.1, 0.0),
    "bill": (0.1, 0.9, 0.0, 0.0),
    "holiday": (0.0, 0.0, 1.0, 0.0),
}


def tokenizer_of(words: Sequence[str]) -> Tokenizer:
    """A word-level tokenizer numbering ``[UNK]`` 0, then ``words`` in order."""
    vocabulary = {UNKNOWN: 0, **{word: n + 1 for n, word in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocabulary, unk_token=UNKNOWN))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def table_of(vectors: Mapping[str, Sequence[float]]) -> np.ndarray:
    """The table of :func:`tokenizer_of`'s tokens: the unknown token's row, then each word's."""
    return np.array([UNKNOWN_ROW, *vectors.values()], dtype=np.float32)


def model2vec_dir(
    directory: Path,
    vectors: Mapping[str, Sequence[float]] = WORDS,
    extra: Mapping[str, np.ndarray] | None = None,
) -> Path:
    """A Model2Vec model in ``directory``: ``model.safetensors`` (``embeddings``, with ``extra``
    tensors such as ``weights`` and ``mapping``), ``tokenizer.json`` and ``config.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": table_of(vectors), **(extra or {})}, str(directory / "model.safetensors"))
    tokenizer_of(list(vectors)).save(str(directory / "tokenizer.json"))
    (directory / "config.json").write_text(json.dumps({"model_type": "model2vec", "normalize": True}))
    return directory


def wordllama_dir(directory: Path, vectors: Mapping[str, Sequence[float]] = WORDS) -> Path:
    """A WordLlama model in ``directory``: ``weights/<config>_<dim>.safetensors`` (``embedding.weight``)
    and ``tokenizers/<config>_tokenizer_config.json``, as the wordllama package lays out its own."""
    table = table_of(vectors)
    (directory / "weights").mkdir(parents=True, exist_ok=True)
    (directory / "tokenizers").mkdir(exist_ok=True)
    save_file({"embedding.weight": table}, str(directory / "weights" / f"tiny_{table.shape[1]}.safetensors"))
    tokenizer_of(list(vectors)).save(str(directory / "tokenizers" / "tiny_tokenizer_config.json"))
    return directory


def expected(words: Sequence[str], vectors: Mapping[str, Sequence[float]] = WORDS) -> np.ndarray:
    """The unit vector of a text of ``words`` (known ones: the unknown token is left out of the mean)."""
    mean = np.mean([vectors[word] for word in words], axis=0)
    return (mean / np.linalg.norm(mean)).astype(np.float32)
