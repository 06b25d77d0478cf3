"""What reading a model needs of its files, checked without reading its table of vectors: listing the tools
asks it, so that ``about`` and ``like`` are listed exactly where a call can read the model
(:func:`~.model.found_reason`). The table's safetensors header (a few hundred bytes) must name a table of
tokens x dimensions of a size a model may have (:mod:`.model_tables`), each tensor's bytes where and as
many as the header says; Model2Vec's mapping and weights (one number a token) are read, each row named in
the table and each weight finite; and the tokenizer must read, numbering no more tokens than the table
has rows. Only the table's own values are left to the loader. Each answer is kept per files and their modification times: a listing asks again only
where a file changed."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.meaning.model_tables import (
    DTYPES,
    MAX_TOKENS,
    TABLE_TENSORS,
    numpy_bytes,
    wrong_dtype,
    wrong_parts,
    wrong_table,
)
from mail_imap_mcp.meaning.unavailable import MeaningUnavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The size of a safetensors header past which a file is taken for something else (its format's own cap).
HEADER_LIMIT = 100_000_000
#: A width in bytes of the header's length, at the head of a safetensors file.
_LENGTH_BYTES = 8

#: Each check's files, with their modification times then, and what was wrong (None: nothing).
_checked: dict[tuple[Path, Path, bool], tuple[tuple[int, int], str | None]] = {}
_checking = threading.Lock()


def check_files(
    weights: Path, vocabulary: Path, unusable: Callable[[str], MeaningUnavailable], *, tokenizer: bool
) -> None:
    """Return where the table in ``weights`` (and, with ``tokenizer``, the tokenizer in ``vocabulary``)
    can be read as a model; else raise ``unusable`` saying what is wrong."""
    try:
        stamp = (weights.stat().st_mtime_ns, vocabulary.stat().st_mtime_ns)
    except OSError as error:
        raise unusable(f"cannot be read: {error}") from error
    key = (weights, vocabulary, tokenizer)
    with _checking:
        known = _checked.get(key)
        if known is None or known[0] != stamp:
            known = _checked[key] = (stamp, _wrong(weights, vocabulary, tokenizer))
    if known[1] is not None:
        raise unusable(known[1])


class _Wrong(Exception):
    """What is wrong with the model's files, found part way through the check."""


def _said(why: str | None) -> None:
    if why is not None:
        raise _Wrong(why)


def _wrong(weights: Path, vocabulary: Path, tokenizer: bool) -> str | None:
    """What keeps the files from being read as a model (None: nothing)."""
    try:
        rows = _token_rows(weights)
    except _Wrong as wrong:
        return str(wrong)
    except ImportError:
        return "the meaning extra is not installed"
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
        return f"{weights.name} cannot be read: {error}"
    if not tokenizer:
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return "the meaning extra is not installed"
    try:
        tokens = Tokenizer.from_file(str(vocabulary)).get_vocab_size(with_added_tokens=True)
    except Exception as error:  # the Rust reader raises plain Exceptions of its own
        return f"{vocabulary.name} is no tokenizer: {error}"
    if tokens > rows:
        return f"its tokenizer numbers {tokens} tokens, its table has {rows} rows"
    return None


def _token_rows(weights: Path) -> int:
    """How many tokens the table in ``weights`` gives a row (its mapping's length, else its rows), once
    its header and small tensors pass every check (:class:`_Wrong` saying what is wrong)."""
    header, start, size = _header(weights)
    key = next((key for key in TABLE_TENSORS if key in header), None)
    if key is None:
        raise _Wrong(f"{weights.name} holds no table of token vectors ({' or '.join(TABLE_TENSORS)})")
    shape = _shape(header[key])
    _said(wrong_table(key, shape) or wrong_dtype(key, str(header[key].get("dtype"))))
    _said(_wrong_extents(header, size))
    mapping = _small(weights, header, start, "mapping", integer=True)
    _said(wrong_parts(shape[0], mapping, _small(weights, header, start, "weights")))
    return shape[0] if mapping is None else int(mapping.shape[0])


def _header(weights: Path) -> tuple[dict[str, Any], int, int]:
    """The safetensors header of ``weights``, where its data starts and the bytes of data; ValueError
    where the file is no safetensors file."""
    with weights.open("rb") as file:
        length = int.from_bytes(file.read(_LENGTH_BYTES), "little")
        if not 0 < length <= HEADER_LIMIT:
            raise ValueError("no safetensors header")
        header = json.loads(file.read(length))
        data = file.seek(0, 2) - _LENGTH_BYTES - length
    if not isinstance(header, dict) or data < 0:
        raise ValueError("no safetensors header")
    return header, _LENGTH_BYTES + length, data


def _wrong_extents(header: dict[str, Any], size: int) -> str | None:
    """Whether every tensor's bytes are where its header says, as many as its shape and type take."""
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        begin, end = (int(offset) for offset in tensor["data_offsets"])
        if end > size:
            raise ValueError("it is cut short")
        dtype = str(tensor.get("dtype"))
        values = math.prod(_shape(tensor))
        if dtype in DTYPES and not 0 <= begin <= end == begin + values * numpy_bytes(dtype):
            return f"its tensor {name} takes {end - begin} bytes, its shape {values * numpy_bytes(dtype)}"
    return None


def _small(
    weights: Path, header: dict[str, Any], start: int, name: str, *, integer: bool = False
) -> npt.NDArray[np.generic] | None:
    """The one-dimensional tensor ``name`` of the file, one value a token (None: it has none)."""
    import numpy as np

    tensor = header.get(name)
    if tensor is None:
        return None
    dtype = str(tensor.get("dtype"))
    shape = _shape(tensor)
    why = wrong_dtype(name, dtype, integer=integer)
    if why is None and (len(shape) != 1 or shape[0] > MAX_TOKENS):
        why = f"its tensor {name} is {tuple(shape)}, not one value a token"
    _said(why)
    begin = start + int(tensor["data_offsets"][0])
    return np.fromfile(weights, dtype=DTYPES[dtype], count=shape[0], offset=begin)


def _shape(tensor: object) -> list[int]:
    """A tensor's shape as its header entry says it (empty where it says none)."""
    shape = tensor.get("shape") if isinstance(tensor, dict) else None
    return [int(size) for size in shape] if isinstance(shape, list) else []
