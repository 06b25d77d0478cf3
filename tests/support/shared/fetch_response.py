"""What tests/pure/test_fetch_response.py shares with other test modules."""

from __future__ import annotations

from typing import Any


def typed(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return (type(value), [typed(item) for item in value])
    if isinstance(value, dict):
        return (type(value), [(key, typed(item)) for key, item in value.items()])
    return (type(value), value, getattr(value, "tzinfo", None) and value.utcoffset())
