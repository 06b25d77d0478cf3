"""The test client's schema bookkeeping (tests/support/clients/envelope_client.py): a schema's canonical text is
remembered per object, and a schema checked once is not checked again in the process."""

from __future__ import annotations

from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from mcp.client.session import ClientSession
from mcp_types import CallToolResult

from tests.support.clients import envelope_client
from tests.support.clients.envelope_client import (
    check_each_schema_once,
    schema_key,
    validate,
    validate_results_natively,
)

pytestmark = pytest.mark.anyio


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


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"success": {"type": "boolean"}, "summary": {"type": "string"}},
    "required": ["success", "summary"],
    "additionalProperties": False,
}


def test_an_invalid_instance_is_refused_with_jsonschemas_words() -> None:
    validate(SCHEMA, {"success": True, "summary": "ok"})
    with pytest.raises(jsonschema.ValidationError, match="'summary' is a required property"):
        validate(SCHEMA, {"success": True})
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'boolean'"):
        validate(SCHEMA, {"success": "yes", "summary": "ok"})


def test_the_validators_are_held_to_agree_on_the_first_instances_and_their_mutations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A schema jsonschema-rs would judge differently: here, one that accepts any root key.
    lax = {**SCHEMA, "title": "lax"}
    monkeypatch.setattr(envelope_client, "_native", lambda schema: jsonschema_rs.validator_for({}))
    with pytest.raises(AssertionError, match="the validators differ"):
        validate(lax, {"success": True, "summary": "ok"})


def test_a_refusal_jsonschema_does_not_share_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    strict = {**SCHEMA, "title": "strict"}
    monkeypatch.setattr(envelope_client, "_native", lambda schema: jsonschema_rs.validator_for(False))
    with pytest.raises(AssertionError, match="jsonschema-rs refused what jsonschema accepts"):
        validate(strict, {"success": True, "summary": "ok"})


async def test_the_sdk_clients_check_of_a_result_goes_through_validate() -> None:
    validate_results_natively()
    assert getattr(ClientSession.validate_tool_result, "native", False)
    session = object.__new__(ClientSession)
    session._tool_output_schemas = {"t": SCHEMA}  # where the SDK keeps a listed tool's schema
    good = CallToolResult(content=[], structured_content={"success": True, "summary": "ok"})
    await session.validate_tool_result("t", good)
    bad = CallToolResult(content=[], structured_content={"success": True})
    with pytest.raises(RuntimeError, match="Invalid structured content returned by tool t"):
        await session.validate_tool_result("t", bad)


def test_a_schema_that_accepts_the_variants_too_is_no_disagreement() -> None:
    """Regression: the soak checks its envelopes against an empty schema, which accepts the variants."""
    for _ in range(envelope_client._BOTH_CHECKED + 1):
        validate({}, {"success": True, "summary": "ok", "data": {}, "error": None, "meta": {}})


def test_an_envelopes_schema_refuses_each_variant_in_both_validators() -> None:
    strict = {**SCHEMA, "title": "variants"}
    for variant in envelope_client._mutations({"success": True, "summary": "ok"}):
        assert not jsonschema_rs.validator_for(strict).is_valid(variant)
        assert not jsonschema.Draft202012Validator(strict).is_valid(variant)
