"""The C heap's free pages handed back to the system where the C library can (glibc's ``malloc_trim``):
glibc raises its thresholds after big arrays are freed (up to 32 MiB to ``mmap``, twice that kept at the
heap's top), so the arrays of the vectors pass that come after (a batch's tokens, its densities' products)
are taken from the heap and their pages stay resident once freed."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``; None elsewhere (macOS, Windows, musl)."""
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):
        return None
    return trim


def give_back_heap() -> bool:
    """Hand the C heap's free pages back to the system, where the C library can (glibc): a batch's arrays
    and tokens leave them behind, and glibc keeps them otherwise (8 MiB and more over a pass on mail of
    many words, docs/search.md). Whether it could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
