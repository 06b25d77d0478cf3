"""Steps of the multilingual model's encoder (:mod:`.multilingual`) that depend on no weight of it: the
layer normalisation, a convolution's weights laid side by side, a batch of texts laid out as rows, the
pooling of its tokens' features by text, and what bounds the threads of numpy's matrix products."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def side_by_side(weights: npt.NDArray[np.float32], n: int) -> npt.NDArray[np.float32]:
    """A convolution's weights over ``n`` places (``n`` blocks of rows, one a place) as ``n`` blocks of
    columns."""
    import numpy as np

    return np.ascontiguousarray(np.concatenate(np.split(weights, n, axis=0), axis=1))


def normalise(
    values: npt.NDArray[np.float32], gain: npt.NDArray[np.float32], bias: npt.NDArray[np.float32], eps: float
) -> None:
    """Layer normalisation of each row of ``values``, in place."""
    import numpy as np

    values -= values.mean(axis=-1, keepdims=True)
    variance = np.einsum("ij,ij->i", values, values) / values.shape[-1]
    values *= np.reciprocal(np.sqrt(variance + eps))[:, None]
    values *= gain
    values += bias


class Layout(NamedTuple):
    """A batch of texts laid out as rows (:func:`layout`)."""

    #: The rows.
    size: int
    #: Each token's row.
    at: npt.NDArray[np.int64]
    #: The rows of zeros (gaps).
    gaps: npt.NDArray[np.int64]
    #: Each row's distinct token (``distinct`` in a gap) times the values a token has, and ``gap`` rows of
    #: a gap more on each side.
    token_of: npt.NDArray[np.int64]


def layout(
    starts: npt.NDArray[np.int64],
    of_text: npt.NDArray[np.int64],
    inverse: npt.NDArray[np.int64],
    distinct: int,
    gap: int,
    width: int,
) -> Layout:
    """The rows of a batch of texts, each text's tokens (the text of each: ``of_text``; its distinct token
    among ``distinct``: ``inverse``) one after the other from ``starts``, with ``gap`` rows of zeros before
    each text and after the last; each row's distinct token counts ``width`` values."""
    import numpy as np

    count, texts = len(inverse), len(starts)
    size = count + gap * (texts + 1)
    at = np.arange(count) + gap * (of_text + 1)
    gaps = (np.append(starts, count) + gap * np.arange(texts + 1))[:, None] + np.arange(gap)
    token_of = np.full(size + 2 * gap, distinct, dtype=np.int64)
    token_of[at + gap] = inverse
    token_of *= width
    return Layout(size, at, gaps.ravel(), token_of)


def pooled(
    rows: npt.NDArray[np.float32],
    inverse: npt.NDArray[np.int64],
    branches: list[npt.NDArray[np.float32]],
    places: npt.NDArray[np.int64],
    of_text: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    eps: float,
) -> npt.NDArray[np.float32]:
    """Each text's features, normalised but for their gain and bias, summed over its tokens and divided
    by the square root of their count: a token's features are its distinct token's row of ``rows``
    (``inverse``) and its row (``places``) of each of ``branches`` (the text of each: ``of_text``; each
    text's count: ``lengths``). The normalisation is folded into the sum: each token's features times the
    inverse of its deviation, summed over its text (matrix products: each text's row holds its tokens'
    inverses), less each token's mean times the same, summed."""
    import numpy as np

    texts, distinct = len(lengths), len(rows)
    widths = [rows.shape[1], *(branch.shape[1] for branch in branches)]
    features = sum(widths)
    sums = rows.sum(axis=1)[inverse]
    squares = np.einsum("ij,ij->i", rows, rows)[inverse]
    for branch in branches:
        sums += branch.sum(axis=1)[places]
        squares += np.einsum("ij,ij->i", branch, branch)[places]
    means = sums / features
    spread = squares / features
    spread -= means * means
    np.maximum(spread, 0, out=spread)
    spread += eps
    inverse_spread = np.reciprocal(np.sqrt(spread, out=spread), out=spread)
    made = np.empty((texts, features), dtype=np.float32)
    by_token = np.bincount(of_text * distinct + inverse, inverse_spread, texts * distinct)
    np.matmul(by_token.astype(np.float32).reshape(texts, distinct), rows, out=made[:, : widths[0]])
    weights = np.zeros((texts, len(branches[0])), dtype=np.float32)
    weights[of_text, places] = inverse_spread
    start = widths[0]
    for branch in branches:
        made[:, start : start + branch.shape[1]] = weights @ branch
        start += branch.shape[1]
    starts = np.zeros(texts, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    made -= np.add.reduceat(means * inverse_spread, starts)[:, None]
    made /= np.sqrt(lengths.astype(np.float32))[:, None]
    return made


def thread_limits() -> Callable[..., Any] | None:
    """What bounds the threads of numpy's matrix products for a call (threadpoolctl's, its libraries
    found once); None where threadpoolctl is missing (numpy's own number of threads then)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    limit: Callable[..., Any] = ThreadpoolController().limit
    return limit
