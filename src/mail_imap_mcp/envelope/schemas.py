"""The schemas an envelope tool publishes: a flat ``inputSchema`` from its pydantic input model, an
``outputSchema`` both its success and failure envelopes validate against (generated ahead into
``output_schemas.json`` with the docs, so a server starts without building them), and the
``invalid_input`` failure that names each argument pydantic refused. Knows nothing about mail.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from mail_imap_mcp.envelope.model import ErrorCode, FailureEnvelope, SuccessEnvelope, ToolFailure


def flat_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of ``model`` with no unions: ``X | None`` becomes ``X`` (omit = null).

    Some MCP clients reject ``anyOf``/``oneOf`` in an ``inputSchema``; our inputs are flat
    optional scalars, so the nullable branch carries no information a client needs.
    """
    schema: dict[str, Any] = json.loads(_flat_input_schema_json(model))
    return schema


#: Rules the server checks itself (a refused argument's error names the argument and the rule, from the
#: full schema): left out of the schema a model reads in tools/list, where each byte is paid for in every
#: conversation. Types, enums, defaults and numeric bounds stay.
_UNPUBLISHED_RULES = ("pattern", "minLength", "maxLength", "minItems", "maxItems")
#: Numeric bounds are published where they are small enough to steer a call (a page of at most 100);
#: a larger one (a window of at most 2,000,000 characters) is left to the error that names it.
_PUBLISHED_BOUND = 1000


def published_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The ``inputSchema`` of ``model`` as tools/list publishes it: :func:`flat_input_schema` without the
    rules the server enforces with an error that names them (:data:`_UNPUBLISHED_RULES`)."""
    schema: dict[str, Any] = json.loads(_published_input_schema_json(model))
    return schema


@functools.cache
def _published_input_schema_json(model: type[BaseModel]) -> str:
    schema = _flat_input_schema(model)
    for prop in schema.get("properties", {}).values():
        for node in (prop, prop.get("items", {})):
            for rule in _UNPUBLISHED_RULES:
                node.pop(rule, None)
            if node is not prop and "description" in prop:  # an item's words repeat its list's
                node.pop("description", None)
            if node.get("maximum", 0) > _PUBLISHED_BOUND:
                node.pop("maximum")
                node.pop("minimum", None)
            elif "maximum" not in node and node.get("minimum", 0) <= 1:
                node.pop("minimum", None)
    return json.dumps(schema, ensure_ascii=False)


# Schemas are a pure function of the models and cost pydantic about 20 ms per tool: every server a
# process builds (a test builds hundreds, an HTTP server one per session) reuses the first one's. Kept
# as JSON text, so that each caller gets its own copy: parsing it is several times cheaper than a
# deep copy of the dict.
@functools.cache
def _flat_input_schema_json(model: type[BaseModel]) -> str:
    return json.dumps(_flat_input_schema(model))


def _flat_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for name, prop in schema.get("properties", {}).items():
        branches = prop.pop("anyOf", None)
        if branches is not None:
            concrete = [b for b in branches if b.get("type") != "null"]
            if len(concrete) != 1:
                raise TypeError(f"input field {name!r} must be a single type, got {branches}")
            # The field's own description wins over its type's (as a reference's own words do).
            prop.update({key: value for key, value in concrete[0].items() if key not in prop})
            if prop.get("default", ...) is None:
                del prop["default"]
        prop.pop("title", None)
    if "$defs" in schema:
        raise TypeError(f"input model {model.__name__} must be flat (no nested models)")
    return schema


def envelope_output_schema(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> dict[str, Any]:
    """``outputSchema``: an object whose ``success`` selects the success or the failure shape.

    ``other_shapes``: further models ``data`` may have on success (e.g. a compact and a full shape
    chosen by an argument); the schema accepts any of them.
    """
    schema: dict[str, Any] = json.loads(_envelope_output_schema_json(data_model, *other_shapes))
    return schema


#: The outputSchemas generated ahead by ``python -m mail_imap_mcp.reference``, by data model names: pydantic
#: takes about 0.1 s to generate them, a tenth of the server's startup. tests/pure/test_protocol.py fails
#: when the file no longer matches the models; a model without an entry is generated as before.
OUTPUT_SCHEMAS_FILE = Path(__file__).with_name("output_schemas.json")


def output_schema_key(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> str:
    """The name of a tool's outputSchema in :data:`OUTPUT_SCHEMAS_FILE`."""
    return " ".join(f"{model.__module__}.{model.__qualname__}" for model in (data_model, *other_shapes))


