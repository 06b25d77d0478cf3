"""The envelope contract in isolation: schemas, validation messages, failure mapping."""

from __future__ import annotations

import gc
import re
import weakref
from typing import Any

import jsonschema
import pytest
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import ERROR_REGISTRY, ErrorCode, Issue, MultiItemData, Payload, ToolFailure
from mail_imap_mcp.envelope.mcp import EnvelopeTool, ToolResult, _to_result, envelope_tool
from mail_imap_mcp.envelope.schemas import flat_input_schema

pytestmark = pytest.mark.anyio


class EchoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    word: str = Field(min_length=1, max_length=5)
    times: int = Field(default=1, ge=1, le=3)
    mode: str | None = Field(default=None, pattern="^(loud|quiet)$")


class EchoData(Payload):
    text: str


class ItemsData(MultiItemData):
    items: list[str]


def echo(args: EchoInput, user: str, as_given: str) -> ToolResult[EchoData]:
    if args.word == "boom":
        raise RuntimeError("secret internal detail /etc/passwd")
    if args.word == "nope":
        raise ToolFailure(ErrorCode.NOT_FOUND, "No such word.", details={"parameter": "word"})
    return ToolResult(summary="echoed", data=EchoData(text=args.word * args.times), warnings=["note"])


TOOL = envelope_tool(
    name="echo", title="Echo", description="d", input_model=EchoInput, data_model=EchoData, handler=echo
)


async def invoke(tool: EnvelopeTool, arguments: dict[str, Any]) -> CallToolResult:
    """``tool``'s answer to raw ``arguments`` as the MCP result a client gets."""
    return _to_result(*await tool.answer(arguments))


async def run(arguments: dict[str, Any]) -> dict[str, Any]:
    result = await invoke(TOOL, arguments)
    envelope = result.structured_content
    assert isinstance(envelope, dict)
    jsonschema.validate(envelope, TOOL.output_schema_doc)
    assert result.is_error is (not envelope["success"])
    return envelope


def test_input_schema_is_flat_without_unions() -> None:
    schema = flat_input_schema(EchoInput)
    assert "anyOf" not in str(schema)
    assert schema["properties"]["mode"] == {"pattern": "^(loud|quiet)$", "type": "string"}
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["word"]


def test_output_schema_has_an_object_root_and_requires_every_envelope_key() -> None:
    schema = TOOL.output_schema_doc
    assert schema["type"] == "object"
    for branch in schema["oneOf"]:
        assert set(branch["required"]) == {"success", "summary", "data", "error", "meta"}


class Node(BaseModel):
    """A definition that refers to itself: it cannot be put in place of its reference."""

    name: str
    children: list[Node] = []


class Leaf(BaseModel):
    """A leaf."""

    size: int


class TreeData(Payload):
    root: Node
    leaf: Leaf = Field(description="The field's own words.")
    issue_like: EchoData
    issue_again: EchoData


def test_output_schema_inlines_definitions_used_once_and_keeps_shared_and_recursive_ones() -> None:
    # Every client validates each result against it: each $ref followed cost a page of 20 summaries
    # a lookup and a level of descent per message, about a fifth of jsonschema's time.
    from mail_imap_mcp.envelope.schemas import envelope_output_schema

    schema = envelope_output_schema(TreeData)
    success = schema["oneOf"][0]
    data = success["properties"]["data"]
    assert data["properties"]["issue_like"] == {"$ref": "#/$defs/EchoData"}  # used twice: shared
    leaf = data["properties"]["leaf"]
    assert leaf["properties"] == {"size": {"title": "Size", "type": "integer"}}
    assert leaf["description"] == "The field's own words."  # the reference's words win over the model's
    assert data["properties"]["root"] == {"$ref": "#/$defs/Node"}  # refers to itself: shared
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert set(schema["$defs"]) == {"EchoData", "Meta", "Node"}
    assert "$defs" not in success and "$defs" not in data
    jsonschema.validators.validator_for(schema).check_schema(schema)
    tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    envelope = {
        "success": True,
        "summary": "s",
        "data": {
            "root": tree,
            "leaf": {"size": 1},
            "issue_like": {"text": "x"},
            "issue_again": {"text": "y"},
        },
        "error": None,
        "meta": {
            "version": "envelope-v1",
            "request_id": "r",
            "now_utc": "n",
            "duration_ms": 0,
            "warnings": [],
        },
    }
    jsonschema.validate(envelope, schema)
    envelope["data"]["root"]["children"][0]["children"][0]["name"] = 3
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(envelope, schema)


async def test_success_envelope_carries_meta_and_warnings() -> None:
    envelope = await run({"word": "hi", "times": 2})
    assert envelope["success"] is True
    assert envelope["data"] == {"text": "hihi"}
    assert envelope["error"] is None
    meta = envelope["meta"]
    assert meta["version"] == "envelope-v1"
    assert re.fullmatch(r"req_[0-9a-f]{12}", meta["request_id"])
    assert meta["now_utc"].endswith("Z")
    assert len(meta["now_utc"]) == len("2026-11-21T10:30:45.123Z")
    assert meta["warnings"] == ["note"]


