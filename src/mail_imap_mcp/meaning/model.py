"""The local text model that turns text into vectors: WordLlama's ``l2_supercat`` by default, whose weights
ship inside the ``wordllama`` wheel (the ``meaning`` extra). It is loaded from the installed package alone,
never downloaded: WordLlama's loader looks for its tokenizer in ``tokenizers/`` beside the weights when
handed the package folder as its cache, and ``disable_download`` makes a missing file an error instead of
a fetch."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The shipped model's name and size, as the index records the model its vectors were made with.
SHIPPED_MODEL = "wordllama-l2_supercat-256"
SHIPPED_DIMENSIONS = 256


class MeaningUnavailable(Exception):
    """Search by meaning cannot run here: the ``meaning`` extra is not installed, or the model cannot be
    read. The message says why and what the user does."""


class TextModel(Protocol):
    """A model that turns texts into unit vectors of one size."""

    #: The model's name: vectors made by another model are made again.
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, ``dimensions`` wide, each of length 1 (an empty text: a row of zeros)."""
        ...


class _WordLlamaModel:
    def __init__(self, name: str, model: object, dimensions: int) -> None:
        self.name = name
        self.dimensions = dimensions
        self._model = model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        raw = self._model.embed(list(texts), norm=False, batch_size=256)  # type: ignore[attr-defined]
        vectors = np.ascontiguousarray(raw, dtype=np.float32)
        # WordLlama's own norm divides by zero for a text without a known token.
        lengths = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, lengths, out=vectors, where=lengths > 0)
        return vectors


_loaded: dict[str, TextModel] = {}
_loading = threading.Lock()


def shipped_model() -> TextModel:
    """The default model, loaded once per process from the installed ``wordllama`` package."""
    with _loading:
        if SHIPPED_MODEL not in _loaded:
            _loaded[SHIPPED_MODEL] = _load_shipped()
        return _loaded[SHIPPED_MODEL]


def _load_shipped() -> TextModel:
    try:
        import wordllama
        from wordllama import WordLlama
    except ImportError as error:
        raise MeaningUnavailable(
            "search by meaning needs the `meaning` extra: install mail-imap-mcp[meaning]"
        ) from error
    package = Path(wordllama.__file__).parent
    try:
        model = WordLlama.load(
            config="l2_supercat", dim=SHIPPED_DIMENSIONS, cache_dir=package, disable_download=True
        )
    except (OSError, ValueError, FileNotFoundError) as error:
        raise MeaningUnavailable(
            f"the shipped text model could not be read from {package}: {error}"
        ) from error
    return _WordLlamaModel(SHIPPED_MODEL, model, SHIPPED_DIMENSIONS)