@functools.cache
def _generated_ahead() -> dict[str, Any]:
    try:
        schemas: dict[str, Any] = json.loads(OUTPUT_SCHEMAS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return schemas


@functools.cache
def _envelope_output_schema_json(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> str:
    ahead = _generated_ahead().get(output_schema_key(data_model, *other_shapes))
    return json.dumps(ahead if ahead is not None else generate_output_schema(data_model, *other_shapes))


def generate_output_schema(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> dict[str, Any]:
    """The outputSchema of :func:`envelope_output_schema`, generated from the models by pydantic."""
    data: Any = Union[(data_model, *other_shapes)] if other_shapes else data_model
    union = Annotated[
        Union[SuccessEnvelope[data], FailureEnvelope],  # noqa: UP007
        Field(discriminator="success"),
    ]
    schema = TypeAdapter(union).json_schema(mode="serialization")
    schema.pop("discriminator", None)
    if other_shapes:
        _order_data_shapes(schema, [*other_shapes, data_model])
    return {"type": "object", **_inline_single_use_definitions(schema)}


def _order_data_shapes(schema: dict[str, Any], shapes: list[type[BaseModel]]) -> None:
    """Put ``data``'s shapes in the given order (pydantic may order a union's members its own way)."""
    rank = {f"#/$defs/{shape.__name__}": index for index, shape in enumerate(shapes)}
    for name, definition in schema.get("$defs", {}).items():
        branches = definition.get("properties", {}).get("data", {}).get("anyOf")
        if name.startswith("SuccessEnvelope") and branches:
            branches.sort(key=lambda branch: rank.get(branch.get("$ref", ""), len(rank)))


#: Keywords that only annotate: a reference's siblings of these kinds can sit beside the definition
#: put in its place (the reference's own win: they describe the field, the definition its type).
_ANNOTATIONS = frozenset({"description", "title", "default", "examples"})
_DEFINITION = "#/$defs/"


def _inline_single_use_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``$defs`` entry referenced once put in place of its reference.

    Clients validate every result against the ``outputSchema`` (the Python SDK with jsonschema, for
    each call), and a validator pays for each ``$ref`` it follows: a registry lookup and one more level
    of descent, per message of a page. Inlining the definitions used once (the data payload, its
    summary, the envelopes) made a page's validation about a fifth cheaper, and the schema no
    larger. Definitions used more than once, and any that refers to itself, stay shared.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    uses: dict[str, int] = {}

    def count(node: Any) -> None:
        if isinstance(node, dict):
            if (name := _definition_name(node)) is not None:
                uses[name] = uses.get(name, 0) + 1
            for value in node.values():
                count(value)
        elif isinstance(node, list):
            for value in node:
                count(value)

    count(schema)
    kept: set[str] = set()

    def expand(node: Any, inlining: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [expand(value, inlining) for value in node]
        if not isinstance(node, dict):
            return node
        if (name := _definition_name(node)) is not None:
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            if uses.get(name) == 1 and name not in inlining and set(siblings) <= _ANNOTATIONS:
                return {**expand(definitions[name], (*inlining, name)), **siblings}
            kept.add(name)
        return {key: expand(value, inlining) for key, value in node.items() if key != "$defs"}

    inlined: dict[str, Any] = expand(schema, ())
    shared: dict[str, Any] = {}
    while pending := kept - shared.keys():
        for name in sorted(pending):
            shared[name] = expand(definitions[name], (name,))
    if shared:
        inlined["$defs"] = {name: shared[name] for name in definitions if name in shared}
    return inlined


def _definition_name(node: dict[str, Any]) -> str | None:
    """The ``$defs`` entry a schema node refers to, if it is a reference to one."""
    ref = node.get("$ref")
    return ref[len(_DEFINITION) :] if isinstance(ref, str) and ref.startswith(_DEFINITION) else None


_BOUNDS = (
    ("minimum", ">="),
    ("maximum", "<="),
    ("minLength", "length >="),
    ("maxLength", "length <="),
    ("pattern", "matching"),
    ("format", "format"),
)


def schema_constraints(prop: dict[str, Any]) -> list[str]:
    """The bounds a JSON-schema property declares, in words: ``['>= 1', '<= 100']``."""
    return [f"{word} {prop[key]}" for key, word in _BOUNDS if key in prop]


def _allowed(prop: dict[str, Any]) -> str:
    """Describe what a schema property accepts, for an actionable validation message."""
    if "enum" in prop:
        return "one of " + ", ".join(json.dumps(v) for v in prop["enum"])
    bounds = schema_constraints(prop)
    return str(prop.get("type", "value")) + (" " + ", ".join(bounds) if bounds else "")


#: Pydantic's errors of a text's length, and the bound each passes.
_LENGTHS = {"string_too_long": "max_length", "string_too_short": "min_length"}


def _length_problem(parameter: str, err: Any, prop: dict[str, Any]) -> dict[str, Any]:
    """A text too long or too short, in words: its length and the limit (not the pattern it must also
    match, which says nothing of the length), e.g. "734 characters, over the limit of 500"."""
    given, limit = len(err["input"]), err["ctx"][_LENGTHS[err["type"]]]
    side = "over the limit of" if err["type"] == "string_too_long" else "under the least of"
    each = prop.get("type") == "array" and isinstance(prop.get("items"), dict)
    bounds = prop["items"] if each else prop  # an item of a list: the items' bounds
    low, high = bounds.get("minLength", 0), bounds.get("maxLength")
    allowed = ("each a " if each else "") + (
        f"text of {low} to {high} characters" if high is not None else f"text of {low} or more characters"
    )
    return {"parameter": parameter, "problem": f"{given:,} characters, {side} {limit:,}", "allowed": allowed}


def validation_failure(exc: ValidationError, schema: dict[str, Any]) -> ToolFailure:
    """Turn pydantic's errors into one ``invalid_input`` failure that names each parameter."""
    properties: dict[str, Any] = schema.get("properties", {})
    problems: list[dict[str, Any]] = []
    for err in exc.errors(include_url=False):
        loc = [str(part) for part in err["loc"]]
        parameter = loc[0] if loc else ""
        if err["type"] in _LENGTHS and parameter in properties:
            problems.append(_length_problem(parameter, err, properties[parameter]))
        elif err["type"] == "extra_forbidden":
            problems.append(
                {
                    "parameter": parameter,
                    "problem": "unknown parameter",
                    "allowed": "one of " + ", ".join(sorted(properties)),
                }
            )
        elif parameter in properties:
            problems.append(
                {"parameter": parameter, "problem": err["msg"], "allowed": _allowed(properties[parameter])}
            )
        else:
            # Model-level validators report cross-field problems; they name the fields themselves.
            problems.append({"parameter": err.get("ctx", {}).get("parameter", ""), "problem": err["msg"]})
    first = problems[0]
    parameter = first["parameter"]
    subject = f"'{parameter}'" if parameter else "arguments"
    message = f"Invalid {subject}: {first['problem']}"
    if "allowed" in first:
        message += f"; allowed: {first['allowed']}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem(s), see error.details.problems)"
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        message + ". Fix the argument and call again.",
        details={"parameter": parameter, "problems": problems},
    )
