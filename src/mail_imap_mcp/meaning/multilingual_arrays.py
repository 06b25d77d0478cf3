"""The multilingual model's arrays (:mod:`.multilingual`) as the package's ``weights.npz`` holds them: the
encoder's sizes, each array's name, numpy type and shape (:func:`shapes`), and their reading without
unpickling anything (:func:`read_weights`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.meaning.unavailable import MeaningUnavailable, fatal

if TYPE_CHECKING:
    import numpy.typing as npt

CHUNKS = 17
CHUNK_ROWS = 7530
#: The arrays of the token table, in the order of the chunks.
TABLE = tuple(f"q{chunk}" for chunk in range(1, CHUNKS + 1))
EMBEDDING = 512
BRANCH = 256
#: Each convolution branch: its n-gram's length and the tokens of it before the token.
ORDERS = ((2, 0), (3, 1), (5, 2))
FEATURES = EMBEDDING + len(ORDERS) * BRANCH


def shapes() -> dict[str, tuple[str, tuple[int, ...]]]:
    """Every array the encoder reads: its numpy type and shape."""
    found: dict[str, tuple[str, tuple[int, ...]]] = {
        f"q{chunk}": ("uint8", (CHUNK_ROWS, EMBEDDING)) for chunk in range(1, CHUNKS + 1)
    }
    found |= {"scale": ("float32", (CHUNKS,)), "lo": ("float32", (CHUNKS,)), "eps": ("float64", ())}
    for n, _ in ORDERS:
        found |= {
            f"proj{n}": ("float32", (EMBEDDING, BRANCH)),
            f"w1_{n}": ("float32", (n * BRANCH, BRANCH)),
            f"w2_{n}": ("float32", (n * BRANCH, BRANCH)),
        }
        for vector in ("proj_b", "ln_g", "ln_b", "b1_", "b2_"):
            found[f"{vector}{n}"] = ("float32", (BRANCH,))
    dense = {"d0": (512, 320), "d1": (320, 320), "p1": (512, 320), "d2": (320, 512), "p3": (320, 512)}
    found |= {name: ("float32", shape) for name, shape in dense.items()}
    found |= {"d3": ("float32", (512, 512)), "cnn_W": ("float32", (FEATURES, 512))}
    found |= {
        "cnn_b": ("float32", (512,)),
        "ln_g": ("float32", (FEATURES,)),
        "ln_b": ("float32", (FEATURES,)),
    }
    return found


def read_weights(weights: Path, unusable: Callable[[str], MeaningUnavailable]) -> dict[str, npt.NDArray[Any]]:
    """The encoder's arrays in ``weights`` but its token table (:func:`.token_table.token_table` reads
    that), read without unpickling anything (an object array is refused), each of the type and shape the
    encoder needs and finite."""
    import numpy as np

    wanted = {name: shape for name, shape in shapes().items() if name not in TABLE}
    try:
        with np.load(weights, allow_pickle=False) as archive:
            missing = sorted(set(shapes()) - set(archive.files))
            if missing:
                raise unusable(f"{weights.name} lacks {', '.join(missing)}")
            arrays = {name: archive[name] for name in wanted}
    except MeaningUnavailable:
        raise
    except BaseException as error:  # no zip, an array that needs pickle (ValueError), cut short...
        fatal(error)
        raise unusable(f"{weights.name} cannot be read: {type(error).__name__}: {error}") from error
    for name, (dtype, shape) in wanted.items():
        array = arrays[name]
        if str(array.dtype) != dtype or array.shape != shape:
            raise unusable(f"its array {name} is {array.dtype} {array.shape}, not {dtype} {shape}")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise unusable(f"its array {name} holds values that are not finite")
    return arrays
