"""What a static model's tensors must be before anything reads them as a model: the table of token vectors
two-dimensional and within :data:`MAX_TABLE_BYTES`, Model2Vec's ``mapping`` of tokens to rows inside the
table, its per-token ``weights`` one finite number a token, the table's values finite. Both the check
made before ``about`` and ``like`` are listed (:mod:`.model_check`, from the file's header and its two
small tensors) and the loader (:mod:`.static_model`, on what it read) ask these, so a table that would
not load is never listed, and a mapping out of range or a NaN never reaches a search."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The names of the table of token vectors: Model2Vec's, then WordLlama's.
TABLE_TENSORS = ("embeddings", "embedding.weight")
#: The largest table a model may hold, as the single floats it is read into (1 GiB): the largest
#: multilingual static models hold half of it; a table of 2 GB passed every check and then broke the
#: reader inside (issue 89).
MAX_TABLE_BYTES = 2**30
#: The bytes of one value of each safetensors dtype a table, mapping or weights may be of.
#: The safetensors dtypes a table, mapping or weights may be of, as numpy reads them (not bfloat16: numpy
#: has none, and the reader refuses it).
DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
}
_INTEGERS = ("I64", "I32", "I16", "I8", "U8")
#: The most tokens a model's mapping or weights may number (a model's vocabulary: a few hundred thousand).
MAX_TOKENS = 2**24


def numpy_bytes(dtype: str) -> int:
    """The bytes of one value of the safetensors ``dtype`` (one of :data:`DTYPES`)."""
    return int(DTYPES[dtype][-1])


def wrong_table(name: str, shape: list[int]) -> str | None:
    """What is wrong with a table of token vectors of ``shape`` (None: nothing)."""
    if len(shape) != 2 or 0 in shape or min(shape) < 0:
        return f"its table {name} is {tuple(shape)}, not tokens x dimensions"
    size = shape[0] * shape[1] * 4
    if size > MAX_TABLE_BYTES:
        return (
            f"its table {name} of {shape[0]:,} x {shape[1]:,} takes {size / 2**30:.1f} GiB as single floats, "
            f"more than the {MAX_TABLE_BYTES // 2**30} GiB a model may"
        )
    return None


def wrong_dtype(name: str, dtype: str, *, integer: bool = False) -> str | None:
    """What is wrong with a tensor ``name`` of ``dtype`` (None: nothing); ``integer``: it numbers rows."""
    if dtype not in DTYPES or (integer and dtype not in _INTEGERS):
        return f"its tensor {name} is of type {dtype}, not {'integers' if integer else 'numbers'}"
    return None


def wrong_parts(
    rows: int, mapping: npt.NDArray[np.generic] | None, weights: npt.NDArray[np.generic] | None
) -> str | None:
    """What is wrong with Model2Vec's ``mapping`` (each token's row of a table of ``rows``) and ``weights``
    (each token's scale), as read (None: nothing)."""
    import numpy as np

    tokens = rows
    if mapping is not None:
        if not np.issubdtype(mapping.dtype, np.integer):
            return f"its mapping is of type {mapping.dtype}, not integers"
        if mapping.ndim != 1:
            return f"its mapping is {mapping.shape}, not one row number a token"
        if mapping.size and (int(mapping.min()) < 0 or int(mapping.max()) >= rows):
            return (
                f"its mapping names rows {int(mapping.min())} to {int(mapping.max())}, its table has "
                f"{rows} (0 to {rows - 1})"
            )
        tokens = int(mapping.shape[0])
    if weights is not None:
        if weights.ndim != 1 or weights.shape[0] != tokens:
            return f"its weights are {weights.shape}, not one a token ({tokens})"
        if not np.isfinite(weights.astype(np.float64)).all():
            return "its weights hold values that are not finite (NaN or infinite)"
    return None


def wrong_values(table: npt.NDArray[np.float32]) -> str | None:
    """What is wrong with the values of the table as read (None: nothing): each must be finite."""
    import numpy as np

    bad = int(table.size - np.count_nonzero(np.isfinite(table)))
    if bad:
        return f"its table holds {bad:,} values that are not finite (NaN or infinite)"
    return None
