"""Steps of the multilingual model's encoder (:mod:`.multilingual`) that depend on no weight of it: the
layer normalisation, a convolution's weights laid side by side, and what bounds the threads of numpy's
matrix products."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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


def thread_limits() -> Callable[..., Any] | None:
    """What bounds the threads of numpy's matrix products for a call (threadpoolctl's, its libraries
    found once); None where threadpoolctl is missing (numpy's own number of threads then)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    limit: Callable[..., Any] = ThreadpoolController().limit
    return limit
