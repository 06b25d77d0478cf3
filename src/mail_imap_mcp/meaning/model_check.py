"""What reading a model needs of its files, checked without reading its table of vectors: listing the tools
asks it, so that ``about`` and ``like`` are listed exactly where a call can read the model
(:func:`~.model.found_reason`). The table's safetensors header (a few hundred bytes) must name a table of
tokens x dimensions held whole in the file, and the tokenizer must read, numbering no more tokens than the
table has rows. Each answer is kept per files and their modification times: a listing asks again only
where a file changed."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mail_imap_mcp.meaning.static_model import TABLE_TENSORS
from mail_imap_mcp.meaning.unavailable import MeaningUnavailable

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


def _wrong(weights: Path, vocabulary: Path, tokenizer: bool) -> str | None:
    """What keeps the files from being read as a model (None: nothing)."""
    try:
        header, size = _header(weights)
        key = next((key for key in TABLE_TENSORS if key in header), None)
        if key is None:
            return f"{weights.name} holds no table of token vectors ({' or '.join(TABLE_TENSORS)})"
        shape = _shape(header[key])
        if len(shape) != 2 or 0 in shape:
            return f"its table {key} is {tuple(shape)}, not tokens x dimensions"
        if any(int(tensor["data_offsets"][1]) > size for tensor in _tensors(header)):
            raise ValueError("it is cut short")
        mapping = _shape(header.get("mapping"))
    except (OSError, ValueError, TypeError, KeyError, IndexError) as error:
        return f"{weights.name} cannot be read: {error}"
    rows = mapping[0] if mapping else shape[0]
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


def _header(weights: Path) -> tuple[dict[str, Any], int]:
    """The safetensors header of ``weights`` and the bytes of data after it; ValueError where the file
    is no safetensors file."""
    with weights.open("rb") as file:
        length = int.from_bytes(file.read(_LENGTH_BYTES), "little")
        if not 0 < length <= HEADER_LIMIT:
            raise ValueError("no safetensors header")
        header = json.loads(file.read(length))
        data = file.seek(0, 2) - _LENGTH_BYTES - length
    if not isinstance(header, dict) or data < 0:
        raise ValueError("no safetensors header")
    return header, data


def _tensors(header: dict[str, Any]) -> list[dict[str, Any]]:
    """The header's entries of tensors (its ``__metadata__`` is none)."""
    return [tensor for name, tensor in header.items() if name != "__metadata__"]


def _shape(tensor: object) -> list[int]:
    """A tensor's shape as its header entry says it (empty where it says none)."""
    shape = tensor.get("shape") if isinstance(tensor, dict) else None
    return [int(size) for size in shape] if isinstance(shape, list) else []
