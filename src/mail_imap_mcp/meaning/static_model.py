"""Static text models read from a directory: a table of token vectors (safetensors) and the tokenizer that
numbers the tokens (a ``tokenizers`` JSON file). A text's vector is the mean of its tokens' rows, made unit
length. WordLlama and Model2Vec models are both of this kind and differ only in where the two files lie and
what the table is called, so one reader takes both:

- Model2Vec: ``model.safetensors`` (tensor ``embeddings``, with its optional per-token ``weights`` and the
  ``mapping`` of tokens to rows of a quantised vocabulary) and ``tokenizer.json``;
- WordLlama: ``weights/<config>_<dim>.safetensors`` (tensor ``embedding.weight``) and
  ``tokenizers/<config>_tokenizer_config.json``, the layout of the ``wordllama`` package itself, whose
  folder is the shipped model's directory.

Only the safetensors and tokenizers readers and numpy run: no model library is imported, so nothing here
can fetch a file."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.meaning.model_tables import TABLE_TENSORS, wrong_parts, wrong_table, wrong_values
from mail_imap_mcp.meaning.recorded import recorded_name
from mail_imap_mcp.meaning.unavailable import MeaningUnavailable, fatal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Texts tokenized and pooled at once: bounds the memory of one step (its tokens' rows).
BATCH_TEXTS = 256
#: Words whose tokens a model keeps (:class:`_WordTokens`) before it starts a new table (a few MB).
KEPT_WORDS = 50_000
#: The space a SentencePiece-style normalizer writes for each space, and before the text.
_SPACE = "\u2581"
#: A word as such a tokenizer sees it: the spaces before it and what runs to the next space.
_WORD = re.compile(f"{_SPACE}+[^{_SPACE}]*|[^{_SPACE}]+")


class StaticModel:
    """A static model: ``embed`` pools its tokens' rows of the table (:class:`~.model.TextModel`)."""

    def __init__(self, name: str, table: npt.NDArray[np.float32], tokenizer: Any) -> None:
        self.name = name
        self.dimensions = int(table.shape[1])
        self._table = table
        self._tokenizer = tokenizer
        tokenizer.no_padding()
        tokenizer.no_truncation()
        # Model2Vec's word-level tokenizers answer the unknown token for every word they lack: it says
        # nothing of the text, so it is left out of the mean (as Model2Vec does).
        unknown = getattr(tokenizer.model, "unk_token", None)
        self._unknown = tokenizer.token_to_id(unknown) if unknown else None
        self._encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        self._words = _WordTokens.of(tokenizer)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(texts), BATCH_TEXTS):
            batch = list(texts[start : start + BATCH_TEXTS])
            out[start : start + len(batch)] = self._pooled(batch)
        lengths = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, lengths, out=out, where=lengths > 0)
        return out

    def rest(self) -> None:
        if self._words is not None:
            self._words.rest()

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        if self._words is not None:
            return self._words.tokens(texts)
        return [encoding.ids for encoding in self._encode(texts, add_special_tokens=False)]

    def _pooled(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """The sum of each text's token rows (a row of zeros for a text without a token): the mean's
        direction, which is all a unit vector keeps."""
        import numpy as np

        tokens = self._token_ids(texts)
        counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        ids = np.fromiter(itertools.chain.from_iterable(tokens), dtype=np.int64, count=int(counts.sum()))
        if self._unknown is not None:
            known = ids != self._unknown
            if not known.all():
                owner = np.repeat(np.arange(len(texts)), counts)[known]
                ids = ids[known]
                counts = np.bincount(owner, minlength=len(texts))
        sums = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        bounds = [0, *np.cumsum(counts).tolist()]
        # Text by text: np.add.reduceat over the rows of all of them took six times as long.
        for row in np.flatnonzero(counts).tolist():
            sums[row] = self._table[ids[bounds[row] : bounds[row + 1]]].sum(axis=0)
        return sums


class _WordTokens:
    """The tokens of texts word by word, each word's kept, for a SentencePiece-style BPE tokenizer (the
    shipped model's, Llama's): it reads a whole text as one word, so its own cache of words never hits and
    nine tenths of an embedding went to tokenizing. Its normalizer writes a space mark before the text and
    for each space, and none of its tokens has a mark after anything else, so no token spans two words: the
    tokens of a text are those of its words (the marks before each, and what runs to the next mark) one
    after the other, each tokenized once by the tokenizer's model (:data:`KEPT_WORDS` at a time)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._kept: dict[str, list[int]] = {}

    @classmethod
    def of(cls, tokenizer: Any) -> _WordTokens | None:
        """The word tokens of ``tokenizer``; None for one of another kind (it splits words itself)."""
        normalizer = tokenizer.normalizer
        if tokenizer.pre_tokenizer is not None or normalizer is None:
            return None
        if normalizer.normalize_str("a b  c") != f"{_SPACE}a{_SPACE}b{_SPACE}{_SPACE}c":
            return None
        if any(_SPACE in token.lstrip(_SPACE) for token in tokenizer.get_vocab(with_added_tokens=True)):
            return None
        return cls(tokenizer.model)

    def rest(self) -> None:
        """Let go of the words kept."""
        self._kept = {}

    def tokens(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, as the tokenizer gives them for the whole text."""
        kept = self._kept
        if len(kept) > KEPT_WORDS:  # a new table: another thread may be reading the old one
            kept = self._kept = {}
        words = [_WORD.findall(_SPACE + text.replace(" ", _SPACE)) if text else [] for text in texts]
        for word in {word for found in words for word in found if word not in kept}:
            kept[word] = [token.id for token in self._model.tokenize(word)]
        return [list(itertools.chain.from_iterable(map(kept.__getitem__, found))) for found in words]


def load_directory(directory: Path, named: str) -> StaticModel:
    """The model in ``directory`` (Model2Vec or WordLlama layout), its vectors recorded under the
    directory's name and a digest of both files (another model in the same place makes them again);
    :class:`MeaningUnavailable` starting with ``named`` (the setting as the user wrote it) when the
    directory holds no usable model, or the extra's readers are not installed."""
    unusable = unusable_model(named)
    weights, vocabulary = model_files(directory, named)
    try:
        digest = _digest(weights, vocabulary)
    except OSError as error:
        raise unusable(f"cannot be read: {error}") from error
    return load_files(weights, vocabulary, unusable, recorded_name(f"{directory.name}-{digest}"))


def model_files(directory: Path, named: str) -> tuple[Path, Path]:
    """The table's and the tokenizer's files in ``directory``, found without reading them;
    :class:`MeaningUnavailable` starting with ``named`` where either is missing."""
    unusable = unusable_model(named)
    if not directory.is_dir():
        raise unusable("no such directory")
    weights = _one(directory, ("model.safetensors", "weights/*.safetensors", "*.safetensors"), unusable)
    vocabulary = _one(
        directory, ("tokenizer.json", "tokenizers/*.json", "*tokenizer*.json"), unusable, "tokenizer"
    )
    return weights, vocabulary


def load_files(
    weights: Path, vocabulary: Path, unusable: Callable[[str], MeaningUnavailable], name: str
) -> StaticModel:
    """The model of the table in ``weights`` and the tokenizer in ``vocabulary``, its vectors recorded
    under ``name``; ``unusable`` makes the error saying what is wrong with them."""
    try:
        import numpy as np
        from safetensors import safe_open
        from tokenizers import Tokenizer
    except ImportError as error:
        raise unusable("the meaning extra is not installed") from error
    # The tokenizer runs on every core; left unsaid, every child process the server starts afterwards
    # (the extraction sandbox) would write a warning into the log as it forks. Its children exec at once.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    try:
        tokenizer = Tokenizer.from_file(str(vocabulary))
    except BaseException as error:  # the Rust reader raises plain Exceptions of its own, or panics
        fatal(error)
        raise unusable(f"{vocabulary.name} is no tokenizer: {error}") from error
    try:
        with safe_open(str(weights), framework="np") as tensors:
            found = set(tensors.keys())
            key = next((key for key in TABLE_TENSORS if key in found), None)
            if key is None:
                raise unusable(
                    f"{weights.name} holds no table of token vectors ({' or '.join(TABLE_TENSORS)})"
                )
            why = wrong_table(key, list(tensors.get_slice(key).get_shape()))
            if why is not None:
                raise unusable(why)
            table = tensors.get_tensor(key)
            mapping = tensors.get_tensor("mapping") if "mapping" in found else None
            scale = tensors.get_tensor("weights") if "weights" in found else None
    except MeaningUnavailable:
        raise
    except BaseException as error:  # a file that is no safetensors, cut short, or one its reader panics on
        fatal(error)
        raise unusable(f"{weights.name} cannot be read: {type(error).__name__}: {error}") from error
    why = wrong_parts(int(table.shape[0]), mapping, scale)
    if why is not None:
        raise unusable(why)
    # Single floats, whatever the file keeps (WordLlama's are half floats): summing half floats into
    # single ones took twice as long as summing single floats.
    table = table.astype(np.float32)
    if mapping is not None:
        table = table[np.asarray(mapping, dtype=np.int64)]
    if scale is not None:
        table = table * np.asarray(scale, dtype=np.float32).reshape(-1, 1)
    why = wrong_values(table)
    if why is not None:
        raise unusable(why)
    tokens = tokenizer.get_vocab_size(with_added_tokens=True)
    if tokens > table.shape[0]:
        raise unusable(f"its tokenizer numbers {tokens} tokens, its table has {table.shape[0]} rows")
    return StaticModel(name, np.ascontiguousarray(table), tokenizer)


def unusable_model(named: str) -> Callable[[str], MeaningUnavailable]:
    """The error saying what is wrong with a model directory, after ``named``: the setting and its value
    as the user wrote them."""

    def unusable(why: str) -> MeaningUnavailable:
        return MeaningUnavailable(f"{named}: {why}")

    return unusable


def _one(
    directory: Path,
    patterns: Sequence[str],
    unusable: Callable[[str], MeaningUnavailable],
    what: str = "safetensors file",
) -> Path:
    """The one file of ``directory`` the first matching pattern finds."""
    for pattern in patterns:
        found = sorted(path for path in directory.glob(pattern) if path.is_file())
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(str(path.relative_to(directory)) for path in found)
            raise unusable(f"several {what}s ({names}): keep one")
    raise unusable(f"no {what} ({' or '.join(patterns)})")


def _digest(*files: Path) -> str:
    """12 hex digits of the files' contents: the model's identity where it has no name of its own."""
    digest = hashlib.blake2b(digest_size=6)
    for path in files:
        with path.open("rb") as file:
            digest.update(hashlib.file_digest(file, "blake2b").digest())
    return digest.hexdigest()
