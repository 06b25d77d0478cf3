"""The test client's schema bookkeeping (tests/support/envelope_client.py): a schema's canonical text is
remembered per object, and a schema checked once is not checked again in the process."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.support import envelope_client
from tests.support.envelope_client import check_each_schema_once, schema_key


def test_a_schemas_key_is_its_canonical_text_whichever_object_holds_it() -> None:
    first = {"type": "object", "properties": {"b": {}, "a": {}}}
    same = {"properties": {"a": {}, "b": {}}, "type": "object"}
    assert schema_key(first) == schema_key(same) == schema_key(first)
    assert schema_key({"type": "string"}) != schema_key(first)


def test_the_remembered_keys_are_bounded() -> None:
    schemas = [{"const": n} for n in range(envelope_client._KEYS_KEPT + 50)]
    keys = [schema_key(schema) for schema in schemas]
    assert len(envelope_client._KEYS) <= envelope_client._KEYS_KEPT
    assert [schema_key(schema) for schema in schemas] == keys  # forgotten ones are written out again


def test_an_invalid_schema_is_refused_every_time_a_valid_one_checked_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_each_schema_once()
    invalid: dict[str, Any] = {"type": 12}
    for _ in range(2):
        with pytest.raises(jsonschema.SchemaError):
            jsonschema.Draft202012Validator.check_schema(invalid)
    valid = {"type": "object", "title": "checked once"}
    jsonschema.Draft202012Validator.check_schema(valid)
    monkeypatch.setattr(jsonschema.Draft202012Validator, "iter_errors", None)  # a second check would fail
    jsonschema.Draft202012Validator.check_schema(dict(valid))
