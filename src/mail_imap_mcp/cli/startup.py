"""A command's start: the imports of the server (the MCP SDK, pydantic's models of both protocol
versions, the project's tools) made without the cyclic garbage collector.

Those imports make some hundred thousand objects that live as long as the process, and the collector's
passes over them while they were made took a quarter of a ``serve``'s start (0.94 CPU-seconds, 0.69
without them: ``scripts/startup_cost.py``). What they made is then frozen: the collector's later passes,
while the server answers, skip it too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the body (a command's imports) without the cyclic collector, then freeze what is alive."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()