async def test_request_ids_are_unique_per_call() -> None:
    ids = {(await run({"word": "a"}))["meta"]["request_id"] for _ in range(20)}
    assert len(ids) == 20


@pytest.mark.parametrize(
    ("arguments", "parameter", "fragment"),
    [
        ({}, "word", "Field required"),
        ({"word": 5}, "word", "string"),
        ({"word": "toolongword"}, "word", "11 characters, over the limit of 5"),
        ({"word": "a", "times": 9}, "times", "<= 3"),
        ({"word": "a", "mode": "shout"}, "mode", "matching ^(loud|quiet)$"),
        ({"word": "a", "colour": "red"}, "colour", "one of mode, times, word"),
    ],
)
async def test_bad_arguments_become_invalid_input_naming_the_parameter(
    arguments: dict[str, Any], parameter: str, fragment: str
) -> None:
    envelope = await run(arguments)
    assert envelope["success"] is False
    error = envelope["error"]
    assert error["code"] == "invalid_input"
    assert error["details"]["parameter"] == parameter
    assert fragment in error["message"]
    assert error["retryable"] is False


async def test_tool_failure_keeps_code_details_and_registry_retryability() -> None:
    envelope = await run({"word": "nope"})
    assert envelope["error"] == {
        "code": "not_found",
        "message": "No such word.",
        "retryable": ERROR_REGISTRY[ErrorCode.NOT_FOUND].retryable,
        "details": {"parameter": "word"},
    }
    assert "No such word." in envelope["summary"]


async def test_unexpected_exception_is_internal_without_leaking_its_text() -> None:
    envelope = await run({"word": "boom"})
    assert envelope["error"]["code"] == "internal"
    assert envelope["error"]["details"]["request_id"] == envelope["meta"]["request_id"]
    assert "passwd" not in str(envelope)
    assert "Traceback" not in str(envelope)


async def test_multi_item_failure_data_says_failed() -> None:
    def failing(args: EchoInput, user: str, as_given: str) -> ToolResult[ItemsData]:
        raise ToolFailure(ErrorCode.UNAVAILABLE, "down")

    tool = envelope_tool(
        name="items",
        title="Items",
        description="d",
        input_model=EchoInput,
        data_model=ItemsData,
        handler=failing,
    )
    envelope = (await invoke(tool, {"word": "a"})).structured_content
    jsonschema.validate(envelope, tool.output_schema_doc)
    assert envelope["data"]["status"] == "failed"
    assert envelope["error"]["retryable"] is True


def test_every_error_code_has_a_registry_entry() -> None:
    assert set(ERROR_REGISTRY) == set(ErrorCode)


async def test_the_sdk_client_rejects_a_success_that_breaks_the_output_schema() -> None:
    """EnvelopeClient (tests/support) leaves the schema check of a success to the SDK's client, which
    validates every result that is not an error against the listed ``outputSchema``: pinned here."""
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    # Every summary of this tool is longer than 3 characters: no result of it is valid any more.
    strict = TOOL.output_schema_doc | {"properties": {"summary": {"type": "string", "maxLength": 3}}}
    server = MCPServer(name="t", tools=[TOOL.model_copy(update={"output_schema_doc": strict})])
    async with Client(server) as client:
        failure = await client.call_tool("echo", {"word": "nope"})  # an error: the client skips it
        assert failure.is_error
        with pytest.raises(RuntimeError, match="Invalid structured content"):
            await client.call_tool("echo", {"word": "hi"})


def test_an_issue_about_a_message_names_it_as_its_item_beside_its_uid() -> None:
    issue = Issue(
        code="fetch_failed", stage="fetch", message="m", retryable=True, uid=7, message_id="imap:a:INBOX:1:7"
    )
    assert (issue.item, issue.uid) == ("imap:a:INBOX:1:7", 7)
    assert issue.model_dump(mode="json")["item"] == "imap:a:INBOX:1:7"


def test_an_issue_keeps_the_item_it_is_given_and_has_none_without_one() -> None:
    given = Issue(
        code="c", stage="s", message="m", retryable=False, message_id="imap:a:INBOX:1:7", item="jmap:M1"
    )
    assert given.item == "jmap:M1"
    assert Issue(code="c", stage="s", message="m", retryable=False).item is None


async def test_every_success_is_an_envelope_of_one_model_built_once() -> None:
    """pydantic keeps a parametrised generic model only weakly: a success built as ``SuccessEnvelope[Any]``
    in each call built that model again (its fields, schema and validator, on the event loop, before the
    answer is written) whenever the collector had freed the last one."""
    first, _ = await TOOL.answer({"word": "hi"})
    model = weakref.ref(type(first))
    del first
    gc.collect()
    second, _ = await TOOL.answer({"word": "hi"})
    assert model() is type(second)
