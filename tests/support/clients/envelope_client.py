"""An MCP client wrapper for tests: every envelope it sees is checked against the contract.

Each call asserts that the result is a valid envelope: exactly the five root keys, the
published ``outputSchema`` validates it (success and failure alike), the first content block is
text with the same JSON as ``structuredContent`` (a success may add image blocks after it), and
``isError == not success``.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import jsonschema_rs
from mcp import Client
from mcp.client.session import ClientSession
from mcp_types import CallToolResult, ImageContent, TextContent

ROOT_KEYS = {"success", "summary", "data", "error", "meta"}

#: The first JSON-RPC message of a handshake-era session, for tests that speak the wire themselves.
INITIALIZE_REQUEST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}

#: Every envelope any test has seen, for suite-wide checks (e.g. no secret anywhere).
SEEN: list[dict[str, Any]] = []


_VALIDATORS: dict[str, Any] = {}
#: The canonical text of the schema objects seen last (by identity, each held so its id stays its own):
#: a session asks about the same few dicts call after call, and writing one out costs a millisecond.
_KEYS: dict[int, tuple[Any, str]] = {}
_KEYS_KEPT = 256


def schema_key(schema: Any) -> str:
    """``schema`` as canonical JSON text, remembered for the last :data:`_KEYS_KEPT` schema objects."""
    known = _KEYS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    key = json.dumps(schema, sort_keys=True, default=repr)
    if len(_KEYS) >= _KEYS_KEPT:
        _KEYS.pop(next(iter(_KEYS)))
    _KEYS[id(schema)] = (schema, key)
    return key


def _validator(schema: dict[str, Any]) -> Any:
    """One checked, reusable validator per schema (jsonschema.validate re-checks the schema each call)."""
    key = schema_key(schema)
    if key not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]


def check_each_schema_once() -> None:
    """Make the metaschema check of an ``outputSchema`` run once per schema in this process.

    The SDK's client checks every tool's ``outputSchema`` against the JSON Schema metaschema the
    first time a session calls that tool (about 80 ms for ``imap_get_message``), and the suite opens
    a session per test: hundreds of checks of the same 14 schemas. The check is a pure function of the
    schema, so a schema checked once (and found valid) is not checked again; an invalid one still
    raises on every call.
    """
    for cls in {jsonschema.Draft202012Validator, jsonschema.Draft7Validator}:
        if getattr(cls.check_schema, "checks_once", False):
            continue
        check = cls.check_schema
        checked: set[str] = set()

        def check_once(
            schema: Any, *args: Any, _check: Any = check, _checked: set[str] = checked, **kw: Any
        ) -> None:
            key = schema_key(schema)
            if key not in _checked:
                _check(schema, *args, **kw)
                _checked.add(key)

        check_once.checks_once = True  # type: ignore[attr-defined]
        cls.check_schema = staticmethod(check_once)  # type: ignore[method-assign]


#: Native (jsonschema-rs) validators by schema text, and how many valid instances of each were checked
#: by jsonschema as well (:data:`_BOTH_CHECKED` each, with mutations of them: the two must give the same
#: verdict, whatever it is: a schema may accept them).
_NATIVE: dict[str, Any] = {}
_CHECKED_BY_BOTH: dict[str, int] = {}
_BOTH_CHECKED = 3


def _native(schema: dict[str, Any]) -> Any:
    key = schema_key(schema)
    if key not in _NATIVE:
        _NATIVE[key] = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    return _NATIVE[key]


def _mutations(instance: Any) -> list[Any]:
    """Variants of a valid envelope that a tool's envelope schema refuses: a root key added, one dropped,
    ``success`` of another type. The two validators must give each the same verdict, whatever it is: a
    schema may accept them (the soak checks against the empty schema)."""
    if not isinstance(instance, dict) or not instance:
        return []
    first = next(iter(instance))
    return [
        {**instance, "unexpected": 1},
        {key: value for key, value in instance.items() if key != first},
        {**instance, "success": "yes"},
    ]


def validate(schema: dict[str, Any], instance: Any) -> None:
    """Raise jsonschema's ``ValidationError`` unless ``instance`` is valid against ``schema``.

    jsonschema-rs (compiled) says whether; jsonschema (pure Python, the SDK client's own) says why, and
    checks the first few valid instances of each schema in the process, with :func:`_mutations` of them,
    so that the two are seen to agree on the envelopes of the run itself. The SDK's check of every result
    took 3-4% of the in-process tests' CPU.
    """
    key = schema_key(schema)
    if not _native(schema).is_valid(instance):
        _validator(schema).validate(instance)
        raise AssertionError(f"jsonschema-rs refused what jsonschema accepts: {instance!r}")
    if _CHECKED_BY_BOTH.get(key, 0) < _BOTH_CHECKED:
        _CHECKED_BY_BOTH[key] = _CHECKED_BY_BOTH.get(key, 0) + 1
        _validator(schema).validate(instance)
        for mutated in _mutations(instance):
            verdicts = (_native(schema).is_valid(mutated), _validator(schema).is_valid(mutated))
            assert verdicts[0] == verdicts[1], f"the validators differ on {mutated!r}: {verdicts}"


def validate_results_natively() -> None:
    """Make the SDK client's check of each tool result against its ``outputSchema`` go through
    :func:`validate` (the same verdict, jsonschema's words for a refusal)."""
    if getattr(ClientSession.validate_tool_result, "native", False):
        return
    original = ClientSession.validate_tool_result

    async def validate_tool_result(self: ClientSession, name: str, result: CallToolResult) -> None:
        # Where the SDK keeps the schemas of the tools it listed; a loud failure if it moves them.
        schema = self._tool_output_schemas.get(name)
        if schema is None or result.structured_content is None:
            await original(self, name, result)
            return
        try:
            validate(schema, result.structured_content)
        except jsonschema.ValidationError as error:  # the SDK's own wording of a refusal
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {error}") from error

    validate_tool_result.native = True  # type: ignore[attr-defined]
    ClientSession.validate_tool_result = validate_tool_result  # type: ignore[method-assign]


def check_envelope(
    result: CallToolResult, output_schema: dict[str, Any], *, schema_checked: bool = False
) -> dict[str, Any]:
    """Assert the envelope contract on one ``CallToolResult`` and return the envelope.

    ``schema_checked``: the SDK's client already validated this result against ``output_schema`` (it
    does for every result that is not an error, of a tool it listed), so it is not validated twice.
    """
    envelope = result.structured_content
    assert isinstance(envelope, dict), "structuredContent must be the envelope object"
    assert set(envelope) == ROOT_KEYS, f"root keys must be exactly {sorted(ROOT_KEYS)}: {sorted(envelope)}"
    if not (schema_checked and not result.is_error):
        validate(output_schema, envelope)
    block, *media = result.content
    assert isinstance(block, TextContent)
    # Only a success may carry media (an image attachment), and only after the envelope's text block.
    assert all(isinstance(item, ImageContent) for item in media)
    assert not media or envelope["success"]
    assert json.loads(block.text) == envelope, "text block must equal structuredContent"
    assert result.is_error is (not envelope["success"])
    assert envelope["meta"]["version"] == "envelope-v1"
    if envelope["success"]:
        assert envelope["error"] is None
    else:
        assert envelope["error"]["code"]
        assert envelope["data"].get("status", "failed") == "failed"
    data = envelope["data"]
    if envelope["success"] and "status" in data:
        assert data["status"] in {"ok", "partial"}
        assert (data["status"] == "partial") == bool(data.get("issues"))
    SEEN.append(envelope)
    return envelope


def _proposed_tools(value: Any) -> list[str]:
    """The tools of every proposed call (an object with ``instruction``, ``tool`` and ``arguments``) in
    ``value``."""
    if isinstance(value, list):
        return [name for item in value for name in _proposed_tools(item)]
    if not isinstance(value, dict):
        return []
    own = [value["tool"]] if {"instruction", "tool", "arguments"} <= value.keys() else []
    return own + [name for item in value.values() for name in _proposed_tools(item)]


def _declared_schema(tool: str) -> dict[str, Any]:
    """The outputSchema a tool would publish, for a tool the server does not list (writes off)."""
    from mail_imap_mcp.envelope.schemas import envelope_output_schema
    from mail_imap_mcp.tools.registry import TOOLS

    (spec,) = [spec for spec in TOOLS if spec.name == tool]
    return envelope_output_schema(spec.data_model, *spec.other_data_models)


class EnvelopeClient:
    """Calls tools through a real MCP ``Client`` session and checks each envelope."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._schemas: dict[str, dict[str, Any]] = {}

    async def schemas(self) -> dict[str, dict[str, Any]]:
        if not self._schemas:
            listed = await self.client.list_tools()
            self._schemas = {tool.name: tool.output_schema or {} for tool in listed.tools}
        return self._schemas

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return (await self.call_with_media(tool, arguments))[0]

    async def call_with_media(
        self, tool: str, arguments: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], list[ImageContent]]:
        """The checked envelope and the image blocks that followed it."""
        schemas = await self.schemas()
        result = await self.client.call_tool(tool, arguments or {})
        listed = schemas.get(tool)
        envelope = check_envelope(result, listed or _declared_schema(tool), schema_checked=bool(listed))
        await self._check_next_calls(envelope)
        return envelope, [block for block in result.content if isinstance(block, ImageContent)]

    async def _check_next_calls(self, envelope: dict[str, Any]) -> None:
        """Every call an answer proposes (a ``next_action``, an ``undo``) names a tool this client was
        listed: an agent that may call only listed tools can follow it. The list is read again once
        where a name is missing (a listing may change within a session)."""
        named = set(_proposed_tools(envelope))
        if named - self._schemas.keys():
            self._schemas = {}
            missing = named - (await self.schemas()).keys()
            assert not missing, f"the answer proposes {sorted(missing)}, which are not listed: {envelope}"

    async def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call and assert success; return ``data``."""
        envelope = await self.call(tool, arguments)
        assert envelope["success"], envelope
        data: dict[str, Any] = envelope["data"]
        return data

    async def fail(self, tool: str, arguments: dict[str, Any] | None, code: str) -> dict[str, Any]:
        """Call and assert failure with ``code``; return the whole envelope."""
        envelope = await self.call(tool, arguments)
        assert not envelope["success"], envelope
        assert envelope["error"]["code"] == code, envelope["error"]
        return envelope


def uid_of(message: dict[str, Any]) -> int:
    """The UID of a summary or message, compact or full (a compact one carries it in its message_id)."""
    return int(message["message_id"].rsplit(":", 1)[1])
