"""Results kept for calls whose text is short: senders, recipients and part headers recur from message
to message, so a page of summaries reads each of them once."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sized
from typing import Any, Generic, ParamSpec, TypeVar, cast

__all__ = ["KeptWhenShort", "kept_when_short"]

P = ParamSpec("P")
R = TypeVar("R")


class KeptWhenShort(Generic[P, R]):
    """``function`` with an LRU of ``maxsize`` results, for calls whose first argument holds at most
    ``max_chars`` (its length; for a tuple, the sum of its items' lengths). Longer calls are worked out
    each time: what is kept stays under ``maxsize * max_chars`` characters of arguments."""

    def __init__(self, function: Callable[P, R], maxsize: int, max_chars: int) -> None:
        self._function = function
        self._kept = functools.lru_cache(maxsize=maxsize)(function)
        self.max_chars = max_chars
        functools.update_wrapper(self, function)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if _chars(args[0]) <= self.max_chars:
            return self._kept(*args, **cast(dict[str, Hashable], kwargs))
        return self._function(*args, **kwargs)

    def cache_info(self) -> Any:
        return self._kept.cache_info()


def kept_when_short(*, maxsize: int, max_chars: int) -> Callable[[Callable[P, R]], KeptWhenShort[P, R]]:
    """Decorator form of :class:`KeptWhenShort`."""

    def decorate(function: Callable[P, R]) -> KeptWhenShort[P, R]:
        return KeptWhenShort(function, maxsize, max_chars)

    return decorate


def _chars(first: object) -> int:
    if isinstance(first, tuple):
        return sum(len(cast(Sized, item)) for item in first)
    return len(cast(Sized, first))
